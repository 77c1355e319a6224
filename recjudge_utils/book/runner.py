"""Execute the notebooks of one named run with papermill, and build the Jupyter Book from a run.

A run lives in ``runs/<name>/``: ``executed/`` (the executed notebooks), ``manifest.json`` and ``run_manifest.md``
(what produced them, and how healthy the judge was: parsed, unparsed and failed answers per notebook), and one folder
per notebook with its judgment log and ``results.json``. Runs coexist; the answer cache (``runs/cache.sqlite``) and
the trained recommenders (``runs/artifacts/``) are shared by all of them. An offline run (answers from the cache
only) is checked first by a plan (:func:`check_offline`).

Parameters reach each notebook that declares them: the judge profile as the one ``judge`` parameter, the scale's
values (:mod:`recjudge_utils.book.scales`), then every ``-p NAME VALUE`` (VALUE read as YAML). A name no notebook
declares is an error naming the closest declared ones; the API key is never a parameter (the judge client reads it
from the environment), nor are the judge and the run folder (the run's profile and name, recorded in its manifest).
Bad input raises ValueError (the command line turns it into exit code 2); a failing notebook raises
:class:`NotebookFailed`.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from recjudge_utils import __version__
from recjudge_utils._extras import optional_imports
from recjudge_utils.book.execution_cache import book_key, notebook_key, plan_key, runs_digest
from recjudge_utils.book.scales import scale_parameters
from recjudge_utils.book.usage import (
    METHOD_FILE,
    actual_usage,
    health_line,
    judge_health,
    log_offsets,
    plan_summary,
    read_jsonl,
    with_total,
)
from recjudge_utils.judge.backends.openai_compatible import ADAPTATIONS_FILE
from recjudge_utils.judge.planning import plan_files
from recjudge_utils.judge.profiles import JudgeProfile
from recjudge_utils.judge.records import logged_calls
from recjudge_utils.paths import (
    DEFAULT_RUN,
    MANIFEST_FILE,
    SELECTED_TEMPLATE_FILE,
    RunMode,
    check_run_name,
    project_root,
    runs_dir,
)
from recjudge_utils.protocols.pointwise_score import choose_template
from recjudge_utils.recommenders.artifacts import compute_log
from recjudge_utils.recommenders.plan_standin import FITTED, METHODS_FILE, STAND_IN, STORED
from recjudge_utils.registry import suggestion

with optional_imports("book"):
    import nbformat

__all__ = [
    "CacheCheck",
    "DeclaredParameter",
    "MissingAnswers",
    "NotebookFailed",
    "NotebookRun",
    "RunManifest",
    "asks_judge",
    "build_book",
    "check_offline",
    "check_parameter_names",
    "check_selection",
    "declared_parameters",
    "execute_notebook",
    "parameter_cell",
    "parse_parameter_value",
    "resolve_dataset_parameters",
    "run",
    "run_dir",
    "select_notebooks",
]

_HIDDEN_CELL_TAGS = ("parameters", "injected-parameters")
PLAN_JSON = "plan.json"
_SECRET_PARAMETERS = {"api_key", "openai_api_key"}
_SECRET_PARAMETER_MESSAGE = "the API key is read from the environment (the profile's api_key_env), never a parameter"
#: parameters the runner sets itself: a ``-p`` for them would make the manifest lie about the run
_RUNNER_PARAMETERS = {
    "judge": "-p judge: the judge is the run's profile, recorded in its manifest: use --judge PROFILE "
    "(or --model/--base-url)",
    "run_name": "-p run_name: the runner names the run folder: use --run NAME",
}


@dataclass
class NotebookRun:
    """What happened to one notebook in a run."""

    notebook: str
    output: str
    parameters: dict[str, Any]
    status: str = "pending"  # "ok" | "failed"
    seconds: float = 0.0
    failed_cell: int | None = None
    error: str | None = None
    #: what the executed copy was made from (:func:`.execution_cache.notebook_key`)
    cache_key: str = ""
    #: the executed copy of an earlier execution with the same key was kept (``seconds`` are that execution's)
    reused: bool = False
    #: the line of the notebook's judgment log after which this execution's judgments are (a rerun into the same run
    #: appends to the log: what an earlier execution judged is not this one's)
    judgments_from: int = 0


@dataclass
class RunManifest:
    """Everything needed to say what produced a run's executed notebooks."""

    run: str
    judge: dict[str, Any]
    scale: str
    parameters: dict[str, Any]
    package_version: str
    git_commit: str
    python: str
    started_utc: str
    finished_utc: str = ""
    seconds: float = 0.0
    #: "running" from the first notebook on (chapter 6 reads it while the run executes), then "ok" or "failed"
    status: str = "running"
    notebooks: list[NotebookRun] = field(default_factory=list)
    plan: dict[str, Any] | None = None
    actual: dict[str, Any] | None = None
    #: seconds spent training or tuning recommenders in this run (0 when every model was a stored artifact)
    training_seconds: float = 0.0
    #: what the judge's endpoint rejected and how requests were adapted (``endpoint_adaptations.json`` of the run)
    endpoint_adaptations: dict[str, Any] = field(default_factory=dict)
    #: per notebook judged with the run's profile: judgments, parsed, unparsed, errors, cache hits, the most common
    #: reasons, and whether more than a fifth of its answers were unusable (:func:`.usage.judge_health`)
    judge_health: list[dict[str, Any]] = field(default_factory=list)

    @property
    def model(self) -> str:
        """The judge's model name."""
        return str(self.judge.get("model"))


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


def git_commit(root: Path) -> str:
    """Current commit, with ``-dirty`` when the work tree has uncommitted changes; ``unknown`` outside git."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + ("-dirty" if dirty else "")


def _tidy_executed_notebook(path: Path) -> None:
    """Prepare an executed copy for the book: collapse the parameters / injected-parameters cells."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if any(tag in tags for tag in _HIDDEN_CELL_TAGS) and "hide-cell" not in tags:
            cell["metadata"]["tags"] = [*tags, "hide-cell"]
    nbformat.write(nb, path)


