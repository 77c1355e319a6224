"""How well does a measure tell systems apart, and how many users does it take?

* :func:`discriminative_power` (Sakai 2006): the share of system pairs a measure separates at the family-wise
  corrected level (:func:`~recjudge_utils.metrics.system_tests.compare_systems`);
* :func:`swap_rate` (Voorhees & Buckley 2002): split the users into two disjoint random halves; a pair *swaps* when
  the two halves order it oppositely. The rate is swaps over the pairs ordered in both halves, over many splits: the
  chance that a rerun on as many other users reverses a conclusion;
* :func:`users_needed_curve`: both, on random subsets of n users for several n (the swap rate between two disjoint
  subsets of n), so a reader sees what each added user buys.

Every measure is a users x systems matrix (NaN: no value), as in :mod:`~recjudge_utils.metrics.system_agreement`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from recjudge_utils.metrics.system_agreement import mean_per_system
from recjudge_utils.metrics.system_tests import DECISIONS, Method, compare_systems

__all__ = ["SwapRate", "discriminative_power", "swap_rate", "users_needed_curve"]


def discriminative_power(tests: pd.DataFrame) -> float:
    """The share of the compared pairs (rows of :func:`compare_systems`) decided in either direction; NaN when no
    pair was compared."""
    if tests.empty:
        return math.nan
    return float(tests["decision"].isin(DECISIONS[:2]).mean())


@dataclass(frozen=True)
class SwapRate:
    """Swaps over comparisons (pairs ordered in both halves, summed over the splits), and the users per half."""

    rate: float
    swaps: int
    comparisons: int
    half: int


def _swaps(first: np.ndarray, second: np.ndarray, pairs: list[tuple[int, int]]) -> tuple[int, int]:
    a, b = mean_per_system(first), mean_per_system(second)
    swaps = comparisons = 0
    for i, j in pairs:
        da, db = a[i] - a[j], b[i] - b[j]
        if math.isfinite(da) and math.isfinite(db) and da != 0 and db != 0:
            comparisons += 1
            swaps += int((da > 0) != (db > 0))
    return swaps, comparisons


def swap_rate(
    matrix: np.ndarray | pd.DataFrame, n_splits: int = 200, seed: int = 0, half: int | None = None
) -> SwapRate:
    """Voorhees and Buckley's swap rate over ``n_splits`` random splits into two disjoint sets of ``half`` users
    (default: half of them, rounded down). NaN below two users per half."""
    x = np.asarray(matrix, dtype=float)
    size = x.shape[0] // 2 if half is None else half
    if size < 2 or 2 * size > x.shape[0]:
        return SwapRate(math.nan, 0, 0, size)
    rng = np.random.default_rng(seed)
    pairs = list(combinations(range(x.shape[1]), 2))
    swaps = comparisons = 0
    for _ in range(n_splits):
        order = rng.permutation(x.shape[0])
        s, c = _swaps(x[order[:size]], x[order[size : 2 * size]], pairs)
        swaps, comparisons = swaps + s, comparisons + c
    return SwapRate(swaps / comparisons if comparisons else math.nan, swaps, comparisons, size)


def users_needed_curve(
    matrix: pd.DataFrame,
    sizes: Sequence[int],
    n_draws: int = 20,
    seed: int = 0,
    alpha: float = 0.05,
    n_resamples: int = 500,
    method: Method = "holm",
) -> pd.DataFrame:
    """Per size n in ``sizes`` (at most the users there are): the mean discriminative power over ``n_draws`` random
    subsets of n users, and the swap rate between two disjoint subsets of n (NaN when 2n exceeds the users).
    Columns: users, power, swap_rate, draws. Below ten users (``MIN_USERS``) the power is 0: no pair is decided."""
    rng = np.random.default_rng(seed)
    total = len(matrix)
    x = matrix.to_numpy(dtype=float)
    pairs = list(combinations(range(x.shape[1]), 2))
    rows = []
    for n in sorted({int(s) for s in sizes if 2 <= int(s) <= total}):
        powers, swaps, comparisons = [], 0, 0
        for draw in range(n_draws):
            order = rng.permutation(total)
            part = matrix.iloc[order[:n]]
            tests = compare_systems(
                part, method=method, alpha=alpha, n_resamples=n_resamples, seed=seed + draw, intervals=False
            )
            powers.append(discriminative_power(tests))
            if 2 * n <= total:
                s, c = _swaps(x[order[:n]], x[order[n : 2 * n]], pairs)
                swaps, comparisons = swaps + s, comparisons + c
        rows.append(
            {
                "users": n,
                "power": float(np.nanmean(powers)) if powers else math.nan,
                "swap_rate": swaps / comparisons if comparisons else math.nan,
                "draws": n_draws,
            }
        )
    return pd.DataFrame(rows, columns=["users", "power", "swap_rate", "draws"])
