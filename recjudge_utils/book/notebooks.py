"""The notebooks of a run and the parameters each receives: what the book runner and its planner share.

Holds the selection (:func:`select_notebooks`, :func:`selection`, :func:`check_selection`), the notebooks'
``parameters`` cells read with ``ast`` (:func:`parameter_cell`, :func:`declared_parameters`), the checks of ``-p``
names and values (:func:`check_parameter_names`, :func:`resolve_dataset_parameters`), the parameters one notebook
is given (:func:`notebook_parameters`), whether it asks the run's judge (:func:`asks_judge`), the run folder
(:func:`run_dir`), the kernels' environment (:func:`environment`) and :class:`NotebookFailed`.

Parameters reach each notebook that declares them: the judge profile as the one ``judge`` parameter, the scale's
values (:mod:`recjudge_utils.book.scales`), then every ``-p NAME VALUE`` (VALUE read as YAML). A name no notebook
declares is an error naming the closest declared ones; the API key is never a parameter (the judge client reads it
from the environment), nor are the judge and the run folder (the run's profile and name, recorded in its manifest).
Bad input raises ValueError (the command line turns it into exit code 2).
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from recjudge_utils._extras import optional_imports
from recjudge_utils.book.scales import scale_parameters
from recjudge_utils.judge.profile import JudgeProfile
from recjudge_utils.paths import check_run_name, project_root, runs_dir
from recjudge_utils.registry import suggestion

with optional_imports("book"):
    import nbformat

__all__ = [
    "JUDGE_PARAMETER",
    "READS_ALL_RESULTS",
    "DeclaredParameter",
    "NotebookFailed",
    "asks_judge",
    "check_parameter_names",
    "check_selection",
    "declared_parameters",
    "environment",
    "notebook_parameters",
    "parameter_cell",
    "parse_parameter_value",
    "read_earlier",
    "resolve_dataset_parameters",
    "run_dir",
    "select_notebooks",
    "selection",
    "unknown_parameters_message",
]


_SECRET_PARAMETERS = {"api_key", "openai_api_key"}

_SECRET_PARAMETER_MESSAGE = "the API key is read from the environment (the profile's api_key_env), never a parameter"

#: parameters the runner sets itself: a ``-p`` for them would make the manifest lie about the run
_RUNNER_PARAMETERS = {
    "judge": "-p judge: the judge is the run's profile, recorded in its manifest: use --judge PROFILE "
    "(or --model/--base-url)",
    "run_name": "-p run_name: the runner names the run folder: use --run NAME",
}

#: the parameter through which a notebook receives the run's judge profile
JUDGE_PARAMETER = "judge"

#: chapters that take the run's judge to name it and ask it nothing: chapter 8 validates the answers another chapter
#: recorded. They have no plan, no bill and no use for the judge's server.
_ASKS_NO_JUDGE = frozenset({"08_validate_your_judge.ipynb"})


def asks_judge(notebook: Path, declared: set[str]) -> bool:
    """The notebook sends requests to the run's judge: it declares ``judge``, and is not in :data:`_ASKS_NO_JUDGE`."""
    return JUDGE_PARAMETER in declared and notebook.name not in _ASKS_NO_JUDGE


class NotebookFailed(RuntimeError):
    """A notebook raised during execution; the message names the notebook and its failing cell."""