def _describe_failure(exc: Exception) -> tuple[int | None, str]:
    """Cell index (1-based, as counted in the notebook) and a one-line error from a papermill failure."""
    cell_index = getattr(exc, "cell_index", None)
    ename, evalue = getattr(exc, "ename", type(exc).__name__), getattr(exc, "evalue", str(exc))
    return (cell_index + 1 if isinstance(cell_index, int) else None), f"{ename}: {evalue}".strip()


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


def execute_notebook(source: Path, output: Path, parameters: dict[str, Any], log_output: bool) -> NotebookRun:
    """Run one notebook with papermill (working directory: its own folder)."""
    with optional_imports("book"):
        import papermill

    run_ = NotebookRun(notebook=source.name, output=str(output), parameters=parameters)
    started = time.perf_counter()
    try:
        papermill.execute_notebook(
            str(source),
            str(output),
            parameters=parameters,
            cwd=str(source.parent),
            kernel_name="python3",
            progress_bar=False,
            log_output=log_output,
            report_mode=False,
        )
        run_.status = "ok"
    except Exception as exc:  # papermill raises PapermillExecutionError, but a kernel death is another type
        run_.status = "failed"
        run_.failed_cell, run_.error = _describe_failure(exc)
    run_.seconds = round(time.perf_counter() - started, 1)
    if output.exists():
        _tidy_executed_notebook(output)
    return run_


def run_dir(name: str) -> Path:
    """``runs/<name>/``; a name is a plain folder name (ValueError otherwise)."""
    return runs_dir() / check_run_name(name)


#: the chapter that reads every other chapter's ``results.json`` of every run: executed after all the others
_READS_ALL_RESULTS = "06_judges_compared.ipynb"


def select_notebooks(notebook_dir: Path, only: Sequence[str] | None) -> list[Path]:
    """The notebooks of ``notebook_dir`` (sorted, :data:`READS_ALL_RESULTS` last), or those whose name starts with
    one of ``only``."""
    notebooks = sorted(notebook_dir.glob("*.ipynb"), key=lambda nb: (nb.name == _READS_ALL_RESULTS, nb.name))
    if only:
        notebooks = [nb for nb in notebooks if any(nb.name.startswith(prefix) for prefix in only)]
        if not notebooks:
            raise ValueError(f"no notebook in {notebook_dir} starts with any of {list(only)}")
    return notebooks


def template_selection_line(selected_file: Path) -> str:
    """The run summary's line on chapter 1's selection, and what chapter 7 then judges with (chapter 2 uses its own
    ``template`` parameter, CoT unless set)."""
    choice = choose_template(None, selected_file)
    if choice.why == "chapter 1's selection in this run":
        return f"template selection: chapter 1 selected {choice.template}; chapter 7 judges with it"
    return f"template selection: {choice.template}, {choice.why} (chapter 2 uses its template parameter)"


def _endpoint_of(judge: Mapping[str, Any]) -> str:
    """Where the judge's calls go, for the manifest page (a panel: its members')."""
    if judge.get("backend") == "panel":
        members = [m for m in judge.get("members") or [] if isinstance(m, Mapping)]
        return "panel of " + ", ".join(f"{m.get('name')} ({_endpoint_of(m)})" for m in members)
    return str(judge.get("base_url") or "embedded / local")


def manifest_markdown(manifest: RunManifest) -> str:
    """The manifest as a book page, so every published report says what produced it."""
    judge = manifest.judge
    lines = [
        "# Run manifest",
        "",
        f"What produced the executed notebooks of run `{manifest.run}`. Rerun it with `make book`, or with",
        "another judge: `python -m recjudge_utils.book run --run NAME --judge judges/PROFILE.yaml [--scale paper]`.",
        "",
        "| field | value |",
        "| --- | --- |",
        f"| run | `{manifest.run}` |",
        f"| judge profile | `{judge.get('name')}` (backend `{judge.get('backend') or ''}`) |",
        f"| judge model | `{judge.get('model')}` |",
        f"| endpoint | `{_endpoint_of(judge)}` |",
        f"| scale | {manifest.scale} |",
        f"| status | {manifest.status} |",
        f"| recjudge_utils version | {manifest.package_version} |",
        f"| git commit | `{manifest.git_commit}` |",
        f"| Python | {manifest.python} |",
        f"| started (UTC) | {manifest.started_utc} |",
        f"| total time | {manifest.seconds:.0f} s |",
        f"| of which training recommenders | {manifest.training_seconds:.0f} s (0: every model was reused) |",
        f"| extra parameters | `{json.dumps(manifest.parameters)}` |",
        "",
        "| notebook | status | seconds |",
        "| --- | --- | --- |",
    ]
    lines += [
        f"| {r.notebook} | {r.status}{' (reused: unchanged since its execution)' if r.reused else ''} | "
        f"{r.seconds:.0f} |"
        for r in manifest.notebooks
    ]
    changes = [
        f"| {endpoint} | `{entry['parameter']}` | {entry['action']} | {entry['message']} |"
        for endpoint, state in manifest.endpoint_adaptations.items()
        for entry in state.get("log", [])
    ]
    if changes:
        lines += [
            "",
            "## What the judge's endpoint rejected",
            "",
            "Each parameter was adapted once for the whole run; the cache keys are those of the requests sent.",
            "",
            "| endpoint | parameter | adapted by | the endpoint's answer |",
            "| --- | --- | --- | --- |",
            *changes,
        ]
    health = _judge_health_table(manifest)
    lines += ["", *health] if health else []
    lines += ["", *_plan_beside_actual(manifest)]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """Text as a code span in a Markdown table cell (an answer's reason may hold a pipe or a backtick)."""
    return "`" + text.replace("`", "'").replace("|", "\\|") + "`"


def _reason_cell(row: dict[str, Any]) -> str:
    parts = []
    for kind, count in (("unparsed", row["unparsed"]), ("error", row["errors"])):
        reasons = row.get(f"{kind}_reasons") or []
        if count and reasons:
            reason, n = reasons[0]
            parts.append(f"{kind} ({n} of {count}): {_cell(str(reason))}")
    return "; ".join(parts) or "-"


