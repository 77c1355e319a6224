"""Do two measures rank systems alike? Kendall's tau between system rankings, with a bootstrap CI over users.

Every measure here is a *users x systems* matrix of per-user values (a user's Avg.Score of a system's list, its
share of points in the Arena duels, its SAER label on the 0-2 scale, its Precision@k on the test split), NaN where
the user has no value for that system (an unparsed answer). A system's score is the mean over its users; a measure's
ranking is the order of those means.

* :func:`system_means`: the means, with a percentile bootstrap CI over users for each system;
* :func:`kendall_tau`: tau-b between two measures' system means (``scipy.stats.kendalltau``), with a percentile
  bootstrap CI that resamples *users* (the same users for both measures, so the CI holds what the two measures
  share) and recomputes both rankings in every resample;
* :func:`separated_pairs`: for every two systems, the paired bootstrap CI of their difference over the users both
  have; a pair is *separated* by the measure when that CI excludes 0. Each pair at 95 % on its own, with no
  correction for the k(k-1)/2 pairs: 8 identical systems get some pair "separated" in most runs. Decisions belong
  to :func:`recjudge_utils.metrics.system_tests.compare_systems`, which holds the family-wise error.

The CI over users is the one a rerun with other users of the same population would vary by; it says nothing of how
the systems were chosen. The tau CI covers the tau that this many users give on average, not the tau of the
population's rankings: noise in either ranking pulls tau-hat towards 0, so tau-hat rises with the number of users
and a small sample's CI can lie wholly below the population's tau (``tests/metrics/test_metrics_rank_agreement.py``
measures it). Read it beside each measure's split-half reliability (:mod:`~recjudge_utils.metrics.rank_agreement`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from recjudge_utils.metrics.estimate import Estimate
from recjudge_utils.metrics.intervals import bootstrap_ci, bootstrap_distribution, percentile_interval
from recjudge_utils.metrics.pairwise import paired_difference

__all__ = ["Tau", "kendall_tau", "mean_per_system", "separated_pairs", "system_means", "tau_b_rows"]


@dataclass(frozen=True)
class Tau(Estimate):
    """Kendall's tau-b between two system rankings (``value``) with its bootstrap CI over the ``n`` users, and, beside
    the estimate's fields, the systems it ranks and the resamples kept."""

    n: int = 0
    n_systems: int = 0  # systems with a mean on both measures
    n_boot: int = 0  # resamples in which both rankings could be computed


