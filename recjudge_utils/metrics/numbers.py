"""A number from whatever a frame, a JSON file or a judge's parsed answer holds: :func:`number_or_nan` turns None,
text, numpy scalars and NaN into a float, NaN when there is no number. Experiments, annotation and reporting read
loose values through it, so "no number" means one thing everywhere."""

from __future__ import annotations

import math

__all__ = ["number_or_nan"]


def number_or_nan(x: object, *, finite: bool = False) -> float:
    """``float(x)``, or NaN when ``x`` is None or not a number (``""``, ``"n/a"``, a list). Strings Python reads as
    numbers count (``"0.5"``, ``"inf"``). ``finite``: an infinite value is no number either (a judge's score)."""
    try:
        out = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
    return math.nan if finite and not math.isfinite(out) else out