def _judge_health_table(manifest: RunManifest) -> list[str]:
    """The manifest page's judge health: per notebook, what its judge's answers were worth, flagged where more than
    a fifth were unusable."""
    rows = manifest.judge_health
    if not rows:
        return []
    lines = [
        "## Judge health",
        "",
        "An answer is usable when it parsed; an unparsed answer (not in the format asked for) or a failed call is not. "
        "⚠ marks a notebook where more than a fifth of the answers were unusable: its results rest on fewer judgments "
        "than it asked for. Cache hits count like any answer.",
        "",
        "| notebook | usable of judged | unparsed / errors | cache hits | most common reason |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in rows:  # five columns: the page is read on a laptop, and a wider table wraps every cell
        usable = f"{row['parsed']} of {row['judgments']}" + (" ⚠" if row["flagged"] else "")
        lines.append(
            f"| {row['notebook']} | {usable} | {row['unparsed']} / {row['errors']} | {row['cache_hits']} | "
            f"{_reason_cell(row)} |"
        )
    return lines


def _plan_beside_actual(manifest: RunManifest) -> list[str]:
    """The manifest page's table of planned and measured calls, tokens, cost and time per notebook."""
    actual = {r["notebook"]: r for r in (manifest.actual or {}).get("notebooks", [])}
    plan = {r["notebook"]: r for r in (manifest.plan or {}).get("notebooks", [])}
    if not actual:
        return []
    lines = [
        "## Judge usage" + (": plan beside actual" if plan else ""),
        "",
        "Paid calls exclude cache hits. "
        + (
            "The plan was made by `python -m recjudge_utils.book plan` before the run; its completion tokens are "
            "estimates."
            if plan
            else "Plan a run before paying with `python -m recjudge_utils.book plan`."
        ),
        "",
        "| notebook | calls (plan / actual) | prompt tokens (plan / actual) | completion tokens (plan / actual) "
        "| cost USD (plan / actual) | hours (plan / actual) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]

    def pair(p: dict[str, Any] | None, a: dict[str, Any], key: str, fmt: str) -> str:
        left = format(p[key], fmt) if p is not None and p.get(key) is not None else "-"
        return f"{left} / {format(a[key], fmt)}"

    for nb, a in actual.items():
        p = plan.get(nb)
        lines.append(
            f"| {nb} | {pair(p, a, 'calls', 'd')} | {pair(p, a, 'prompt_tokens', ',d')} | "
            f"{pair(p, a, 'completion_tokens', ',d')} | {pair(p, a, 'cost_usd', '.4f')} | "
            f"{pair(p, a, 'hours', '.3f')} |"
        )
    return lines


def _write_manifest(folder: Path, manifest: RunManifest) -> None:
    """``manifest.json`` and its book page ``run_manifest.md``, each replaced whole (chapter 6 may be reading)."""
    folder.mkdir(parents=True, exist_ok=True)
    adaptations = folder / ADAPTATIONS_FILE
    if adaptations.exists():
        manifest.endpoint_adaptations = json.loads(adaptations.read_text(encoding="utf-8"))
    for name, text in (
        (MANIFEST_FILE, json.dumps(asdict(manifest), indent=2, default=str) + "\n"),
        ("run_manifest.md", manifest_markdown(manifest)),
    ):
        tmp = folder / f"{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(folder / name)


#: the key of the last build (:func:`.execution_cache.book_key`), beside the HTML it describes
_BUILD_KEY_FILE = "recjudge-build.json"


def build_book(root: Path, run_name: str = DEFAULT_RUN, force: bool = False) -> bool:
    """Copy the run's executed notebooks and manifest page into ``book/executed`` and run
    ``jupyter-book build --all -W`` (warnings are errors, every page is rebuilt); returns whether it built.

    Nothing is built when the last build was made from the same book sources and executed notebooks (its key is in
    ``book/_build/recjudge-build.json``) and its HTML is there, unless ``force``.

    A toc entry ``executed/<other run>--<notebook>`` shows that notebook as executed in another run (the page that
    runs chapter 2 on a books dataset): it is copied from ``runs/<other run>/executed/`` beside the run's own pages
    (its links to other chapters lead to this book's), its labels prefixed with ``<other run>-`` (the same chapter's
    page in this run defines them too)."""
    source = run_dir(run_name) / "executed"
    book_dir = root / "book"
    toc = yaml.safe_load((book_dir / "_toc.yml").read_text())
    wanted = [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])]
    pages = {f: _executed_page(source, f) for f in wanted if f.startswith("executed/")}
    missing = [f for f, page in pages.items() if not page.exists()]
    if missing:
        raise ValueError(
            f"no executed copy of {', '.join(missing)} (run those notebooks into their run first, e.g. python -m "
            f"recjudge_utils.book run --run {run_name}; an entry executed/<run>--<notebook> is read from that run)"
        )
    other_pages = {f: page for f, page in pages.items() if not page.is_relative_to(source)}
    key = {"run": run_name, "key": book_key(book_dir, source, other_pages)}
    stamp = book_dir / "_build" / _BUILD_KEY_FILE
    built = book_dir / "_build" / "html" / "index.html"
    if not force and built.is_file() and stamp.is_file() and json.loads(stamp.read_text(encoding="utf-8")) == key:
        print(f"book unchanged since its last build from run {run_name!r}: nothing to build (--force builds)")
        return False
    target = book_dir / "executed"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    for entry, page in other_pages.items():
        other_run = entry.removeprefix("executed/").partition(OTHER_RUN_PAGE)[0]
        text = relabelled(page.read_text(encoding="utf-8"), f"{other_run}-")
        if page.suffix == ".ipynb":
            text = with_other_run_note(text, other_run, page.stem)
        (book_dir / f"{entry}{page.suffix}").write_text(text, encoding="utf-8")
    stamp.unlink(missing_ok=True)  # a failed build leaves no key that claims its HTML
    jb = Path(sys.executable).with_name("jupyter-book")
    command = [str(jb) if jb.exists() else "jupyter-book", "build", str(book_dir), "--all", "-W", "--keep-going"]
    print("building the book:", " ".join(command), flush=True)
    subprocess.run(command, check=True)
    stamp.write_text(json.dumps(key) + "\n", encoding="utf-8")
    return True


