"""The small pieces every chapter shows the same way: the judge caveat, the usage footer, tables, error bars.

A dataset's label for titles is :attr:`~recjudge_utils.data.Dataset.display_label`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from pandas.io.formats.style import Styler

from recjudge_utils.judge.types import Judge

__all__ = [
    "captioned",
    "error_bars",
    "estimate_cell",
    "judge_caveat",
    "usage_cells",
    "usage_footer",
    "usage_table_for_people",
]

#: how the book names judges whose numbers cannot be read as a judge's opinion
SMALL_MODEL_MARKERS = ("SmolLM2-135M",)


def judge_caveat(judge_name: str) -> str | None:
    """The sentence every chapter prints where a small embedded model's numbers appear (None for other judges)."""
    if judge_name.startswith("simulated judge"):
        return (
            f"Judge: {judge_name}. Its answers are generated from the truth the experiment attaches, with known "
            "noise and biases: they show what the protocol detects, not what any LLM thinks."
        )
    if any(m in judge_name for m in SMALL_MODEL_MARKERS):
        return (
            f"Judge: {judge_name}. This 135-million-parameter model judges close to randomly: its numbers below "
            "show the pipeline working, not a judge's opinion. Rerun with a capable judge profile to test the paper."
        )
    return None


def usage_footer(client: Judge) -> pd.DataFrame:
    """The judge's usage table of this notebook (calls, cache hits, tokens, cost, seconds), titled with the judge."""
    usage_summary = getattr(client, "usage_summary", None)
    usage = usage_summary() if callable(usage_summary) else pd.DataFrame()
    print(f"Usage - judge {client.model_name} (cache hits cost nothing; seconds = summed call latency)")
    return usage


def estimate_cell(value: object, low: object = None, high: object = None, digits: int = 3, scale: float = 1.0) -> str:
    """An estimate and its interval in one table cell, ``61.1 [55.2, 66.8]``, for people rather than machines.

    A missing estimate reads ``n/a``; a missing or NaN bound leaves the bare estimate (a count, a paper's
    number); an infinite value (Q with no losses) reads ``∞``."""

    def number(x: object) -> float | None:
        try:
            f = float(x)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None
        return None if np.isnan(f) else f * scale

    def text(x: float) -> str:
        if np.isinf(x):
            return "∞" if x > 0 else "-∞"
        shown = f"{x:.{digits}f}"
        return shown[1:] if shown.startswith("-") and float(shown) == 0 else shown  # no "-0.00"

    point, lo, hi = number(value), number(low), number(high)
    if point is None:
        return "n/a"
    if lo is None or hi is None:
        return text(point)
    return f"{text(point)} [{text(lo)}, {text(hi)}]"


def captioned(frame: pd.DataFrame, title: str, precision: int = 1) -> Styler:
    """A pandas Styler with a caption (table title) for notebook display."""
    return frame.style.set_caption(title).format(precision=precision, na_rep="-").hide(axis="index")


def error_bars(value: pd.Series, low: pd.Series, high: pd.Series) -> np.ndarray:
    """Matplotlib ``yerr``/``xerr`` for intervals around ``value``.

    A percentile-bootstrap or Wilson bound can sit a rounding error on the wrong side of the point estimate
    (or the whole interval can miss it), which matplotlib rejects; such bars are drawn with zero length on
    that side and missing bounds are drawn as no bar."""
    value, low, high = (np.asarray(x, dtype=float) for x in (value, low, high))
    below = np.nan_to_num(np.clip(value - low, 0.0, None))
    above = np.nan_to_num(np.clip(high - value, 0.0, None))
    return np.vstack([below, above])


def usage_cells(values: Mapping[str, Any]) -> dict[str, str]:
    """One usage row (a judge's ``usage_summary`` row or a notebook's ``usage.json``) as cells a reader reads:
    judgments, paid calls, unparsed and failed answers in one cell, tokens in and out in one cell, dollars."""

    def count(key: str) -> int:
        value = values.get(key)
        return 0 if value is None or pd.isna(value) else int(value)

    failed = f"{count('unparsed')} / {count('errors')}"
    if count("budget_spent"):
        failed += f" ({count('budget_spent')} out of budget)"
    tokens = f"{count('prompt_tokens'):,} / {count('completion_tokens'):,}"
    if count("reasoning_tokens"):
        tokens += f" ({count('reasoning_tokens'):,} reasoning)"
    cost = values.get("cost_usd")
    return {
        "judgments": f"{count('calls'):,}",
        "paid calls": f"{count('api_calls'):,}",
        "unparsed / errors": failed,
        "tokens in / out": tokens,
        "cost (US$)": "-" if cost is None or pd.isna(cost) else f"{float(cost):.4f}",
    }


def usage_table_for_people(usage: pd.DataFrame) -> Styler:
    """A judge's usage table (:func:`usage_footer`) in seven columns with headers in words and no index: one row per
    prompt and one for all of them; judgments that were not paid calls came from the cache."""
    rows = [
        {
            "prompt": "all prompts" if row["template_id"] == "TOTAL" else row["template_id"],
            **usage_cells(row),
            "seconds": f"{float(row['seconds']):.1f}" if pd.notna(row.get("seconds")) else "-",
        }
        for row in usage.to_dict("records")
    ]
    columns = ["prompt", "judgments", "paid calls", "unparsed / errors", "tokens in / out", "cost (US$)", "seconds"]
    return pd.DataFrame(rows, columns=columns).style.hide(axis="index")
