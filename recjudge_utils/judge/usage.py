"""What judging used, counted in one place: calls (fresh or from the cache), tokens, seconds and dollars.

Every usage and cost table reads this module; none sums calls or tokens itself:

* the calls behind one judgment record (:func:`logged_calls`: a panel's record holds its members' calls) and those
  that were paid for (:func:`paid_calls`, :func:`is_paid`: not a cache hit, not failed);
* a judge's table of this session, per template (:func:`usage_table`, behind ``JudgeClient.usage_summary`` and
  ``PanelClient.usage_summary``; one row per judgment from :func:`judgment_usage`), its TOTAL row
  (:func:`usage_total`: a notebook's ``usage.json``) and the sum of several of those (:func:`summed_usage`: a run);
* a notebook's usage from its judgment log's records (:func:`records_usage`), and a TOTAL row under such a table
  (:func:`with_total`: the run manifest's actual and planned usage);
* an experiment's usage from its judgment frames (:func:`frame_usage`, :func:`fresh_calls`; per prompt template:
  :func:`template_usage`) and its time and cost (:class:`TimeCost`, :func:`time_cost`);
* what a measured amount becomes at another scale (:func:`scaled`, :meth:`TimeCost.minutes_at`,
  :meth:`TimeCost.usd_at`).

Dollars are tokens times the model's price (:func:`recjudge_utils.judge.pricing.usd`). The plan (what a run *would*
use, before paying) is estimated apart, from the plan records (:mod:`recjudge_utils.book.plan_estimate`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from recjudge_utils.judge.types import JudgeResult

__all__ = [
    "USAGE_COLUMNS",
    "TimeCost",
    "frame_usage",
    "fresh_calls",
    "is_paid",
    "judgment_usage",
    "logged_calls",
    "paid_calls",
    "records_usage",
    "scaled",
    "summed_usage",
    "template_usage",
    "time_cost",
    "usage_table",
    "usage_total",
    "with_total",
]

#: a judge's usage table (:func:`usage_table`), per template and in total
USAGE_COLUMNS = [
    "template_id",
    "calls",
    "cache_hits",
    "api_calls",
    "parsed",
    "unparsed",
    "budget_spent",
    "errors",
    "prompt_tokens",
    "completion_tokens",
    "reasoning_tokens",
    "cost_usd",
    "seconds",
]


def logged_calls(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The judge calls behind one judgment record: the record itself, or for a judge panel's record each member's
    call (``members``: its cache key, status, usage, cost and cache hit; :mod:`recjudge_utils.judge.panel`)."""
    members = record.get("members")
    return list(members) if isinstance(members, list) else [record]


def is_paid(cache_hit: object, status: object) -> bool:
    """Whether a call was paid for: answered by the judge (not the cache) without error."""
    return not cache_hit and status != "error"