#: a toc entry ``executed/<other run>--<notebook>`` is that notebook's page as executed in the other run
OTHER_RUN_PAGE = "--"


def relabelled(notebook_json: str, prefix: str) -> str:
    """A notebook's JSON text with every label it defines (a figure's ``name``, an exercise's ``:label:``, a
    ``(target)=``) and every reference to it prefixed: a second copy of a chapter in one book may not define the
    first copy's labels again."""
    nb = json.loads(notebook_json)
    labels: set[str] = set()
    for cell in nb.get("cells", []):
        figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
        if isinstance(figure.get("name"), str):
            labels.add(figure["name"])
        source = "".join(cell.get("source", []))
        labels |= set(re.findall(r"^:label:\s*([\w-]+)", source, re.M)) | set(
            re.findall(r"^\(([\w-]+)\)=", source, re.M)
        )
    for label in sorted(labels, key=len, reverse=True):
        notebook_json = re.sub(rf"(?<![\w-]){re.escape(label)}(?![\w-])", prefix + label, notebook_json)
    return notebook_json


def with_other_run_note(notebook_json: str, other_run: str, notebook: str) -> str:
    """The notebook with a note after its title cell: the prose is the chapter's own, the outputs the other run's
    (on that run's dataset and judge, named in the run's manifest and in the outputs themselves)."""
    nb = json.loads(notebook_json)
    note = (
        f"```{{note}}\nThis page is [this chapter]({notebook}.ipynb) as executed in the run `{other_run}` "
        f"(made by `make book-sim`): the prose is the chapter's own, written for the book's MovieLens run; every "
        f"output below, from the dataset loaded to the last table, is the `{other_run}` run's.\n```"
    )
    first = nb["cells"][0]
    title, _, rest = "".join(first["source"]).partition("\n")
    if first["cell_type"] == "markdown" and title.startswith("# "):  # right under the title, above the prose
        first["source"] = [f"{title}\n\n{note}\n{rest}"]
    else:
        nb["cells"].insert(0, {"cell_type": "markdown", "id": f"{other_run}-note", "metadata": {}, "source": [note]})
    return json.dumps(nb, indent=1, ensure_ascii=False)


def _executed_page(source: Path, toc_file: str) -> Path:
    stem = toc_file.removeprefix("executed/")
    other_run, _, notebook = stem.partition(OTHER_RUN_PAGE)
    if notebook:  # executed/<other run>--<notebook>: that run's executed copy
        source, stem = run_dir(other_run) / "executed", notebook
    ipynb, md = source / f"{stem}.ipynb", source / f"{stem}.md"
    return ipynb if ipynb.exists() or not md.exists() else md


