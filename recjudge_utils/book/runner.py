"""Execute the notebooks of one named run with papermill, and record the run in its manifest.

A run lives in ``runs/<name>/``: ``executed/`` (the executed notebooks), ``manifest.json`` and ``run_manifest.md``
(:mod:`recjudge_utils.manifest`: what produced them, and how healthy the judge was: parsed, unparsed and failed
answers per notebook), and one folder per notebook with its judgment log and ``results.json``. Runs coexist; the
answer cache (``runs/cache.sqlite``) and the trained recommenders (``runs/artifacts/``) are shared by all of them.
An offline run (answers from the cache only) is checked first by a plan
(:func:`recjudge_utils.book.planner.check_offline`).

Holds :func:`run` (every selected notebook executed, or kept when unchanged since its execution, then the usage and
the judge's health recorded; the book built from the run unless told not to) and :func:`execute_notebook`. Which
notebooks and which parameters: :mod:`recjudge_utils.book.notebooks`; building the book:
:mod:`recjudge_utils.book.build`. A failing notebook raises :class:`~recjudge_utils.book.notebooks.NotebookFailed`.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from recjudge_utils._extras import optional_imports
from recjudge_utils.book.build import build_book
from recjudge_utils.book.execution_cache import notebook_key, runs_digest
from recjudge_utils.book.notebooks import (
    READS_ALL_RESULTS,
    NotebookFailed,
    asks_judge,
    environment,
    notebook_parameters,
    read_earlier,
    run_dir,
    selection,
)
from recjudge_utils.book.planner import PLAN_JSON
from recjudge_utils.book.run_logs import actual_usage, health_line, judge_health, log_offsets
from recjudge_utils.judge.backends.openai_compatible import ADAPTATIONS_FILE
from recjudge_utils.judge.profile import JudgeProfile, same_judge
from recjudge_utils.judge.usage import with_total
from recjudge_utils.manifest import MANIFEST_PAGE_FILE, NotebookRun, RunManifest, git_commit
from recjudge_utils.paths import DEFAULT_RUN, MANIFEST_FILE, SELECTED_TEMPLATE_FILE, RunMode
from recjudge_utils.protocols.pointwise_score import choose_template
from recjudge_utils.recommenders.artifacts import compute_log

with optional_imports("book"):
    import nbformat

__all__ = ["execute_notebook", "run", "template_selection_line"]


_HIDDEN_CELL_TAGS = ("parameters", "injected-parameters")


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


def template_selection_line(selected_file: Path) -> str:
    """The run summary's line on chapter 1's selection, and what chapter 7 then judges with (chapter 2 uses its own
    ``template`` parameter, CoT unless set)."""
    choice = choose_template(None, selected_file)
    if choice.why == "chapter 1's selection in this run":
        return f"template selection: chapter 1 selected {choice.template}; chapter 7 judges with it"
    return f"template selection: {choice.template}, {choice.why} (chapter 2 uses its template parameter)"


def _record(folder: Path, manifest: RunManifest) -> None:
    """Write the run's manifest, with what its judge's endpoint rejected so far (``endpoint_adaptations.json``)."""
    adaptations = folder / ADAPTATIONS_FILE
    if adaptations.exists():
        manifest.endpoint_adaptations = json.loads(adaptations.read_text(encoding="utf-8"))
    manifest.write(folder)


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
    if not same_judge(planned, profile) or summary.get("scale") != scale:
        print(f"[run] ignoring {PLAN_JSON}: it plans judge {planned.get('name')!r} at scale {summary.get('scale')!r}")
        return None
    return summary


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
    root, declared, extra = selection(root, only, parameters)
    notebooks = list(declared)
    folder = run_dir(run_name)
    out_dir = folder / "executed"
    out_dir.mkdir(parents=True, exist_ok=True)
    params_of = {nb: notebook_parameters(nb, declared[nb], profile, scale, extra) for nb in notebooks}
    previous = read_earlier(folder / MANIFEST_FILE)

    def key_of(nb: Path) -> str:  # computed when its turn comes: the chapter reading every run reads them then
        other_runs = runs_digest(exclude=run_name) if nb.name == READS_ALL_RESULTS else None
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
        return RunManifest.from_json(previous)

    manifest = RunManifest(run_name, profile.to_dict(), scale, extra, git_commit=git_commit(root))
    plan_path = folder / PLAN_JSON
    if plan_path.exists():
        manifest.plan = _matching_plan(json.loads(plan_path.read_text(encoding="utf-8")), profile, scale)
    manifest.notebooks = [NotebookRun(nb.name, str(out_dir / nb.name), params_of[nb]) for nb in notebooks]
    _record(folder, manifest)  # preliminary: chapter 6 names this run's judge while it executes
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
                manifest.notebooks[i] = NotebookRun.from_json(earlier, reused=True)
                _record(folder, manifest)
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
            _record(folder, manifest)
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
    _record(folder, manifest)
    shutil.copy2(folder / MANIFEST_PAGE_FILE, out_dir / MANIFEST_PAGE_FILE)
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
