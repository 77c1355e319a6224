"""What a run cost: calls, tokens, dollars and time, planned before (``--plan``) and measured after.

The plan reads the ``plan.jsonl`` records the plan backend wrote (:mod:`recjudge_utils.judge.planning`); the actual
usage reads the judgment logs (``judgments.jsonl``) of the run's notebooks. Both are summarised per notebook in the
same columns, so the manifest can show plan beside actual. Wall time is planned from the latency of earlier calls
of the same judge (same model and endpoint, in any run), or a stated default when there are none.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from recjudge_utils.judge.planning import PLAN_FILE
from recjudge_utils.judge.pricing import BATCH_DISCOUNT, PriceTable
from recjudge_utils.judge.profiles import JudgeProfile
from recjudge_utils.paths import runs_dir

__all__ = ["DEFAULT_LATENCY_S", "actual_usage", "judge_latency", "plan_summary", "read_jsonl"]

#: seconds per call when no earlier run of this judge has measured it (embedded: measured here on 2 cores)
DEFAULT_LATENCY_S = {"embedded": 6.0, "openai": 2.0, "batch": 2.0, "sim": 0.0}
PLAN_COLUMNS = [
    "notebook",
    "calls",
    "cached",
    "prompt_tokens",
    "completion_tokens",
    "estimated_calls",
    "cost_usd",
    "cost_usd_batch",
    "hours",
]


def with_total(table: pd.DataFrame) -> pd.DataFrame:
    """The table with a TOTAL row; integer columns stay integers."""
    ints = [c for c in table.columns if c != "notebook" and pd.api.types.is_integer_dtype(table[c])]
    total = table.drop(columns="notebook").sum(numeric_only=True).to_frame().T
    total.insert(0, "notebook", "TOTAL")
    out = pd.concat([table, total], ignore_index=True)
    return out.astype({c: "int64" for c in ints})


def read_jsonl(path: Path, start: int = 0) -> list[dict[str, Any]]:
    """The records of a JSONL file from line ``start`` (0-based)."""
    if not path.exists():
        return []
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for k, line in enumerate(fh) if k >= start and line.strip()]


def _prices(profile: JudgeProfile) -> tuple[float, float]:
    if profile.prices is not None:
        return float(profile.prices["input"]), float(profile.prices["output"])
    price = PriceTable().price(profile.model_for_prices())
    return (price["input"], price["output"]) if price else (float("nan"), float("nan"))


@dataclass(frozen=True)
class Latency:
    seconds: float
    source: str


def judge_latency(profile: JudgeProfile, exclude: Path | None = None) -> Latency:
    """Mean seconds per fresh call of this judge in earlier runs (same model), or the stated default."""
    samples: list[float] = []
    for log in runs_dir().glob("*/*/judgments.jsonl"):
        if exclude is not None and exclude in log.parents:
            continue
        for rec in read_jsonl(log):
            if rec.get("cache_hit") or rec.get("status") == "error" or rec.get("route") in ("plan", "sim"):
                continue
            if rec.get("model_name") and profile.backend_name != "embedded" and rec.get("model") != profile.model:
                continue
            if profile.backend_name == "embedded" and not str(rec.get("endpoint", "")).startswith("local:"):
                continue
            if isinstance(rec.get("latency_s"), int | float):
                samples.append(float(rec["latency_s"]))
    if samples:
        return Latency(sum(samples) / len(samples), f"mean of {len(samples)} earlier calls of this judge")
    default = DEFAULT_LATENCY_S.get(profile.backend_name, 2.0)
    return Latency(default, f"default {default:g} s per call (no earlier run of this judge)")


def plan_summary(run_folder: Path, profile: JudgeProfile, notebooks: Iterable[str]) -> pd.DataFrame:
    """Per notebook and in total: calls the run would pay for (cached ones excluded), tokens, cost with and
    without Batch, and hours at the profile's concurrency. ``estimated_calls`` counts chained requests whose
    prompt depends on earlier answers (their tokens are estimates; every completion-token count is one)."""
    price_in, price_out = _prices(profile)
    latency = judge_latency(profile, exclude=run_folder)
    rows = []
    for nb in notebooks:
        records = read_jsonl(run_folder / nb / PLAN_FILE)
        fresh = [r for r in records if not r["cached"]]
        pt = sum(r["prompt_tokens"] for r in fresh)
        ct = sum(r["completion_tokens"] for r in fresh)
        cost = (pt * price_in + ct * price_out) / 1e6
        rows.append(
            {
                "notebook": nb,
                "calls": len(fresh),
                "cached": len(records) - len(fresh),
                "prompt_tokens": pt,
                "completion_tokens": ct,
                "estimated_calls": sum(bool(r["chained"]) for r in fresh),
                "cost_usd": cost,
                "cost_usd_batch": cost * BATCH_DISCOUNT,
                "hours": len(fresh) * latency.seconds / max(1, profile.max_concurrency) / 3600,
            }
        )
    table = with_total(pd.DataFrame(rows, columns=PLAN_COLUMNS))
    table.attrs.update(latency_s=latency.seconds, latency_source=latency.source, prices=(price_in, price_out))
    return table


def actual_usage(run_folder: Path, offsets: Mapping[str, int], seconds: Mapping[str, float]) -> pd.DataFrame:
    """Per notebook and in total, from the judgment logs written by this execution (lines after ``offsets``):
    judgments, paid calls, cache hits, errors, tokens and cost of the paid calls, and the notebook's wall time."""
    rows = []
    for nb, start in offsets.items():
        recs = read_jsonl(run_folder / nb / "judgments.jsonl", start)
        paid = [r for r in recs if not r.get("cache_hit") and r.get("status") != "error"]
        rows.append(
            {
                "notebook": nb,
                "judgments": len(recs),
                "calls": len(paid),
                "cache_hits": sum(bool(r.get("cache_hit")) for r in recs),
                "errors": sum(r.get("status") == "error" for r in recs),
                "unparsed": sum(r.get("status") == "unparsed" for r in recs),
                "prompt_tokens": sum(int(r.get("prompt_tokens") or 0) for r in paid),
                "completion_tokens": sum(int(r.get("completion_tokens") or 0) for r in paid),
                "cost_usd": sum(float(r.get("cost_usd") or 0.0) for r in paid),
                "hours": float(seconds.get(nb, 0.0)) / 3600,
            }
        )
    return with_total(pd.DataFrame(rows)) if rows else pd.DataFrame(rows)


def log_offsets(run_folder: Path, notebooks: Iterable[str]) -> dict[str, int]:
    """Lines already in each notebook's judgment log (a rerun into the same run appends to it)."""
    out = {}
    for nb in notebooks:
        path = run_folder / nb / "judgments.jsonl"
        if path.exists():
            with open(path, encoding="utf-8") as fh:
                out[nb] = sum(1 for _ in fh)
        else:
            out[nb] = 0
    return out