def _selection(
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
    _selection(root, only, parameters)


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


def _notebook_parameters(
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


def _shared_judge_server(profile: JudgeProfile, offline: bool) -> dict[str, str]:
    """The environment that hands one embedded llama-server, started here, to every notebook of the run that judges
    (it stops when this process exits): one model load per run instead of one per notebook, and one prompt cache, so
    a template's few-shot prefix is evaluated once per run. Nothing for another backend, or offline."""
    if offline or profile.backend != "embedded":
        return {}
    from recjudge_utils.judge.backends.embedded import EmbeddedBackend
    from recjudge_utils.judge.embedded_server import shared_server_environment

    try:
        backend = profile.create_backend()
        assert isinstance(backend, EmbeddedBackend)
        return shared_server_environment(backend.server)
    except (RuntimeError, OSError) as exc:  # no build, no model: each notebook reports it where it judges
        print(f"the embedded judge's server could not be shared across the run: {exc}", flush=True)
        return {}


def _matching_plan(summary: dict[str, Any], profile: JudgeProfile, scale: str) -> dict[str, Any] | None:
    """The plan in ``runs/<run>/plan.json`` when it was made for this judge and scale; an older plan of another
    judge or scale would be shown beside the actual usage as if it were this run's."""
    planned = summary.get("judge") or {}
    if planned.get("name") != profile.name or planned.get("model") != profile.model or summary.get("scale") != scale:
        print(f"[run] ignoring {PLAN_JSON}: it plans judge {planned.get('name')!r} at scale {summary.get('scale')!r}")
        return None
    return summary


def _earlier(path: Path) -> dict[str, Any]:
    """What an earlier run or plan wrote to ``path`` (empty when there is none or it cannot be read)."""
    try:
        return dict(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else {}
    except (OSError, ValueError):
        return {}


def _reusable(previous: Mapping[str, Any], notebook: str, key: str) -> dict[str, Any] | None:
    """The earlier run's record of ``notebook`` when it ended well with the same key and its executed copy is there."""
    for entry in previous.get("notebooks") or []:
        if (
            entry.get("notebook") == notebook
            and entry.get("status") == "ok"
            and entry.get("cache_key") == key
            and Path(str(entry.get("output"))).is_file()
        ):
            return dict(entry)
    return None


def _rows_by_notebook(rows: Iterable[Mapping[str, Any]], notebooks: set[str]) -> dict[str, dict[str, Any]]:
    """An earlier manifest's usage or health rows of ``notebooks``, by notebook."""
    return {str(r["notebook"]): dict(r) for r in rows if r.get("notebook") in notebooks}


def _notebook_run(entry: Mapping[str, Any], **changes: Any) -> NotebookRun:
    """A :class:`NotebookRun` read back from a manifest's entry (keys it does not know are left out)."""
    return NotebookRun(**{k: v for k, v in {**entry, **changes}.items() if k in NotebookRun.__dataclass_fields__})


def run(
    profile: JudgeProfile,
    run_name: str = DEFAULT_RUN,
    parameters: Mapping[str, Any] | None = None,
    only: Sequence[str] | None = None,
    build: bool = True,
    log_output: bool = False,
    root: Path | None = None,
    scale: str = "demo",
    offline: bool = False,
    force: bool = False,
) -> RunManifest:
    """Execute the notebooks into ``runs/<run_name>/``, write the manifest, build the book from that run.

    A notebook whose execution key (:func:`.execution_cache.notebook_key`: its file, parameters, judge, scale, run
    mode, the package, the data) equals the one its executed copy in this run was made with is not executed again,
    unless ``force`` or a notebook before it was executed in this run (a later chapter may read an earlier one's
    files); when no notebook is executed, the run's manifest stays as it was. The manifest is written before the
    first executed notebook (``"status": "running"``, judge, scale, parameters), after each notebook, and at the end
    with the usage, so the run's judge is named even while it executes. ``offline``: the notebooks' judges answer
    only from the cache (a replay of an imported archive, or ``run --offline``, which calls :func:`check_offline`
    first).

    Raises:
        NotebookFailed: a notebook raised; every failed notebook is named with its cell and error.
    """
    root, declared, extra = _selection(root, only, parameters)
    notebooks = list(declared)
    folder = run_dir(run_name)
    out_dir = folder / "executed"
    out_dir.mkdir(parents=True, exist_ok=True)
    params_of = {nb: _notebook_parameters(nb, declared[nb], profile, scale, extra) for nb in notebooks}
    previous = _earlier(folder / MANIFEST_FILE)

    def key_of(nb: Path) -> str:  # computed when its turn comes: the chapter reading every run reads them then
        other_runs = runs_digest(exclude=run_name) if nb.name == _READS_ALL_RESULTS else None
        return notebook_key(nb, params_of[nb], scale, offline, other_runs)

    same_notebooks = [e.get("notebook") for e in previous.get("notebooks", [])] == [nb.name for nb in notebooks]
    if (
        not force
        and previous.get("status") == "ok"
        and same_notebooks
        and all(_reusable(previous, nb.name, key_of(nb)) for nb in notebooks)
    ):
        print(f"[run {run_name}] every notebook is unchanged since it was executed: nothing to execute "
              "(--force executes)", flush=True)  # fmt: skip
        if build:
            _build_and_say(root, run_name)
        return _manifest_from_dict(previous)

    manifest = RunManifest(
        run=run_name,
        judge=profile.to_dict(),
        scale=scale,
        parameters=extra,
        package_version=__version__,
        git_commit=git_commit(root),
        python=platform.python_version(),
        started_utc=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    plan_path = folder / PLAN_JSON
    if plan_path.exists():
        manifest.plan = _matching_plan(json.loads(plan_path.read_text(encoding="utf-8")), profile, scale)
    manifest.notebooks = [NotebookRun(nb.name, str(out_dir / nb.name), params_of[nb]) for nb in notebooks]
    _write_manifest(folder, manifest)  # preliminary: chapter 6 names this run's judge while it executes
    started = time.perf_counter()
    judging = [nb.stem for nb in notebooks if asks_judge(nb, declared[nb])]
    # usage, plan and cost cover the notebooks that judge with the run's profile (declare ``judge``); chapter 5's
    # simulated judge is a teaching tool, not this run's judge, and its calls are not this judge's bill
    offsets = log_offsets(folder, judging)
    computed_before = len(compute_log())
    env = {"RECJUDGE_RUN_DIR": str(folder), "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    env |= RunMode(offline=offline).environment()
    executed_one = force
    with environment(env), contextlib.ExitStack() as sharing:
        shared = False
        for i, nb in enumerate(notebooks):
            params = params_of[nb]
            key = key_of(nb)
            earlier = None if executed_one else _reusable(previous, nb.name, key)
            if earlier is not None:
                manifest.notebooks[i] = _notebook_run(earlier, reused=True)
                _write_manifest(folder, manifest)
                print(f"[{nb.name}] unchanged since it was executed: its executed copy is kept", flush=True)
                continue
            executed_one = True
            if not shared and asks_judge(nb, declared[nb]):
                sharing.enter_context(environment(_shared_judge_server(profile, offline)))
                shared = True
            shown = {k: (v.get("name") if k == "judge" and isinstance(v, dict) else v) for k, v in params.items()}
            print(f"[{nb.name}] running with {shown}", flush=True)
            result = execute_notebook(nb, out_dir / nb.name, params, log_output)
            result.cache_key, result.judgments_from = key, offsets.get(nb.stem, 0)
            manifest.notebooks[i] = result
            manifest.seconds = round(time.perf_counter() - started, 1)
            _write_manifest(folder, manifest)
            where = f" at cell {result.failed_cell}" if result.failed_cell else ""
            print(f"[{nb.name}] {result.status} in {result.seconds:.0f} s{where}", flush=True)
            if result.error:
                print(f"[{nb.name}] {result.error}", flush=True)
    manifest.seconds = round(time.perf_counter() - started, 1)
    manifest.training_seconds = round(
        sum(e["seconds"] for e in compute_log(start=computed_before) if not e["nested"]), 1
    )
    manifest.finished_utc = datetime.now(UTC).isoformat(timespec="seconds")
    reused = {Path(r.notebook).stem for r in manifest.notebooks if r.reused}
    seconds = {Path(r.notebook).stem: r.seconds for r in manifest.notebooks}
    fresh = {nb: start for nb, start in offsets.items() if nb not in reused}
    # a reused notebook's usage and health are those of the execution that made its copy
    kept_usage = _rows_by_notebook((previous.get("actual") or {}).get("notebooks", []), reused)
    kept_health = _rows_by_notebook(previous.get("judge_health") or [], reused)
    usage = actual_usage(folder, fresh, seconds) if fresh else None
    new_usage = {} if usage is None else {r["notebook"]: r for r in usage.to_dict("records")}
    usage_rows = [kept_usage.get(nb) or new_usage.get(nb) for nb in judging]
    if any(usage_rows):
        manifest.actual = {"notebooks": with_total([r for r in usage_rows if r]).to_dict("records")}
    new_health = {r["notebook"]: r for r in judge_health(folder, fresh)}
    manifest.judge_health = [h for nb in judging if (h := kept_health.get(nb) or new_health.get(nb))]
    failures = [r for r in manifest.notebooks if r.status != "ok"]
    manifest.status = "failed" if failures else "ok"
    _write_manifest(folder, manifest)
    shutil.copy2(folder / "run_manifest.md", out_dir / "run_manifest.md")
    for row in manifest.judge_health:  # before a failure is raised: a failing judge is often why a notebook failed
        if row["flagged"]:
            print(f"judge health: {health_line(row)}", flush=True)
    if any(nb.name.startswith("01_") for nb in notebooks) and (folder / SELECTED_TEMPLATE_FILE).is_file():
        print(template_selection_line(folder / SELECTED_TEMPLATE_FILE), flush=True)

    if failures:
        details = "; ".join(f"{r.notebook} failed at cell {r.failed_cell}: {r.error}" for r in failures)
        raise NotebookFailed(f"{len(failures)} notebook(s) failed: {details} (executed copies in {out_dir})")
    if build:
        _build_and_say(root, run_name, force)
    return manifest


def _build_and_say(root: Path, run_name: str, force: bool = False) -> None:
    if build_book(root, run_name, force):
        print(f"book built: {root / 'book' / '_build' / 'html' / 'index.html'}", flush=True)


def _manifest_from_dict(data: Mapping[str, Any]) -> RunManifest:
    """A :class:`RunManifest` read back from ``manifest.json``."""
    fields = {k: v for k, v in data.items() if k in RunManifest.__dataclass_fields__}
    fields["notebooks"] = [_notebook_run(nb) for nb in data.get("notebooks", [])]
    return RunManifest(**fields)


#: parameters that change no request, set in plan mode to what costs least (bootstrap resamples of the reported CIs)
_PLAN_SHORTCUTS: dict[str, Any] = {"n_boot": 20}


#: the hidden first cell of each notebook in a plan kernel: no variable or stand-in stripe carries over, and what is
#: done for its recommenders is logged under its name
_PLAN_RESET = """%reset -f
from recjudge_utils.recommenders.plan_standin import begin_plan_notebook
begin_plan_notebook({notebook!r})
del begin_plan_notebook"""


class _PlanKernel:
    """One Jupyter kernel for several notebooks of a plan, each notebook in a fresh namespace (``%reset -f``).

    A kernel per notebook (papermill) costs its start and the notebook's imports (pandas, torch, scipy), about 6 s
    per notebook on 2 cores: a fifth of a paper-scale plan. Modules stay imported between notebooks; variables do
    not. A notebook that fails is reported like papermill reports it, and the kernel is restarted for the next.
    """

    def __init__(self, cwd: Path, log_output: bool) -> None:
        with optional_imports("book"):
            from jupyter_client.manager import KernelManager

        self.cwd = cwd
        self.log_output = log_output
        self.km = KernelManager(kernel_name="python3")

    def __enter__(self) -> _PlanKernel:
        self.km.start_kernel(cwd=str(self.cwd))  # inherits this process's environment (its RunMode)
        return self

    def __exit__(self, *exc: object) -> None:
        self.km.shutdown_kernel(now=True)

    def execute(self, source: Path, output: Path, parameters: dict[str, Any]) -> NotebookRun:
        """Execute ``source`` with ``parameters`` injected as papermill does; the executed copy goes to ``output``."""
        with optional_imports("book"):
            from nbclient import NotebookClient
            from papermill.iorw import load_notebook_node
            from papermill.parameterize import parameterize_notebook

        result = NotebookRun(notebook=source.name, output=str(output), parameters=parameters)
        nb = load_notebook_node(str(source))
        nb = parameterize_notebook(nb, parameters, kernel_name="python3", language="python")
        nb.cells.insert(0, nbformat.v4.new_code_cell(_PLAN_RESET.format(notebook=source.stem)))

        def show(cell: Any, cell_index: int, execute_reply: Any) -> None:
            for out in cell.get("outputs", []):
                if out.get("output_type") == "stream":
                    print(out.get("text", ""), end="", flush=True)

        hook = show if self.log_output else None
        client = NotebookClient(nb, km=self.km, kernel_name="python3", on_cell_executed=hook)
        started = time.perf_counter()
        try:
            client.execute(cleanup_kc=False)
            result.status = "ok"
        except Exception as exc:  # nbclient's CellExecutionError, or a dead kernel
            result.status = "failed"
            outputs = [c.get("outputs", []) for c in nb.cells]
            errors = [k for k, outs in enumerate(outputs) if any(o.get("output_type") == "error" for o in outs)]
            result.failed_cell = errors[0] if errors else None  # 1-based once the reset cell is removed
            result.error = f"{getattr(exc, 'ename', type(exc).__name__)}: {getattr(exc, 'evalue', exc)}".strip()
            self.km.restart_kernel(now=True)
        finally:
            if client.kc is not None:
                client.kc.stop_channels()
        result.seconds = round(time.perf_counter() - started, 1)
        nb.cells.pop(0)
        nbformat.write(nb, output)
        return result


def _plan_notebooks(
    notebooks: Sequence[Path], parameters: Mapping[Path, dict[str, Any]], scratch: Path, log_output: bool
) -> dict[Path, NotebookRun]:
    """Execute the notebooks in plan mode in one kernel, one after the other (two kernels side by side were no
    faster on 2 shared cores); prints each notebook's outcome and how its requests were rendered."""
    results: dict[Path, NotebookRun] = {}
    with _PlanKernel(notebooks[0].parent, log_output) as kernel:
        for nb in notebooks:
            print(f"[plan {nb.name}] rendering every request, calling nothing, training nothing", flush=True)
            results[nb] = kernel.execute(nb, scratch / "executed" / nb.name, parameters[nb])
            how = _plan_method(scratch, nb.stem)["requests"]
            print(f"[plan {nb.name}] {results[nb].status} in {results[nb].seconds:.0f} s: {how}", flush=True)
    return results


def _plan_method(scratch: Path, notebook: str) -> dict[str, Any]:
    """How one notebook's plan rendered its requests, from what its kernel logged for its recommenders
    (:mod:`recjudge_utils.recommenders.plan_standin`); written to its ``plan_method.json``."""
    entries = read_jsonl(scratch / notebook / METHODS_FILE)
    by_method: dict[str, list[str]] = {STORED: [], FITTED: [], STAND_IN: []}
    for e in entries:
        if "model" in e:
            by_method.setdefault(e["method"], []).append(e["model"])
    notes = list(dict.fromkeys(e["note"] for e in entries if "note" in e))

    def names(models: list[str]) -> str:  # "deepfm x3": a model trained under several settings
        counts = {m: models.count(m) for m in dict.fromkeys(models)}
        return ", ".join(m if n == 1 else f"{m} x{n}" for m, n in counts.items())

    if by_method[STAND_IN]:
        requests = f"stand-in lists for: {names(by_method[STAND_IN])}"
        if notes:
            requests += " (calls: about the most a run makes)"
    elif by_method[STORED]:
        requests = "exact requests (stored recommenders)"
    elif by_method[FITTED]:
        requests = "exact requests (recommenders that learn nothing, fitted)"
    else:
        requests = "exact requests (no recommenders)"
    method = {
        "requests": requests,
        "stored": names(by_method[STORED]),
        "fitted_without_training": names(by_method[FITTED]),
        "stand_ins": names(by_method[STAND_IN]),
        "notes": notes,
    }
    (scratch / notebook).mkdir(parents=True, exist_ok=True)
    (scratch / notebook / METHOD_FILE).write_text(json.dumps(method, indent=2) + "\n", encoding="utf-8")
    return method


def _plan_parameters(
    profile: JudgeProfile, declared: Mapping[Path, set[str]], extra: Mapping[str, Any], scale: str
) -> dict[Path, dict[str, Any]]:
    """The notebooks that take the run's judge, each with the parameters its plan is executed with."""
    params = {}
    for nb, names in declared.items():
        if asks_judge(nb, names):
            params[nb] = _notebook_parameters(nb, names, profile, scale, extra)
            params[nb].update({k: v for k, v in _PLAN_SHORTCUTS.items() if k in names})
    return params


def _plan_into(
    scratch: Path,
    profile: JudgeProfile,
    declared: Mapping[Path, set[str]],
    extra: Mapping[str, Any],
    scale: str,
    log_output: bool,
) -> tuple[list[Path], dict[str, dict[str, Any]]]:
    """Execute the notebooks that take the run's judge in plan mode with ``scratch`` as their run folder; returns
    them and how each rendered its requests. Raises NotebookFailed when one could not be planned."""
    shutil.rmtree(scratch, ignore_errors=True)
    (scratch / "executed").mkdir(parents=True)
    skipped = [nb.name for nb, names in declared.items() if not asks_judge(nb, names)]
    if skipped:
        print(f"[plan] not planned (they do not use the run's judge): {', '.join(skipped)}", flush=True)
    params = _plan_parameters(profile, declared, extra, scale)
    notebooks = list(params)
    env = {"RECJUDGE_RUN_DIR": str(scratch), "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    env |= RunMode(plan_folder=scratch).environment()
    with environment(env):
        results = _plan_notebooks(notebooks, params, scratch, log_output) if notebooks else {}
    methods = {nb.stem: _plan_method(scratch, nb.stem) for nb in notebooks}
    failed = [results[nb] for nb in notebooks if results[nb].status != "ok"]
    failures = [f"{r.notebook} failed at cell {r.failed_cell}: {r.error}" for r in failed]
    if failures:
        raise NotebookFailed("the plan could not render every request: " + "; ".join(failures))
    return notebooks, methods


def plan(
    profile: JudgeProfile,
    run_name: str = DEFAULT_RUN,
    parameters: Mapping[str, Any] | None = None,
    only: Sequence[str] | None = None,
    root: Path | None = None,
    scale: str = "demo",
    log_output: bool = False,
    force: bool = False,
) -> dict[str, Any]:
    """Execute the notebooks in plan mode (every request recorded, none sent, no recommender trained or stored;
    ``runs/<run>/plan/``) and write ``runs/<run>/plan.json``: per notebook and in total, how the requests were
    rendered (stored recommenders or stand-ins), calls, tokens (with the rule used), cost with and without Batch,
    and hours. Needs no API key.

    The plan is not made again when ``plan.json`` holds one made from the same notebooks, parameters, judge, scale,
    package and data (its ``cache_key``, :func:`.execution_cache.plan_key`), unless ``force``."""
    root, declared, extra = _selection(root, only, parameters)
    folder = run_dir(run_name)
    key = plan_key(_plan_parameters(profile, declared, extra, scale), scale)
    earlier = _earlier(folder / PLAN_JSON)
    if not force and earlier.get("cache_key") == key:
        print(f"[plan {run_name}] the notebooks, parameters, judge and package are those of the plan in {PLAN_JSON}: "
              "it is kept (--force plans again)", flush=True)  # fmt: skip
        return earlier
    scratch = folder / "plan"
    notebooks, methods = _plan_into(scratch, profile, declared, extra, scale, log_output)
    table = plan_summary(scratch, profile, [nb.stem for nb in notebooks])
    summary = {
        "judge": profile.to_dict(),
        "scale": scale,
        "parameters": extra,
        "latency_s": table.attrs["latency_s"],
        "latency_source": table.attrs["latency_source"],
        "prices_per_million": list(table.attrs["prices"]),
        "prompt_token_rule": table.attrs["prompt_token_rule"],
        "completion_token_rule": table.attrs["completion_token_rule"],
        "recommenders": methods,
        "notebooks": table.to_dict("records"),
        **({"members": table.attrs["members"]} if "members" in table.attrs else {}),  # a panel: each member's plan
        "cache_key": key,
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / PLAN_JSON).write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
    return summary


class MissingAnswers(ValueError):
    """An offline run would ask for answers the cache does not hold; the message gives the count per notebook and
    what to do. Raised before any notebook runs (the command line: exit code 2)."""


@dataclass(frozen=True)
class CacheCheck:
    """One notebook of an offline check: the distinct requests its plan rendered exactly, how many of those the
    cache does not answer, how many more failed when the run was made (its judgment log says so: no answer exists,
    and offline they fail again), and what the check could not see (chained requests, stand-in recommenders)."""

    notebook: str
    requests: int
    missing: int
    chained: int = 0
    stand_ins: str = ""
    failed_before: int = 0

    @property
    def unchecked(self) -> str:
        """What was left unchecked, in words (empty: every request was checked)."""
        if self.stand_ins:
            return f"the plan rendered its requests from stand-in lists for {self.stand_ins} (no stored model)"
        if self.chained:
            return f"{self.chained} chained requests (their prompts hold earlier answers, which a plan only estimates)"
        return ""


def _failed_keys(log: Path) -> set[str]:
    """Cache keys a judgment log says were asked and never answered (every call of them failed)."""
    calls = [c for r in read_jsonl(log) for c in logged_calls(r)]  # a panel's record: its members' calls
    failed = {str(c.get("cache_key")) for c in calls if c.get("status") == "error"}
    return failed - {str(c.get("cache_key")) for c in calls if c.get("status") != "error"}


def _cache_checks(
    scratch: Path, notebooks: Sequence[Path], methods: Mapping[str, dict[str, Any]], run_folder: Path
) -> list[CacheCheck]:
    """Per planned notebook: its exactly rendered requests (distinct cache keys), those the cache lacks, and of
    those the ones that failed when the run was made (``run_folder``'s logs)."""
    checks = []
    for nb in notebooks:
        records = [r for path in plan_files(scratch, nb.stem) for r in read_jsonl(path)]
        exact = {str(r["cache_key"]): bool(r.get("cached")) for r in records if not r.get("chained")}
        chained = {str(r["cache_key"]) for r in records if r.get("chained")}
        stand_ins = str(methods.get(nb.stem, {}).get("stand_ins") or "")
        if stand_ins:  # requests rendered from stand-in lists are not the ones the run will make
            checks.append(CacheCheck(nb.stem, 0, 0, len(chained), stand_ins))
            continue
        absent = {key for key, cached in exact.items() if not cached}
        failed = absent & _failed_keys(run_folder / nb.stem / "judgments.jsonl")
        checks.append(CacheCheck(nb.stem, len(exact), len(absent - failed), len(chained), "", len(failed)))
    return checks


def check_offline(
    profile: JudgeProfile,
    run_name: str = DEFAULT_RUN,
    parameters: Mapping[str, Any] | None = None,
    only: Sequence[str] | None = None,
    root: Path | None = None,
    scale: str = "demo",
    log_output: bool = False,
) -> list[CacheCheck]:
    """Before an offline run (``run --offline``): plan it (every request rendered as the run will render it, none
    sent) and count per notebook the requests the cache does not answer; raise :class:`MissingAnswers` when any.
    A request whose every call failed when the run was made (the run folder's judgment logs say so) is not missing:
    no answer exists, and offline it fails again, as it did.

    A plan rather than the judgment log of an earlier run of the same name: the log says what was asked then, with
    that run's code, parameters and scale, and an offline run is most often made because one of those changed (a
    prompt edited, a parameter set); the plan renders the requests this run will make. It cannot check what it only
    estimates: chained requests (their prompts hold earlier answers) and the requests of a notebook whose models are
    not stored (rendered from stand-in lists); those are named as unchecked. Nor can it check a run whose endpoint
    adapted its requests (``endpoint_adaptations.json``): the plan renders them unadapted, so the check is skipped.
    The plan runs in a temporary folder; nothing is written into the run's."""
    root, declared, extra = _selection(root, only, parameters)
    if profile.computes_answers:
        return []  # the simulated judge (or a panel of them) answers offline whatever the cache holds
    adaptations = run_dir(run_name) / ADAPTATIONS_FILE
    if adaptations.exists() and json.loads(adaptations.read_text(encoding="utf-8")):
        print(
            f"[offline] not checked against the cache: the endpoint adapted this run's requests ({adaptations}), "
            "and a plan renders them unadapted; a missing answer will show as an error in its notebook",
            flush=True,
        )
        return []
    started = time.perf_counter()
    print("[offline] planning the run to check that the cache answers every request it will make", flush=True)
    with tempfile.TemporaryDirectory(prefix=f"recjudge-offline-check-{run_name}-") as tmp:
        scratch = Path(tmp)
        notebooks, methods = _plan_into(scratch, profile, declared, extra, scale, log_output)
        checks = _cache_checks(scratch, notebooks, methods, run_dir(run_name))
    seconds = time.perf_counter() - started
    unchecked = [f"  {c.notebook}: {c.unchecked}" for c in checks if c.unchecked]
    failed = [
        f"  {c.notebook}: {c.failed_before} requests failed when the run was made; offline they fail again"
        for c in checks
        if c.failed_before
    ]
    lacking = [c for c in checks if c.missing]
    if lacking:
        rows = [
            f"  {c.notebook}: {c.missing} of {c.requests} requests not in the cache"
            + (f" (and {c.failed_before} that failed when the run was made)" if c.failed_before else "")
            for c in lacking
        ]
        raise MissingAnswers(
            "\n".join(
                [
                    f"the cache does not answer every request run {run_name!r} would make offline (checked by a plan "
                    f"in {seconds:.0f} s), so those requests would end as errors; no notebook run:",
                    *rows,
                    *(["not checked:", *unchecked] if unchecked else []),
                    "Run it with its judge online to fill the cache (python -m recjudge_utils.book run --run "
                    f"{run_name} --judge PROFILE, without --offline), or import the run's archive (python -m "
                    "recjudge_utils.book replay ARCHIVE).",
                ]
            )
        )
    total = sum(c.requests - c.failed_before for c in checks)
    print(f"[offline] the cache answers all {total} requests checked (plan: {seconds:.0f} s)", flush=True)
    for line in failed:
        print(f"[offline]{line[1:]}", flush=True)
    for line in unchecked:
        print(f"[offline] not checked:{line[1:]}", flush=True)
    return checks
