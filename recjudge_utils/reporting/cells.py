"""Table cells for people: an estimate with its interval in one cell (the one formatter of an interval), a judge's usage
in words."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from recjudge_utils.metrics.estimate import Estimate
from recjudge_utils.metrics.numbers import number_or_nan

__all__ = ["estimate_cell", "usage_cells"]


def estimate_cell(
    value: Estimate | object, low: object = None, high: object = None, digits: int = 3, scale: float = 1.0
) -> str:
    """An estimate and its interval in one cell, ``61.1 [55.2, 66.8]``: an :class:`Estimate`, or the loose numbers a
    frame holds. A missing estimate reads ``n/a``, a missing bound leaves the bare estimate (a count, a paper's
    number), an infinite one (Q with no losses) reads ``∞``."""
    if isinstance(value, Estimate):
        if low is not None or high is not None:
            raise TypeError("an Estimate carries its own interval")
        low, high, value = value.low, value.high, value.value

    def number(x: object) -> float | None:
        f = number_or_nan(x)
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
