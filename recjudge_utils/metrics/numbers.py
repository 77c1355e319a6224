"""A number from whatever a frame, a JSON file or a judge's parsed answer holds: :func:`number_or_nan` turns None,
text, numpy scalars and NaN into a float, NaN when there is no number; :func:`count_or_none` does the same for a
count (an int, None when there is none). Experiments, annotation and reporting read loose values through them, so
"no number" means one thing everywhere."""

from __future__ import annotations

import math

__all__ = ["count_or_none", "number_or_nan"]


def number_or_nan(x: object, *, finite: bool = False) -> float:
    """``float(x)``, or NaN when ``x`` is None or not a number (``""``, ``"n/a"``, a list). Strings Python reads as
    numbers count (``"0.5"``, ``"inf"``). ``finite``: an infinite value is no number either (a judge's score)."""
    try:
        out = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
    return math.nan if finite and not math.isfinite(out) else out


def count_or_none(x: object) -> int | None:
    """``int(x)``, or None when ``x`` is no number (None, NaN, text): how many units stand behind an estimate."""
    out = number_or_nan(x)
    return None if math.isnan(out) else int(out)
