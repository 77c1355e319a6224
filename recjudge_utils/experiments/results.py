"""``results.json``: every headline number a notebook computed, in one documented schema.

Each paper notebook writes ``<run folder>/<notebook>/results.json``::

    {
      "schema": "recjudge-results/1",
      "notebook": "01_serendipity_prompt_selection",
      "experiment": "prompt_selection",
      "judge": {"name": "embedded", "model_name": "SmolLM2-135M-Instruct (...)", "kind": "llm"},
      "data": "Serendipity-2018 proxy stand-in ... [STAND-IN]",
      "results": [
        {"metric": "mae", "group": {"template": "cot"}, "value": 1.7, "low": 0.9, "high": 2.5, "n": 10,
         "interval": "95% percentile bootstrap"},
        ...
      ],
      "items": {"scores": [{"template": "cot", "user": 17, "item": 302, "label": 4}, ...]},
      "judgments": {"n": 40, "parsed": 38, "unparsed": 2, "error": 0}
    }

``results`` are the headline numbers, each with its CI (``low``/``high``, null when none), the number of units
behind it (``n``) and how the interval was made. ``items`` are the per-item labels (one list per kind of
judgment), so judges can be compared on the items both judged. ``judgments`` counts this notebook's judgments by
status (cache hits included), so a chapter whose judge answered nothing usable still says so in its results. The
file holds nothing that changes between two executions of the same answers (no timings, no dates): a replay from an
archive reproduces it byte for byte.
``kind`` is ``"simulated"`` for the simulated judge, which the book never mixes into an LLM table.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from recjudge_utils.experiments.run import Result, Run
from recjudge_utils.files import atomic_write_text
from recjudge_utils.judge.backends.sim import SIM_PREFIX
from recjudge_utils.judge.types import Judge
from recjudge_utils.judge.usage import usage_total
from recjudge_utils.paths import current_run_dir

__all__ = [
    "RESULTS_FILE",
    "SCHEMA",
    "USAGE_FILE",
    "judge_kind",
    "read_results",
    "write_results",
    "write_run_results",
]

SCHEMA = "recjudge-results/1"
RESULTS_FILE = "results.json"
#: beside it: what this execution of the notebook cost (calls, cache hits, tokens, dollars: the judge's usage TOTAL,
#: :func:`~recjudge_utils.judge.usage.usage_total`); kept apart because a replay reproduces ``results.json`` exactly
#: while paying for nothing
USAGE_FILE = "usage.json"


def judge_kind(model_name: str) -> str:
    """``"simulated"`` for the simulated judge's model name, else ``"llm"`` (the book keeps the two apart)."""
    return "simulated" if model_name.startswith(SIM_PREFIX) else "llm"


def _json(o: Any) -> Any:
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, float) and not math.isfinite(o):
        return None if math.isnan(o) else ("inf" if o > 0 else "-inf")
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _finite(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj


def _judgment_counts(judge: Judge) -> dict[str, int]:
    """This notebook's judgments by status (cache hits included): what ``results.json`` records as ``judgments``."""
    usage = usage_total(judge)
    counts = {
        k: int(usage.get(field) or 0)
        for k, field in (("parsed", "parsed"), ("unparsed", "unparsed"), ("error", "errors"))
    }
    return {"n": sum(counts.values()), **counts}


def _write_usage(judge: Judge, target: Path) -> None:
    usage = usage_total(judge)
    if usage:
        target.write_text(json.dumps(_finite(usage), indent=1, sort_keys=True) + "\n", encoding="utf-8")


def write_results(
    notebook: str,
    experiment: str,
    judge: Judge,
    data: str,
    results: Sequence[Result],
    items: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    folder: Path | None = None,
) -> Path:
    """Write ``results.json`` for one notebook of the current run; returns its path."""
    judge_name = judge.model_name
    profile_name = str(getattr(judge, "profile_name", judge_name))
    target = (folder or current_run_dir() / notebook) / RESULTS_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "schema": SCHEMA,
        "notebook": notebook,
        "experiment": experiment,
        "judge": {"name": profile_name, "model_name": judge_name, "kind": judge_kind(judge_name)},
        "data": data,
        "results": [r.record() for r in results],
        "items": {k: [dict(row) for row in rows] for k, rows in (items or {}).items()},
        "judgments": _judgment_counts(judge),
    }
    text = json.dumps(_finite(payload), indent=1, sort_keys=True, default=_json, allow_nan=False)
    atomic_write_text(target, text + "\n")
    _write_usage(judge, target.parent / USAGE_FILE)
    return target


def write_run_results(
    notebook: str, run: Run, judge: Judge, folder: Path | None = None, *, also: Sequence[Run] = ()
) -> Path:
    """Write ``results.json`` for one experiment's :class:`Run`: its results and items, as computed. ``also``: the
    notebook's other experiments (chapter 3's transparency run), their results and items after the first's, which
    names the experiment and the data; a kind of item two runs give raises."""
    items: dict[str, list[dict[str, Any]]] = {}
    for other in (run, *also):
        if clash := set(items) & set(other.items()):
            raise ValueError(f"{notebook}: two runs give items of kind {sorted(clash)}")
        items |= other.items()
    results = [r for other in (run, *also) for r in other.results()]
    return write_results(notebook, run.experiment, judge, run.data_label, results, items, folder=folder)


def read_results(path: Path) -> dict[str, Any]:
    """One ``results.json``, checked against the schema."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if data.get("schema") != SCHEMA:
        raise ValueError(f"{path}: schema {data.get('schema')!r}, expected {SCHEMA!r}")
    return data
