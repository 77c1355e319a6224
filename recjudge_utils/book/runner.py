"""Execute the notebooks of one named run with papermill, and build the Jupyter Book from a run.

A run lives in ``runs/<name>/``: ``executed/`` (the executed notebooks), ``manifest.json`` and ``run_manifest.md``
(what produced them), and one folder per notebook with its judgment log and ``results.json``. Runs coexist; the
answer cache (``runs/cache.sqlite``) and the trained recommenders (``runs/artifacts/``) are shared by all of them.

Parameters reach each notebook that declares them: the judge profile as the one ``judge`` parameter, the scale's
values (:mod:`recjudge_utils.book.scales`), then every ``-p NAME VALUE`` (VALUE read as YAML). A name no notebook
declares is an error; the API key is never a parameter (the judge client reads it from the environment).
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import nbformat
import yaml

from recjudge_utils import __version__
from recjudge_utils.book.scales import scale_parameters
from recjudge_utils.book.usage import actual_usage, log_offsets, plan_summary
from recjudge_utils.judge.profiles import JudgeProfile
from recjudge_utils.paths import DEFAULT_RUN, project_root, runs_dir
from recjudge_utils.recommenders.artifacts import compute_log

__all__ = [
    "NotebookFailed",
    "NotebookRun",
    "RunManifest",
    "build_book",
    "declared_parameters",
    "execute_notebook",
    "parse_parameter_value",
    "run",
    "run_dir",
    "select_notebooks",
]

HIDDEN_CELL_TAGS = ("parameters", "injected-parameters")
PLAN_JSON = "plan.json"
SECRET_PARAMETERS = {"api_key", "openai_api_key"}
SECRET_PARAMETER_MESSAGE = "the API key is read from the environment (the profile's api_key_env), never a parameter"


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
    notebooks: list[NotebookRun] = field(default_factory=list)
    plan: dict[str, Any] | None = None
    actual: dict[str, Any] | None = None
    #: seconds spent training or tuning recommenders in this run (0 when every model was a stored artifact)
    training_seconds: float = 0.0

    @property
    def model(self) -> str:
        return str(self.judge.get("model"))


#: the parameter through which a notebook receives the run's judge profile
JUDGE_PARAMETER = "judge"


class NotebookFailed(RuntimeError):
    """A notebook raised during execution; the message names the notebook and its failing cell."""


def parse_parameter_value(text: str) -> Any:
    """Read a ``-p`` value the way papermill's CLI does: as YAML, falling back to the raw string."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def declared_parameters(notebook: Path) -> set[str]:
    """Names assigned in the cell tagged ``parameters``.

    Read with ``ast`` rather than papermill's line-by-line inspection, which skips an assignment whose
    comment contains quotes (``judge = "embedded"  # "embedded" = the default``).
    """
    nb = nbformat.read(notebook, as_version=4)
    names: set[str] = set()
    for cell in nb.cells:
        if cell.cell_type != "code" or "parameters" not in cell.get("metadata", {}).get("tags", []):
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError as exc:
            raise SystemExit(f"{notebook.name}: the parameters cell is not valid Python ({exc})") from exc
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


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