def paid_calls(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The calls behind a judgment record that were paid for (:func:`is_paid`)."""
    return [c for c in logged_calls(record) if is_paid(c.get("cache_hit"), c.get("status"))]


def _tokens(calls: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Prompt, completion and reasoning tokens of ``calls`` (reasoning tokens are part of the completion tokens)."""
    return {
        f"{kind}_tokens": sum(int(c.get(f"{kind}_tokens") or 0) for c in calls)
        for kind in ("prompt", "completion", "reasoning")
    }


def judgment_usage(record: Mapping[str, Any], result: JudgeResult[Any]) -> dict[str, Any]:
    """One judgment's row of its judge's session usage (:func:`usage_table`): its logged ``record`` (status, cache
    hit, the paid calls' tokens) and its ``result`` (dollars, unknown as NaN, and seconds, unrounded)."""
    paid = paid_calls(record)
    return {
        "template_id": record["template_id"],
        "status": result.status,
        "cache_hit": bool(result.cache_hit),
        "api_calls": len(paid),
        **_tokens(paid),
        "budget_spent": bool(result.budget_spent),
        "cost_usd": result.cost_usd,
        "latency_s": result.latency_s,
    }


def usage_table(rows: Sequence[Mapping[str, Any]], model_name: str, total: bool = True) -> pd.DataFrame:
    """Per template (``rows``: one :func:`judgment_usage` per judgment): judgments, cache hits, API calls,
    parsed/unparsed/errors (``budget_spent``: unparsed because the output budget ran out before an answer), tokens
    (reasoning tokens are part of the completion tokens) and dollars spent by API calls (cache hits cost nothing), and
    seconds (summed call latency); with a TOTAL row when ``total``. ``attrs["model"]`` names the judge."""
    cols = USAGE_COLUMNS
    if not rows:
        return pd.DataFrame({c: pd.Series(dtype="float64" if c == "cost_usd" else "int64") for c in cols})
    df = pd.DataFrame(list(rows))
    g = df.groupby("template_id", sort=True)
    out = pd.DataFrame(
        {
            "calls": g.size(),
            "cache_hits": g["cache_hit"].sum(),
            "api_calls": g["api_calls"].sum(),
            "parsed": g["status"].apply(lambda s: int((s == "parsed").sum())),
            "unparsed": g["status"].apply(lambda s: int((s == "unparsed").sum())),
            "budget_spent": g["budget_spent"].sum(),
            "errors": g["status"].apply(lambda s: int((s == "error").sum())),
            "prompt_tokens": g["prompt_tokens"].sum(),
            "completion_tokens": g["completion_tokens"].sum(),
            "reasoning_tokens": g["reasoning_tokens"].sum(),
            "cost_usd": g["cost_usd"].sum(min_count=1),
            "seconds": g["latency_s"].sum().round(2),
        }
    ).reset_index()
    if total:
        tot = out.drop(columns="template_id").sum(numeric_only=True, min_count=1).to_frame().T
        tot.insert(0, "template_id", "TOTAL")
        out = pd.concat([out, tot], ignore_index=True)
    for c in cols[1:]:
        if c not in ("cost_usd", "seconds"):
            out[c] = out[c].astype("int64")
    out.attrs["model"] = model_name
    return out[cols]


def usage_total(judge: object) -> dict[str, Any]:
    """The TOTAL row of a judge's usage table as plain numbers (what a notebook's ``usage.json`` holds); empty for a
    judge without one (a scripted judge) or that judged nothing."""
    summary = getattr(judge, "usage_summary", None)
    table = summary() if callable(summary) else None
    if table is None or table.empty:
        return {}
    total = table[table["template_id"] == "TOTAL"].iloc[0].drop("template_id").to_dict()
    return {k: (v.item() if hasattr(v, "item") else v) for k, v in total.items()}


def summed_usage(usages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Several :func:`usage_total` (a run's notebooks' ``usage.json``) summed key by key, missing values skipped; the
    cost is None when none of them was priced (no cost at all, not $0)."""
    totals = {key: sum(u[key] for u in usages if u.get(key) is not None) for key in {k for u in usages for k in u}}
    if "cost_usd" in totals and not any(u.get("cost_usd") is not None for u in usages):
        totals["cost_usd"] = None
    return totals


def records_usage(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A notebook's judgment log records summed: judgments, paid calls (a panel's judgment: its members' calls), cache
    hits, errors, unparsed (``budget_spent``: of which the output budget ran out before an answer), tokens and dollars
    of the paid calls (an unpriced call counts 0)."""
    paid = [c for r in records for c in paid_calls(r)]
    return {
        "judgments": len(records),
        "calls": len(paid),
        "cache_hits": sum(bool(r.get("cache_hit")) for r in records),
        "errors": sum(r.get("status") == "error" for r in records),
        "unparsed": sum(r.get("status") == "unparsed" for r in records),
        "budget_spent": sum(bool(r.get("budget_spent")) for r in records),
        **_tokens(paid),
        "cost_usd": sum(float(r.get("cost_usd") or 0.0) for r in paid),
    }


def with_total(table: pd.DataFrame | list[dict[str, Any]]) -> pd.DataFrame:
    """A per-notebook table (or its rows, without a TOTAL) with a TOTAL row; integer columns stay integers."""
    table = pd.DataFrame(table)
    ints = [c for c in table.columns if c != "notebook" and pd.api.types.is_integer_dtype(table[c])]
    total = table.drop(columns="notebook").sum(numeric_only=True).to_frame().T
    total.insert(0, "notebook", "TOTAL")
    out = pd.concat([table, total], ignore_index=True)
    return out.astype({c: "int64" for c in ints})


def fresh_calls(frame: pd.DataFrame) -> int:
    """Calls of an experiment's judgment frame answered by the judge, not the cache: per judgment (``cache_hit``) or
    per chained item (``n_calls`` less ``cache_hits``, chapter 7's serendipity frame)."""
    if "cache_hits" in frame and "n_calls" in frame:
        return int((frame["n_calls"] - frame["cache_hits"]).sum())
    return int((~frame["cache_hit"].astype(bool)).sum()) if "cache_hit" in frame else 0


def frame_usage(frame: pd.DataFrame) -> dict[str, Any]:
    """An experiment's judgment frame summed: judgments (rows), API calls (:func:`fresh_calls`), tokens and dollars
    (``usd``; an unpriced judgment counts 0)."""
    none = pd.Series(dtype=float)
    return {
        "judgments": len(frame),
        "api_calls": fresh_calls(frame),
        "prompt_tokens": int(frame.get("prompt_tokens", none).sum()),
        "completion_tokens": int(frame.get("completion_tokens", none).sum()),
        "usd": float(frame.get("cost_usd", none).sum()),
    }


#: a scoring frame's usage columns (``SerendipityJudge.score``) and their names in :func:`template_usage`
_SCORING_USAGE = {
    "n_calls": "calls",
    "prompt_tokens": "prompt_tokens",
    "completion_tokens": "completion_tokens",
    "cost_usd": "cost_usd",
    "latency_s": "judge_time_s",
}


def template_usage(frames: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per template (index), summed over its scoring frame's rows (one per judged pair): calls, tokens, dollars and
    judge time (``judge_time_s``, summed call latency); a column the frame lacks stays missing."""
    rows = [
        {"template": name, **{key: frame[col].sum() for col, key in _SCORING_USAGE.items() if col in frame}}
        for name, frame in frames.items()
    ]
    return pd.DataFrame(rows).set_index("template")


def scaled(amount: float, here: float, there: float) -> float:
    """An ``amount`` measured over ``here`` units (users, judgments) extrapolated linearly to ``there`` units."""
    return amount / here * there


def _mean(values: pd.Series) -> float:
    return float(values.mean()) if len(values) else float("nan")


@dataclass(frozen=True)
class TimeCost:
    """Judge calls, tokens, seconds and dollars of one run; ``cost_usd`` is None when the model has no price."""

    calls: int
    fresh: int
    prompt_tokens: int
    completion_tokens: int
    judge_s: float
    total_s: float
    cost_usd: float | None
    per_call_s: float  # mean latency per fresh call (NaN: every call came from the cache)
    cost_per_call: float  # mean cost per fresh call (NaN: none fresh, or unpriced)

    def minutes_at(self, calls: int) -> float:
        """Our per-call latency extrapolated, sequentially, to ``calls`` calls."""
        return calls * self.per_call_s / 60

    def usd_at(self, calls: int) -> float:
        """Our cost per fresh call extrapolated to ``calls`` calls (NaN: unpriced, or none fresh)."""
        return calls * self.cost_per_call


def time_cost(frames: Iterable[pd.DataFrame], judge_s: float, total_s: float) -> TimeCost:
    """A run's :class:`TimeCost` from its judgment frames (one row per call: ``latency_s``, ``cache_hit``, tokens,
    ``cost_usd``), the seconds spent judging (``judge_s``) and in all (``total_s``)."""
    cols = ["latency_s", "cache_hit", "prompt_tokens", "completion_tokens", "cost_usd"]
    calls = pd.concat([f[cols] for f in frames])
    fresh = calls.loc[~calls["cache_hit"]]
    return TimeCost(
        calls=len(calls),
        fresh=len(fresh),
        prompt_tokens=int(calls["prompt_tokens"].sum()),
        completion_tokens=int(calls["completion_tokens"].sum()),
        judge_s=judge_s,
        total_s=total_s,
        cost_usd=float(calls["cost_usd"].sum()) if calls["cost_usd"].notna().any() else None,
        per_call_s=_mean(fresh["latency_s"]),
        cost_per_call=_mean(fresh["cost_usd"]),
    )
