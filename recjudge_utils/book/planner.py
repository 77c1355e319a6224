"""The plan of a run: its notebooks executed with every request rendered and none sent, and the offline check.

Holds :func:`plan` (``runs/<run>/plan.json``: calls, tokens, cost and hours per notebook before paying), the plan
kernel (:class:`_PlanKernel`: one kernel for every notebook of a plan), how each notebook rendered its requests
(stored recommenders or stand-ins), and :func:`check_offline` (before an offline run: does the cache answer every
request the run will make; :class:`CacheCheck` per notebook, :class:`MissingAnswers` when not).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recjudge_utils._extras import optional_imports
from recjudge_utils.book.execution_cache import plan_key
from recjudge_utils.book.notebooks import (
    NotebookFailed,
    asks_judge,
    environment,
    notebook_parameters,
    read_earlier,
    run_dir,
    selection,
)
from recjudge_utils.book.plan_estimate import METHOD_FILE, plan_summary
from recjudge_utils.judge.backends.openai_compatible import ADAPTATIONS_FILE
from recjudge_utils.judge.planning import plan_files
from recjudge_utils.judge.profile import JudgeProfile
from recjudge_utils.judge.records import read_jsonl
from recjudge_utils.judge.usage import logged_calls
from recjudge_utils.manifest import NotebookRun
from recjudge_utils.paths import DEFAULT_RUN, RunMode
from recjudge_utils.recommenders.plan_standin import FITTED, METHODS_FILE, STAND_IN, STORED

with optional_imports("book"):
    import nbformat

__all__ = ["PLAN_JSON", "CacheCheck", "MissingAnswers", "check_offline", "plan"]


PLAN_JSON = "plan.json"

#: parameters that change no request of the run's judge, set in plan mode to what costs least: bootstrap resamples of
#: the reported CIs, and chapter 7's simulated-judge section (its own simulated judge, never the run's)
_PLAN_SHORTCUTS: dict[str, Any] = {"n_boot": 20, "sim_users": 0}

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
            params[nb] = notebook_parameters(nb, names, profile, scale, extra)
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
    root, declared, extra = selection(root, only, parameters)
    folder = run_dir(run_name)
    key = plan_key(_plan_parameters(profile, declared, extra, scale), scale)
    earlier = read_earlier(folder / PLAN_JSON)
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
    root, declared, extra = selection(root, only, parameters)
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