def tidy_executed_notebook(path: Path) -> None:
    """Prepare an executed copy for the book: collapse the parameters / injected-parameters cells."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if any(tag in tags for tag in HIDDEN_CELL_TAGS) and "hide-cell" not in tags:
            cell["metadata"]["tags"] = [*tags, "hide-cell"]
    nbformat.write(nb, path)


def describe_failure(exc: Exception) -> tuple[int | None, str]:
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
        run_.failed_cell, run_.error = describe_failure(exc)
    run_.seconds = round(time.perf_counter() - started, 1)
    if output.exists():
        tidy_executed_notebook(output)
    return run_


def run_dir(name: str) -> Path:
    """``runs/<name>/``; a name is a plain folder name."""
    if not name or "/" in name or name.startswith(".") or name in ("artifacts",):
        raise SystemExit(f"run name {name!r}: use a plain folder name (not 'artifacts')")
    return runs_dir() / name


def select_notebooks(notebook_dir: Path, only: Sequence[str] | None) -> list[Path]:
    notebooks = sorted(notebook_dir.glob("*.ipynb"))
    if only:
        notebooks = [nb for nb in notebooks if any(nb.name.startswith(prefix) for prefix in only)]
        if not notebooks:
            raise SystemExit(f"no notebook in {notebook_dir} starts with any of {list(only)}")
    return notebooks


def manifest_markdown(manifest: RunManifest) -> str:
    """The manifest as a book page, so every published report says what produced it."""
    judge = manifest.judge
    lines = [
        "# Run manifest",
        "",
        f"What produced the executed notebooks of run `{manifest.run}`. Rerun it with `make book`, or with",
        "another judge: `python -m recjudge_utils.book --run NAME --judge judges/PROFILE.yaml [--scale paper]`.",
        "",
        "| field | value |",
        "| --- | --- |",
        f"| run | `{manifest.run}` |",
        f"| judge profile | `{judge.get('name')}` (backend `{judge.get('backend') or ''}`) |",
        f"| judge model | `{judge.get('model')}` |",
        f"| endpoint | `{judge.get('base_url') or 'embedded / local'}` |",
        f"| scale | {manifest.scale} |",
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
    lines += [f"| {r.notebook} | {r.status} | {r.seconds:.0f} |" for r in manifest.notebooks]
    lines += ["", *plan_beside_actual(manifest)]
    return "\n".join(lines) + "\n"


def plan_beside_actual(manifest: RunManifest) -> list[str]:
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
            "The plan was made by `--plan` before the run; its completion tokens are estimates."
            if plan
            else "Plan a run before paying with `--plan`."
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


def write_manifest(folder: Path, manifest: RunManifest) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.json").write_text(json.dumps(asdict(manifest), indent=2, default=str) + "\n")
    (folder / "run_manifest.md").write_text(manifest_markdown(manifest))


def build_book(root: Path, run_name: str = DEFAULT_RUN) -> None:
    """Copy the run's executed notebooks and manifest page into ``book/executed`` and run
    ``jupyter-book build --all -W`` (warnings are errors, every page is rebuilt)."""
    source = run_dir(run_name) / "executed"
    book_dir = root / "book"
    toc = yaml.safe_load((book_dir / "_toc.yml").read_text())
    wanted = [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])]
    missing = [f for f in wanted if f.startswith("executed/") and not _executed_page(source, f).exists()]
    if missing:
        raise SystemExit(
            f"run {run_name!r} has no executed copy of {', '.join(missing)} (run those notebooks into it first, "
            f"e.g. python -m recjudge_utils.book --run {run_name})"
        )
    target = book_dir / "executed"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    jb = Path(sys.executable).with_name("jupyter-book")
    command = [str(jb) if jb.exists() else "jupyter-book", "build", str(book_dir), "--all", "-W", "--keep-going"]
    print("building the book:", " ".join(command), flush=True)
    subprocess.run(command, check=True)


def _executed_page(source: Path, toc_file: str) -> Path:
    stem = toc_file.removeprefix("executed/")
    ipynb, md = source / f"{stem}.ipynb", source / f"{stem}.md"
    return ipynb if ipynb.exists() or not md.exists() else md


def _selection(
    root: Path | None, only: Sequence[str] | None, parameters: Mapping[str, Any] | None
) -> tuple[Path, dict[Path, set[str]], dict[str, Any]]:
    """The checkout, the selected notebooks with the parameters each declares, and the checked ``-p`` values."""
    root = root or project_root()
    if root is None:
        raise SystemExit("recjudge_utils.book needs a checkout of the recjudge repository (notebooks/ and book/)")
    notebooks = select_notebooks(root / "notebooks", only)
    extra = dict(parameters or {})
    if SECRET_PARAMETERS & {name.lower() for name in extra}:
        raise SystemExit(SECRET_PARAMETER_MESSAGE)
    declared = {nb: declared_parameters(nb) for nb in notebooks}
    unknown = set(extra) - set().union(*declared.values())
    if unknown:
        raise SystemExit(f"parameters {sorted(unknown)} are declared by none of {[nb.name for nb in notebooks]}")
    return root, declared, extra


def _notebook_parameters(
    notebook: Path, declared: set[str], profile: JudgeProfile, scale: str, extra: Mapping[str, Any]
) -> dict[str, Any]:
    """The judge profile, then the scale's values, then ``-p``: each only if the notebook declares it."""
    wanted = {JUDGE_PARAMETER: profile.to_dict(), **scale_parameters(scale, notebook.name), **extra}
    return {name: value for name, value in wanted.items() if name in declared}


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
) -> RunManifest:
    """Execute the notebooks into ``runs/<run_name>/``, write the manifest, build the book from that run.

    ``offline``: the notebooks' judges answer only from the cache (a replay of an imported archive).

    Raises:
        NotebookFailed: a notebook raised; every failed notebook is named with its cell and error.
    """
    root, declared, extra = _selection(root, only, parameters)
    notebooks = list(declared)
    folder = run_dir(run_name)
    out_dir = folder / "executed"
    out_dir.mkdir(parents=True, exist_ok=True)

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
    started = time.perf_counter()
    # usage, plan and cost cover the notebooks that judge with the run's profile (declare ``judge``); chapter 5's
    # simulated judge is a teaching tool, not this run's judge, and its calls are not this judge's bill
    offsets = log_offsets(folder, [nb.stem for nb in notebooks if JUDGE_PARAMETER in declared[nb]])
    computed_before = len(compute_log())
    env = {
        "RECJUDGE_RUN_DIR": str(folder),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        "RECJUDGE_OFFLINE": "1" if offline else "0",
    }
    with environment(env):
        for nb in notebooks:
            params = _notebook_parameters(nb, declared[nb], profile, scale, extra)
            shown = {k: (v.get("name") if k == "judge" and isinstance(v, dict) else v) for k, v in params.items()}
            print(f"[{nb.name}] running with {shown}", flush=True)
            result = execute_notebook(nb, out_dir / nb.name, params, log_output)
            manifest.notebooks.append(result)
            where = f" at cell {result.failed_cell}" if result.failed_cell else ""
            print(f"[{nb.name}] {result.status} in {result.seconds:.0f} s{where}", flush=True)
            if result.error:
                print(f"[{nb.name}] {result.error}", flush=True)
    manifest.seconds = round(time.perf_counter() - started, 1)
    manifest.training_seconds = round(
        sum(e["seconds"] for e in compute_log(start=computed_before) if not e["nested"]), 1
    )
    manifest.finished_utc = datetime.now(UTC).isoformat(timespec="seconds")
    seconds = {Path(r.notebook).stem: r.seconds for r in manifest.notebooks}
    manifest.actual = {"notebooks": actual_usage(folder, offsets, seconds).to_dict("records")}
    plan_path = folder / PLAN_JSON
    if plan_path.exists():
        manifest.plan = json.loads(plan_path.read_text(encoding="utf-8"))
    write_manifest(folder, manifest)
    shutil.copy2(folder / "run_manifest.md", out_dir / "run_manifest.md")

    failures = [r for r in manifest.notebooks if r.status != "ok"]
    if failures:
        details = "; ".join(f"{r.notebook} failed at cell {r.failed_cell}: {r.error}" for r in failures)
        raise NotebookFailed(f"{len(failures)} notebook(s) failed: {details} (executed copies in {out_dir})")
    if build:
        build_book(root, run_name)
        print(f"book built: {root / 'book' / '_build' / 'html' / 'index.html'}", flush=True)
    return manifest