def mean_per_system(matrix: np.ndarray) -> np.ndarray:
    """Per system, the mean of its finite values over the users (axis -2: a stack of matrices gives a stack)."""
    finite = np.isfinite(matrix)
    counts = finite.sum(axis=-2)
    sums = np.where(finite, matrix, 0.0).sum(axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):  # a system without a value has mean NaN
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def tau_b_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Kendall's tau-b between ``a[..., :]`` and ``b[..., :]`` row by row (the last axis holds the systems), over the
    systems finite in both: (concordant - discordant) / sqrt(pairs untied in a x pairs untied in b), the formula
    ``scipy.stats.kendalltau`` computes (tested against it). NaN where fewer than two systems are left or a ranking
    is constant. One array operation for every bootstrap resample at once, instead of a scipy call per resample:
    chapter 7's statistics called it 63,000 times (36 s of a 63 s chapter)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    i, j = np.triu_indices(a.shape[-1], k=1)
    with np.errstate(invalid="ignore"):
        sign_a = np.sign(a[..., i] - a[..., j])  # NaN where a system is missing
        sign_b = np.sign(b[..., i] - b[..., j])
    valid = np.isfinite(sign_a) & np.isfinite(sign_b)
    sign_a = np.where(valid, sign_a, 0.0)
    sign_b = np.where(valid, sign_b, 0.0)
    untied_a = (sign_a != 0).sum(axis=-1)
    untied_b = (sign_b != 0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (sign_a * sign_b).sum(axis=-1) / np.sqrt(untied_a * untied_b)
    return np.where((untied_a > 0) & (untied_b > 0), tau, np.nan)


def _tau(a: np.ndarray, b: np.ndarray) -> float:
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 2 or np.ptp(a[ok]) == 0 or np.ptp(b[ok]) == 0:
        return math.nan  # a constant ranking has no order to agree with
    return float(stats.kendalltau(a[ok], b[ok]).statistic)


def _resampled_tau(x: np.ndarray, y: np.ndarray) -> Any:
    """The bootstrap statistic of :func:`kendall_tau`: user indices in (one resample, or a stack of them along the
    leading axes, which ``scipy.stats.bootstrap`` passes with ``axis=-1``), tau-b of the two measures' means out."""

    def statistic(rows: np.ndarray, axis: int = -1) -> Any:
        rows = np.moveaxis(np.asarray(rows, dtype=np.intp), axis, -1)
        return tau_b_rows(mean_per_system(x[rows]), mean_per_system(y[rows]))

    return statistic


def system_means(
    matrix: np.ndarray | pd.DataFrame, n_boot: int = 1000, seed: int = 0, ci: float = 0.95
) -> pd.DataFrame:
    """Per system (a column): mean over its users with a percentile bootstrap CI, and its number of users.

    A system with one user gets no CI (a bootstrap over one user is a zero-width interval)."""
    frame = matrix if isinstance(matrix, pd.DataFrame) else pd.DataFrame(matrix)
    rows = []
    for system in frame.columns:
        values = frame[system].to_numpy(dtype=float)
        values = values[np.isfinite(values)]
        if len(values) == 0:
            rows.append({"system": system, "mean": math.nan, "low": math.nan, "high": math.nan, "n": 0})
            continue
        point, lo, hi = bootstrap_ci(values, n_boot=n_boot, seed=seed, ci=ci)
        if len(values) < 2:
            lo = hi = math.nan
        rows.append({"system": system, "mean": point, "low": lo, "high": hi, "n": len(values)})
    return pd.DataFrame(rows, columns=["system", "mean", "low", "high", "n"])


def kendall_tau(
    a: np.ndarray | pd.DataFrame,
    b: np.ndarray | pd.DataFrame,
    n_boot: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
) -> Tau:
    """Kendall's tau-b between the system rankings of measures ``a`` and ``b`` (users x systems, rows and columns
    aligned), with a percentile bootstrap CI over users.

    The point estimate is ``scipy.stats.kendalltau`` of the two vectors of system means. Each resample draws users
    with replacement (seeded), recomputes both vectors of means and their tau; resamples where a ranking is constant
    or fewer than two systems have both means are left out (``Tau.n_boot`` counts those kept). NaN without two
    systems, or when a ranking is constant.
    """
    method = f"{ci:.0%} bootstrap over users"
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.shape != y.shape or x.ndim != 2:
        raise ValueError(f"kendall_tau needs two users x systems matrices of one shape, not {x.shape} and {y.shape}")
    n_users = x.shape[0]
    mean_x, mean_y = mean_per_system(x), mean_per_system(y)
    point = _tau(mean_x, mean_y)
    both = int((np.isfinite(mean_x) & np.isfinite(mean_y)).sum())
    if n_users < 2 or not math.isfinite(point):
        return Tau(point, n=n_users, method=method, n_systems=both)
    # resample user indices, so both matrices keep the same users in every resample
    _, taus = bootstrap_distribution(np.arange(n_users), _resampled_tau(x, y), n_boot=n_boot, seed=seed)
    kept = taus[np.isfinite(taus)]
    if len(kept) < 2:
        return Tau(point, n=n_users, method=method, n_systems=both, n_boot=len(kept))
    low, high = percentile_interval(kept, ci)
    return Tau(point, low, high, n_users, method, n_systems=both, n_boot=len(kept))


def separated_pairs(
    matrix: pd.DataFrame, n_boot: int = 1000, seed: int = 0, ci: float = 0.95, systems: Sequence[str] | None = None
) -> pd.DataFrame:
    """Every two systems (columns of ``matrix``, users x systems): the mean difference over the users both have,
    its paired percentile bootstrap CI, and whether the CI excludes 0 (``separated``; False when no CI exists)."""
    names = list(systems) if systems is not None else list(matrix.columns)
    rows = []
    for s, t in combinations(names, 2):
        diff = paired_difference(
            matrix[s].to_numpy(dtype=float), matrix[t].to_numpy(dtype=float), n_boot=n_boot, seed=seed, ci=ci
        )
        ok = math.isfinite(diff.low) and math.isfinite(diff.high)
        rows.append(
            {
                "a": s,
                "b": t,
                "difference": diff.value,
                "low": diff.low,
                "high": diff.high,
                "separated": bool(ok and (diff.low > 0 or diff.high < 0)),
            }
        )
    return pd.DataFrame(rows, columns=["a", "b", "difference", "low", "high", "separated"])
