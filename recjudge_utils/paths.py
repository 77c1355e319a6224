"""Where recjudge keeps data, caches and run records.

Inside a checkout of the repository everything lives under the repository (``data/``, ``runs/``,
both git-ignored); an installed copy used elsewhere falls back to ``~/.cache/recjudge``.
Environment variables override both: ``RECJUDGE_DATA_DIR`` and ``RECJUDGE_RUNS_DIR``.

Inside ``runs/``: ``cache.sqlite`` (every judge answer, shared by all runs), ``artifacts/`` (trained recommenders'
outputs, shared by all runs), and one folder per named run (``runs/<run>/``: executed notebooks, manifest, and
one sub-folder per notebook with its judgment log and ``results.json``). The book runner sets
``RECJUDGE_RUN_DIR`` for the notebooks it executes; a notebook executed any other way (papermill, JupyterLab,
nbclient) writes to a run of its own, ``runs/<run_name>/`` or ``runs/adhoc-<judge>-<UTC time>/``
(:func:`ensure_run_dir`), never into the book's ``runs/default/``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from recjudge_utils.manifest import MANIFEST_FILE, NotebookRun, RunManifest, git_commit


def project_root() -> Path | None:
    """The repository root when the package is used from a checkout, else None."""
    candidate = Path(__file__).resolve().parent.parent
    if (candidate / "pyproject.toml").is_file() and (candidate / "recjudge_utils").is_dir():
        return candidate
    return None


def dataset_folder_path(value: os.PathLike[str] | str) -> Path:
    """The folder a ``dataset`` parameter names: as given when absolute or present from here, else under the
    repository (a notebook executes in ``notebooks/``, the runner where the command was typed: ``data/my-books``
    names one folder for both, and no machine's absolute path is written into the executed notebook)."""
    given = Path(value).expanduser()
    if given.is_absolute() or given.exists():
        return given
    root = project_root()
    return root / given if root is not None and (root / given).exists() else given


def shown_path(path: os.PathLike[str] | str) -> str:
    """``path`` as the book's outputs print it, never as this machine's absolute path: relative to the repository
    (``data/ml-100k``), else under the folder an environment variable names (``$RECJUDGE_DATA_DIR/ml-100k``,
    ``$RECJUDGE_RUNS_DIR/...``), else under the home folder (``~/.cache/recjudge/data/ml-100k``), else its last part
    (``.../ml-100k``). Outputs are read (and shared, in a run's archive or the built book) by people on other
    machines, for whom where a folder sits on this one says nothing and may say too much."""
    target = Path(path).expanduser().resolve()
    root = project_root()
    bases = [(root.resolve(), "")] if root is not None else []
    bases += [(Path(v).expanduser().resolve(), f"${env}") for env in ("RECJUDGE_DATA_DIR", "RECJUDGE_RUNS_DIR")
              if (v := os.environ.get(env))]  # fmt: skip
    bases.append((Path.home().resolve(), "~"))
    for base, label in bases:
        if target == base or base in target.parents:
            rel = target.relative_to(base).as_posix()
            if not label:
                return rel
            return label if rel == "." else f"{label}/{rel}"
    return f".../{target.name}"


def _home() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "recjudge"


def data_dir() -> Path:
    """Root folder for downloaded or extracted datasets (one sub-folder per dataset)."""
    if env := os.environ.get("RECJUDGE_DATA_DIR"):
        return Path(env)
    root = project_root()
    return (root / "data") if root else _home() / "data"


def runs_dir() -> Path:
    """Root folder for the judge cache, JSONL judgment logs and run manifests."""
    if env := os.environ.get("RECJUDGE_RUNS_DIR"):
        return Path(env)
    root = project_root()
    return (root / "runs") if root else _home() / "runs"


@dataclass(frozen=True)
class RunMode:
    """How the book runner executes this process's notebooks: for real, as a plan (every request recorded into
    ``plan_folder``, none sent, no recommender trained) or as an offline replay (answers from the cache only).

    The runner hands the mode to its kernels through the environment (:meth:`environment`); everything that behaves
    differently in a plan or a replay asks :func:`run_mode`, the one place those variables are read."""

    plan_folder: Path | None = None
    offline: bool = False

    @property
    def planning(self) -> bool:
        return self.plan_folder is not None

    def environment(self) -> dict[str, str]:
        """The variables that carry this mode to a kernel (both always set, so a parent's mode never leaks)."""
        return {_PLAN_ENV: str(self.plan_folder or ""), _OFFLINE_ENV: "1" if self.offline else "0"}


_PLAN_ENV, _OFFLINE_ENV = "RECJUDGE_PLAN", "RECJUDGE_OFFLINE"


def run_mode() -> RunMode:
    """This process's :class:`RunMode`, as the book runner set it (a plain run outside the runner)."""
    folder = os.environ.get(_PLAN_ENV)
    return RunMode(Path(folder) if folder else None, os.environ.get(_OFFLINE_ENV) == "1")


DEFAULT_RUN = "default"
#: the environment variable naming the run folder of this process (set by the book runner for its notebooks)
RUN_DIR_ENV = "RECJUDGE_RUN_DIR"
#: the book's hand-over from notebook 01 to notebook 02 inside a run folder: the serendipity template selected
SELECTED_TEMPLATE_FILE = "01_serendipity_prompt_selection/selected_template.json"
_ADHOC_PREFIX = "adhoc"
#: the book's hand-over from notebook 02 to notebook 07 inside a run folder: each fold's trained lists as TREC runs
_BOOK_LISTS_DIR = "lists"
#: run names that are not runs: the trained recommenders shared by every run
RESERVED_RUN_NAMES = ("artifacts",)

# The run folder this process chose for itself (not the runner's), with the runs root it was made under: a
# later call in the same kernel reuses it, and a changed root (``RECJUDGE_RUNS_DIR``) makes a new one.
_adhoc: dict[str, str] = {}


def check_run_name(name: str) -> str:
    """``name`` when it is a plain folder name under ``runs/``; ValueError otherwise."""
    if not name or "/" in name or "\\" in name or name.startswith(".") or name in RESERVED_RUN_NAMES:
        raise ValueError(f"run name {name!r}: use a plain folder name (not {', '.join(RESERVED_RUN_NAMES)})")
    return name


def _folder_name(text: str) -> str:
    """``text`` as a piece of a folder name: letters, digits, ``.``, ``_`` and ``-``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "judge"


def _judge_fits(folder: Path, judge: Mapping[str, Any]) -> bool:
    """Whether the run in ``folder`` has no judge yet or has ``judge``
    (:func:`~recjudge_utils.judge.profile.same_judge`)."""
    from recjudge_utils.judge.profile import same_judge  # the judge stage sits above paths: imported when asked

    path = folder / MANIFEST_FILE
    recorded = json.loads(path.read_text(encoding="utf-8")).get("judge") if path.is_file() else None
    return not recorded or same_judge(recorded, judge)


def _make_adhoc_folder(root: Path, judge: Mapping[str, Any] | None) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    parts = [_ADHOC_PREFIX, *([_folder_name(str(judge["name"]))] if judge and judge.get("name") else []), stamp]
    base = "-".join(parts)
    root.mkdir(parents=True, exist_ok=True)
    for k in range(1, 1000):  # two kernels started in the same second get folders of their own
        folder = root / (base if k == 1 else f"{base}-{k}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder
    raise FileExistsError(f"no free ad-hoc run folder named {base}-N under {root}")


def _update_manifest(folder: Path, judge: Mapping[str, Any] | None, notebook: str | None, created: bool) -> None:
    path = folder / MANIFEST_FILE
    recorded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    if recorded and not recorded.get("adhoc"):
        # the runner's manifest lists what it executed; a notebook run beside it would make it lie
        raise ValueError(
            f"{folder} is a run of the book runner (python -m recjudge_utils.book); a notebook run outside the "
            f"runner writes to a run of its own: pass another run_name"
        )
    if judge and not _judge_fits(folder, judge):
        raise ValueError(
            f"{folder} holds a run of judge {recorded['judge'].get('name')!r}, not {judge.get('name')!r}: "
            f"one run, one judge (chapter 6 names a run's judge from its manifest); pass another run_name"
        )
    if recorded:
        manifest = RunManifest.from_json(recorded)
    else:
        manifest = RunManifest(folder.name, git_commit=git_commit(project_root()), adhoc=True)
    changed = created or not path.is_file()
    if judge and not manifest.judge:
        manifest.judge, changed = dict(judge), True
    if notebook and notebook not in [nb.notebook for nb in manifest.notebooks]:
        manifest.notebooks.append(NotebookRun.from_json(notebook))
        changed = True
    if changed:
        manifest.write(folder)


def ensure_run_dir(run: str | None = None, judge: Mapping[str, Any] | None = None, notebook: str | None = None) -> Path:
    """The run folder of this process: the book runner's (``RECJUDGE_RUN_DIR``), else ``runs/<run>/`` or a new
    ``runs/adhoc-<judge>-<UTC time>/``, created with a ``manifest.json`` and remembered in ``RECJUDGE_RUN_DIR``.

    A notebook executed outside the runner (papermill, JupyterLab, nbclient) thus never writes into the book's
    own run (``runs/default/``) and its manifest names its judge. Raises ValueError for a bad run name, for the
    book's own run or another run of the runner, and for a run folder made with another judge.
    """
    env = os.environ.get(RUN_DIR_ENV)
    if env and _adhoc.get("folder") != env:
        return Path(env)  # the book runner's folder (or one the user exported): the runner owns its manifest
    root = runs_dir()
    # a folder this process chose earlier is reused, unless the runs root changed since (a new RECJUDGE_RUNS_DIR)
    ours = Path(env) if env and _adhoc.get("root") == str(root) else None
    if run is not None:
        if check_run_name(run) == DEFAULT_RUN:
            raise ValueError(
                f"run name {DEFAULT_RUN!r} is the book's own run, written by the book runner only "
                "(python -m recjudge_utils.book run); pass another run_name"
            )
        folder, created = root / run, not (root / run).exists()
        folder.mkdir(parents=True, exist_ok=True)
    elif ours is not None and (judge is None or _judge_fits(ours, judge)):
        folder, created = ours, False
    else:  # no folder yet, or this kernel's ad-hoc folder belongs to another judge: ad-hoc runs are per judge
        folder, created = _make_adhoc_folder(root, judge), True
    _update_manifest(folder, judge, notebook, created)
    if str(folder) != env:
        os.environ[RUN_DIR_ENV] = str(folder)
        _adhoc.update(folder=str(folder), root=str(root))
        repo = project_root()
        shown = f"runs/{folder.name}" if repo is not None and root == repo / "runs" else str(folder)
        print(f"not run by the book runner: writing to {shown}/ (pass run_name to choose the folder)", flush=True)
    return folder


def current_run_dir() -> Path:
    """The folder of the run being executed: ``RECJUDGE_RUN_DIR`` (set by the book runner), else this process's own
    run (:func:`ensure_run_dir`: ``runs/adhoc-<UTC time>/``), never the book's ``runs/default/``."""
    return ensure_run_dir()


def book_lists_dir(fold: int, run_dir: Path | None = None) -> Path:
    """Where chapter 2 writes fold ``fold``'s top-k lists as TREC runs, one file per recommender, and chapter 7 reads
    them back through the same reader as a researcher's own files."""
    return (run_dir or current_run_dir()) / _BOOK_LISTS_DIR / f"fold{int(fold)}"


def artifacts_dir() -> Path:
    """Stored outputs of trained recommenders, shared by every run (a new judge retrains nothing)."""
    return runs_dir() / "artifacts"
