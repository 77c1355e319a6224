"""Pairwise statistics, shared by RecSys Arena and SAER: swap adjudication, position consistency,
Win/Tie/Lose, Q with its CI, and the paired bootstrap of a difference.

Outcomes are stated for the recommender under test, ``x``, against ``y``: ``"win"``, ``"tie"``, ``"lose"``
(``None`` = not judged, e.g. an unparsed answer: counted, never imputed).

* **Adjudication** (:func:`conservative`): when labelers, or the two presentation orders of one comparison,
  agree, that verdict; when they disagree, a tie (a position-dependent verdict carries no preference). The
  same rule merges human annotators in SAER (its "conservative" pairwise rule).
* **Win/Tie/Lose and Q** (:func:`wtl_summary`): a long frame, one row per measure (``win``, ``tie``, ``lose`` in %,
  ``Q``) with its ``value``, ``low``, ``high`` and ``n``.
* **Q** (RecSys Arena): ``Q = (N_win + N_tie) / (N_lose + N_tie)``. When the denominator is 0 and the
  numerator is not (only wins), Q is ``inf``; with no outcomes at all it is ``nan``. This is the one
  definition used everywhere (tables, CIs).
* **Q's share** (:func:`q_share`): ``s = (N_win + N_tie) / (N_win + N_lose + 2 N_tie)``, so ``Q = s / (1 - s)``, a
  monotone map: s orders recommenders exactly as Q does, lies in [0, 1] and is defined whenever one outcome is. Q's
  CI is the percentile bootstrap of s mapped to Q, and two recommenders' Q are compared by the difference of their
  shares, whose bootstrap never meets an infinite Q (a difference of two Q drops every resample where one side has
  only wins).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from recjudge_utils.metrics.estimate import Estimate
from recjudge_utils.metrics.intervals import bootstrap_ci, bootstrap_distribution, percentile_interval, wilson

__all__ = [
    "OUTCOMES",
    "TIE",
    "WTL_COLUMNS",
    "WTL_MEASURES",
    "Difference",
    "adjudicate",
    "conservative",
    "is_missing",
    "paired_difference",
    "position_consistency",
    "q_from_codes",
    "q_share",
    "q_value",
    "wtl_summary",
]

TIE = "Tie"
OUTCOMES = ("win", "tie", "lose")
_CODE = {"win": 1, "tie": 0, "lose": -1}


def is_missing(value: Any) -> bool:
    """True for None and NaN (an unparsed or absent verdict)."""
    if value is None:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def conservative(*labelers: Sequence[Any], tie: str = TIE) -> list[Any]:
    """Per case, the shared verdict when every labeler agrees, otherwise ``tie``; a missing label stays missing.

    Used both to adjudicate the two presentation orders of one comparison (a position-dependent verdict
    becomes a tie) and to merge human annotators (SAER's conservative pairwise rule).
    """
    if not labelers:
        raise ValueError("conservative() needs at least one labeler")
    n = len(labelers[0])
    if any(len(lab) != n for lab in labelers):
        raise ValueError("all labelers must label the same cases")
    out: list[Any] = []
    for case in zip(*labelers, strict=True):
        if any(is_missing(v) for v in case):
            out.append(None)
        elif all(v == case[0] for v in case):
            out.append(case[0])
        else:
            out.append(tie)
    return out


def adjudicate(first: str | None, second: str | None) -> str | None:
    """One comparison's outcomes for x in the two orders -> the adjudicated outcome (:func:`conservative`)."""
    for o in (first, second):
        if not is_missing(o) and o not in OUTCOMES:
            raise ValueError(f"unknown outcome {o!r}")
    return conservative([first], [second], tie="tie")[0]


def position_consistency(order_a: Sequence[Any], order_b: Sequence[Any]) -> tuple[int, int]:
    """(consistent, n): comparisons whose two presentation orders gave the same (mapped-back) verdict, over
    the comparisons with both orders judged."""
    if len(order_a) != len(order_b):
        raise ValueError(f"both orders must cover the same comparisons: {len(order_a)} vs {len(order_b)}")
    pairs = [(a, b) for a, b in zip(order_a, order_b, strict=True) if not (is_missing(a) or is_missing(b))]
    return sum(a == b for a, b in pairs), len(pairs)


def _outcome_codes(outcomes: Sequence[Any]) -> np.ndarray:
    """win/tie/lose -> 1/0/-1; missing outcomes are dropped."""
    return np.array([_CODE[o] for o in outcomes if not is_missing(o)], dtype=int)


def q_value(n_win: float, n_tie: float, n_lose: float) -> float:
    """Q = (N_win + N_tie) / (N_lose + N_tie); ``inf`` when only wins, ``nan`` when there is no outcome."""
    num, den = n_win + n_tie, n_lose + n_tie
    if den == 0:
        return float("inf") if num > 0 else float("nan")
    return float(num / den)


def q_from_codes(codes: np.ndarray) -> float:
    """Q of an array of outcome codes (1 win, 0 tie, -1 lose)."""
    return q_value(float(np.sum(codes == 1)), float(np.sum(codes == 0)), float(np.sum(codes == -1)))


def q_share(codes: np.ndarray, axis: int = -1) -> Any:
    """Q's share (W+T)/(W+L+2T) of outcome codes (1 win, 0 tie, -1 lose) along ``axis`` (NaN where nothing was
    judged): Q = s / (1 - s), a monotone map, so percentile CIs carry over to Q and s orders systems as Q does; 1
    where Q is infinite (only wins), 0 where Q is 0 (only losses)."""
    w, t, lo = (np.sum(codes == c, axis=axis) for c in (1, 0, -1))
    den = w + lo + 2 * t
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (w + t) / np.where(den > 0, den, 1), np.nan)