def plan(
    profile: JudgeProfile,
    run_name: str = DEFAULT_RUN,
    parameters: Mapping[str, Any] | None = None,
    only: Sequence[str] | None = None,
    root: Path | None = None,
    scale: str = "demo",
    log_output: bool = False,
) -> dict[str, Any]:
    """Execute the notebooks in plan mode (every request recorded, none sent; ``runs/<run>/plan/``) and write
    ``runs/<run>/plan.json``: calls, tokens, cost with and without Batch, and hours, per notebook and in total."""
    root, declared, extra = _selection(root, only, parameters)
    folder = run_dir(run_name)
    scratch = folder / "plan"
    shutil.rmtree(scratch, ignore_errors=True)
    (scratch / "executed").mkdir(parents=True)
    skipped = [nb.name for nb, names in declared.items() if JUDGE_PARAMETER not in names]
    if skipped:
        print(f"[plan] not planned (they do not use the run's judge): {', '.join(skipped)}", flush=True)
    notebooks = [nb for nb, names in declared.items() if JUDGE_PARAMETER in names]
    failures = []
    with environment(
        {"RECJUDGE_RUN_DIR": str(scratch), "RECJUDGE_PLAN": str(scratch), "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    ):
        for nb in notebooks:
            params = _notebook_parameters(nb, declared[nb], profile, scale, extra)
            print(f"[plan {nb.name}] rendering every request, calling nothing", flush=True)
            result = execute_notebook(nb, scratch / "executed" / nb.name, params, log_output)
            if result.status != "ok":
                failures.append(f"{nb.name} failed at cell {result.failed_cell}: {result.error}")
    if failures:
        raise NotebookFailed("the plan could not render every request: " + "; ".join(failures))
    table = plan_summary(scratch, profile, [nb.stem for nb in notebooks])
    summary = {
        "judge": profile.to_dict(),
        "scale": scale,
        "parameters": extra,
        "latency_s": table.attrs["latency_s"],
        "latency_source": table.attrs["latency_source"],
        "prices_per_million": list(table.attrs["prices"]),
        "notebooks": table.to_dict("records"),
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / PLAN_JSON).write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
    return summary