def parse_parameter_value(text: str) -> Any:
    """Read a ``-p`` value the way papermill's CLI does: as YAML, falling back to the raw string."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


@dataclass(frozen=True)
class DeclaredParameter:
    """One assignment of a notebook's ``parameters`` cell: its name, its value as written, and that value when it
    is a literal (``ast.literal_eval``)."""

    name: str
    source: str
    value: Any = None
    literal: bool = False
    comment: str = ""


def parameter_cell(notebook: Path) -> list[DeclaredParameter]:
    """The assignments of the cell tagged ``parameters``, in order, with their defaults and comments.

    Read with ``ast`` rather than papermill's line-by-line inspection, which skips an assignment whose
    comment contains quotes (``judge = "embedded"  # "embedded" = the default``).
    """
    nb = nbformat.read(notebook, as_version=4)
    found: list[DeclaredParameter] = []
    for cell in nb.cells:
        if cell.cell_type != "code" or "parameters" not in cell.get("metadata", {}).get("tags", []):
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError as exc:
            raise ValueError(f"{notebook.name}: the parameters cell is not valid Python ({exc})") from exc
        lines = cell.source.splitlines()
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            value_node = getattr(node, "value", None)
            source, value, literal = "", None, False
            if value_node is not None:
                source = ast.get_source_segment(cell.source, value_node) or ""
                with contextlib.suppress(ValueError, TypeError, SyntaxError):  # an expression: shown as written
                    value, literal = ast.literal_eval(value_node), True
            tail = lines[node.end_lineno - 1][node.end_col_offset :].strip() if node.end_lineno else ""
            comment = tail.removeprefix("#").strip() if tail.startswith("#") else ""
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            found += [DeclaredParameter(name, source, value, literal, comment) for name in names]
    return found


def declared_parameters(notebook: Path) -> set[str]:
    """Names assigned in the cell tagged ``parameters``."""
    return {p.name for p in parameter_cell(notebook)}


@contextlib.contextmanager
def environment(values: Mapping[str, str]) -> Iterator[None]:
    """Set environment variables for the notebooks' kernels (they inherit this process's environment)."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_dir(name: str) -> Path:
    """``runs/<name>/``; a name is a plain folder name (ValueError otherwise)."""
    return runs_dir() / check_run_name(name)


#: the chapter that reads every other chapter's ``results.json`` of every run: executed after all the others
READS_ALL_RESULTS = "06_judges_compared.ipynb"


def select_notebooks(notebook_dir: Path, only: Sequence[str] | None) -> list[Path]:
    """The notebooks of ``notebook_dir`` (sorted, :data:`READS_ALL_RESULTS` last), or those whose name starts with
    one of ``only``."""
    notebooks = sorted(notebook_dir.glob("*.ipynb"), key=lambda nb: (nb.name == READS_ALL_RESULTS, nb.name))
    if only:
        notebooks = [nb for nb in notebooks if any(nb.name.startswith(prefix) for prefix in only)]
        if not notebooks:
            raise ValueError(f"no notebook in {notebook_dir} starts with any of {list(only)}")
    return notebooks


def selection(
    root: Path | None, only: Sequence[str] | None, parameters: Mapping[str, Any] | None
) -> tuple[Path, dict[Path, set[str]], dict[str, Any]]:
    """The checkout, the selected notebooks with the parameters each declares, and the checked ``-p`` values."""
    root = root or project_root()
    if root is None:
        raise ValueError("recjudge_utils.book needs a checkout of the recjudge repository (notebooks/ and book/)")
    notebooks = select_notebooks(root / "notebooks", only)
    extra = resolve_dataset_parameters(parameters or {})
    check_parameter_names(_scoped(name)[1] for name in extra)
    declared = {nb: declared_parameters(nb) for nb in notebooks}
    known: set[str] = set().union(*declared.values()) - set(_RUNNER_PARAMETERS)
    unknown = []
    for name in extra:
        prefix, bare = _scoped(name)
        owners = [nb for nb in notebooks if nb.name.startswith(prefix)]
        if prefix and not owners:
            raise ValueError(f"-p {name}: no selected notebook starts with {prefix!r}")
        if not any(bare in declared[nb] for nb in owners) or bare in _RUNNER_PARAMETERS:
            unknown.append(name)
    if unknown:
        raise ValueError(unknown_parameters_message(sorted(unknown), known, [nb.name for nb in notebooks]))
    return root, declared, extra