_share_for_q = q_share  # the name the vectorised-bootstrap tests know


def _q_from_share(s: float) -> float:
    if np.isnan(s):
        return float("nan")
    return float("inf") if s >= 1.0 else float(s / (1.0 - s))


WTL_MEASURES = ("win", "tie", "lose", "Q")
#: the columns of :func:`wtl_summary`'s frame: one row per measure, ``n`` the judged outcomes, ``n_unjudged`` the rest
WTL_COLUMNS = ["measure", "value", "low", "high", "n", "n_unjudged"]


def wtl_summary(outcomes: Sequence[Any], n_boot: int = 2000, seed: int = 0, ci: float = 0.95) -> pd.DataFrame:
    """Win/Tie/Lose % and Q of one series of outcomes, one row per measure (:data:`WTL_COLUMNS`): each share with its
    Wilson interval, Q with its percentile-bootstrap interval; missing outcomes are counted as ``n_unjudged``. Every
    measure has its row, NaN where nothing was judged."""
    outcomes = list(outcomes)
    codes = _outcome_codes(outcomes)
    n = len(codes)
    nan = float("nan")
    counts = [int(np.sum(codes == c)) for c in (1, 0, -1)]  # win, tie, lose
    rows: list[tuple[float, float, float]] = []
    for count in counts:
        low, high = wilson(count, n, ci=ci)  # NaN, NaN when nothing was judged
        rows.append((100.0 * count / n if n else nan, 100.0 * low, 100.0 * high))
    if n < 2:  # a bootstrap over one outcome is a zero-width interval: report no interval instead
        s_lo = s_hi = nan
    else:
        _, s_lo, s_hi = bootstrap_ci(codes, statistic=_share_for_q, n_boot=n_boot, ci=ci, seed=seed)
    rows.append((q_value(*counts), _q_from_share(s_lo), _q_from_share(s_hi)))
    return pd.DataFrame(
        [(m, v, lo, hi, n, len(outcomes) - n) for m, (v, lo, hi) in zip(WTL_MEASURES, rows, strict=True)],
        columns=WTL_COLUMNS,
    )


@dataclass(frozen=True)
class Difference(Estimate):
    """A paired difference (first minus second, ``value``) over ``n`` pairs with its percentile-bootstrap CI and, beside
    the estimate's fields, ``|value| / SE``; ``dropped``: the resamples (of ``n_boot``) whose difference was not
    finite, left out of the CI and the SE (0 for a statistic defined on every resample, as a mean or :func:`q_share`
    is)."""

    n: int = 0
    standardised: float = float("nan")
    dropped: int = 0
    n_boot: int = 0


def paired_difference(
    a: np.ndarray,
    b: np.ndarray,
    statistic: Callable[[np.ndarray], float] = np.mean,
    n_boot: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
) -> Difference:
    """``statistic(a) - statistic(b)`` over paired units (rows resampled together), with a percentile bootstrap CI.

    Pairs with a non-finite value are dropped; resamples whose difference is not finite (a statistic undefined or
    infinite on a resample) are left out of the CI and counted in ``dropped``. Compare Q through :func:`q_share`,
    which no resample leaves undefined, not through Q itself. Fewer than two pairs give NaN.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    n, method = len(a), f"{ci:.0%} percentile bootstrap"
    if n < 2:
        return Difference(float("nan"), n=n, method=method)
    if statistic is np.mean:  # vectorised: every resample at once

        def difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> Any:
            return np.mean(x, axis=axis) - np.mean(y, axis=axis)
    else:

        def difference(x: np.ndarray, y: np.ndarray) -> Any:  # type: ignore[misc]
            return statistic(x) - statistic(y)

    point, boots = bootstrap_distribution((a, b), difference, n_boot=n_boot, seed=seed)
    kept = boots[np.isfinite(boots)]
    dropped = len(boots) - len(kept)
    if not np.isfinite(point) or len(kept) < 2:
        return Difference(point, n=n, method=method, dropped=dropped, n_boot=len(boots))
    se = float(np.std(kept))
    low, high = percentile_interval(kept, ci)
    std = abs(point) / se if se > 0 else (float("inf") if point != 0 else float("nan"))
    return Difference(float(point), low, high, n, method, standardised=std, dropped=dropped, n_boot=len(boots))
