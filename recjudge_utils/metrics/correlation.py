"""Correlation coefficients with their intervals: Pearson's r (RecSys Arena's Table 3: does Q follow AUC?),
Spearman's rho with its Fisher-z interval (chapter 2: do accuracy and serendipity rank the recommenders alike?), and
how far rounding of printed values can move a Pearson r (the Arena paper's Table 3 against its Tables 1-2).

Every coefficient is scipy's (``scipy.stats.pearsonr``, ``scipy.stats.spearmanr``); the intervals are
:func:`~recjudge_utils.metrics.intervals.fisher_z_interval`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats

from recjudge_utils.metrics.estimate import Estimate
from recjudge_utils.metrics.intervals import Seed, fisher_z_interval, make_rng

__all__ = ["SPEARMAN_Z_VARIANCE", "pearson", "pearson_rounding_range", "spearman_ci"]

#: Fieller, Hartley & Pearson (1957): the variance of Fisher's z of a Spearman correlation is about 1.06 / (n - 3)
SPEARMAN_Z_VARIANCE = 1.06

Numbers = Sequence[float] | np.ndarray


def pearson(x: Numbers, y: Numbers) -> tuple[float, float]:
    """Pearson r and its two-sided p-value (scipy) over the pairs where both are finite; NaN, NaN with fewer than 3.
    With n = 4 points, p = 1 - |r| exactly."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3:
        return float("nan"), float("nan")
    res = stats.pearsonr(x[ok], y[ok])
    return float(res.statistic), float(res.pvalue)


def spearman_ci(x: Numbers, y: Numbers, ci: float = 0.95) -> Estimate:
    """Spearman's rho of ``x`` and ``y`` (scipy) with its Fisher-z interval (variance 1.06 / (n - 3), Fieller et al.
    1957) and n, the pairs; the bounds are NaN when n < 4, |rho| = 1 or rho is undefined (a constant column)."""
    n = len(x)
    constant = n >= 2 and (np.ptp(np.asarray(x, dtype=float)) == 0 or np.ptp(np.asarray(y, dtype=float)) == 0)
    # undefined for a constant column: say so with NaN instead of scipy's ConstantInputWarning in a reader's page
    rho = float(stats.spearmanr(x, y).statistic) if n >= 2 and not constant else float("nan")
    low, high = fisher_z_interval(rho, n, ci, z_variance=SPEARMAN_Z_VARIANCE)
    return Estimate(rho, low, high, n, f"{ci:.0%} Fisher z")


def pearson_rounding_range(
    x: Numbers, y: Numbers, half_unit: float = 5e-5, draws: int = 2000, seed: Seed = 0
) -> tuple[float, float]:
    """(lowest, highest) Pearson r over ``draws`` jitters of the data, each value moved uniformly within
    ``± half_unit`` (half its last printed digit): how far rounding alone can move an r computed from printed values.

    Each draw moves ``x`` then ``y`` (``uniform(-half_unit, half_unit)`` from ``default_rng(seed)``, or from the
    generator given, to share one stream between several calls); r is scipy's, all draws in one call."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-D and aligned, got {x.shape} and {y.shape}")
    jitter = make_rng(seed).uniform(-half_unit, half_unit, size=(draws, 2, len(x)))
    rs = stats.pearsonr(x + jitter[:, 0], y + jitter[:, 1], axis=1).statistic
    return float(np.min(rs)), float(np.max(rs))