def resolve_dataset_parameters(parameters: Mapping[str, Any], *, check: bool = False) -> dict[str, Any]:
    """``parameters`` with every ``dataset`` value (``dataset``, ``02:dataset``, ...) that is not a dataset name made
    the path of its folder relative to the repository when it lies inside it (``data/my-books``: no machine's path in
    an executed notebook; :func:`~recjudge_utils.paths.dataset_folder_path` finds it from ``notebooks/``), else its
    absolute path: the notebooks execute in ``notebooks/``, not where the command was typed. A value
    that is neither a name nor a folder is a ValueError naming both. ``check``: each folder dataset is also read and
    checked here, once, so that a bad one is refused (a :class:`~recjudge_utils.data.DataFormatError` naming the file,
    line and problem) before any notebook runs, trains or judges."""
    from recjudge_utils.data import DATASETS, is_dataset_name
    from recjudge_utils.data.folder import load_folder_dataset

    out = dict(parameters)
    for name, value in parameters.items():
        if _scoped(name)[1] != "dataset" or not isinstance(value, str) or is_dataset_name(value):
            continue
        folder = Path(value).expanduser()
        if not folder.is_dir():
            raise ValueError(
                f"-p {name} {value}: neither a dataset name ({', '.join(DATASETS)}){suggestion(value, DATASETS)} "
                f"nor a folder ({folder.resolve()} {'is a file' if folder.exists() else 'does not exist'})"
            )
        resolved, root = folder.resolve(), project_root()
        out[name] = str(resolved.relative_to(root) if root and resolved.is_relative_to(root) else resolved)
        if check:
            load_folder_dataset(folder, verbose=False)
    return out


def _scoped(name: str) -> tuple[str, str]:
    """``"07:n_users"`` -> ``("07", "n_users")``: a ``-p`` for the notebooks whose file name starts with ``07``
    only; a plain name goes to every notebook that declares it (prefix ``""``)."""
    prefix, _, bare = name.rpartition(":")
    return prefix, bare


def check_selection(
    only: Sequence[str] | None = None, parameters: Mapping[str, Any] | None = None, root: Path | None = None
) -> None:
    """Raise ValueError when ``only`` selects no notebook or a ``-p`` name is refused or declared by none, before
    a profile is checked or a notebook runs."""
    selection(root, only, parameters)


def check_parameter_names(names: Iterable[str]) -> None:
    """Refuse the API key and the parameters the runner sets itself (``judge``, ``run_name``) as ``-p`` names."""
    names = list(names)
    if _SECRET_PARAMETERS & {name.lower() for name in names}:
        raise ValueError(_SECRET_PARAMETER_MESSAGE)
    for name in names:
        if name in _RUNNER_PARAMETERS:
            raise ValueError(_RUNNER_PARAMETERS[name])


def unknown_parameters_message(unknown: Sequence[str], known: Iterable[str], notebooks: Sequence[str]) -> str:
    """Which ``-p`` names no selected notebook declares, each with the closest declared names."""
    known = sorted(known)
    parts = [f"{name!r}{suggestion(name, known, n=3)}" for name in unknown]
    plural = len(parts) > 1
    return (
        f"parameter{'s' if plural else ''} {', '.join(parts)} {'are' if plural else 'is'} declared by none of "
        f"{', '.join(notebooks)}; "
        "python -m recjudge_utils.book list shows every notebook's parameters"
    )


def notebook_parameters(
    notebook: Path, declared: set[str], profile: JudgeProfile, scale: str, extra: Mapping[str, Any]
) -> dict[str, Any]:
    """The judge profile, then the scale's values, then ``-p`` (plain names, then the names scoped to this notebook,
    ``07:n_users``): each only if the notebook declares it."""
    plain, scoped = {}, {}
    for name, value in extra.items():
        prefix, bare = _scoped(name)
        if not prefix:
            plain[bare] = value
        elif notebook.name.startswith(prefix):
            scoped[bare] = value
    wanted = {JUDGE_PARAMETER: profile.to_dict(), **scale_parameters(scale, notebook.name), **plain, **scoped}
    return {name: value for name, value in wanted.items() if name in declared}


def read_earlier(path: Path) -> dict[str, Any]:
    """What an earlier run or plan wrote to ``path`` (empty when there is none or it cannot be read)."""
    try:
        return dict(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else {}
    except (OSError, ValueError):
        return {}
