"""Confidence intervals shared by every metric: the one module where an interval is computed.

* :func:`bootstrap_ci`: the percentile bootstrap of any statistic (resampling rows, paired when several aligned
  arrays are given), on ``scipy.stats.bootstrap``; :func:`bootstrap_distribution` gives the resampled statistics
  themselves (for a standard error, or to drop undefined resamples) and :func:`percentile_interval` their central
  interval; both take ``clusters`` for a cluster bootstrap (every row of a drawn cluster together: the same (user,
  item) judged under several templates is one case, not several);
* :func:`bootstrap_mean_ci_rows`: the same percentile bootstrap of the mean for many samples at once (rows of a
  matrix, each resampled on its own), for Monte Carlo studies of the interval itself;
* :func:`wilson`: the Wilson score interval of a proportion (statsmodels' ``proportion_confint``), the right
  interval for a share (a win rate, an accuracy, a detection or consistency rate) when n is small: the percentile
  bootstrap of a share of 10 is often a zero-width interval at 0% or 100%;
* :func:`fisher_z_interval`: the interval of a correlation coefficient through Fisher's z = artanh(r), with the
  variance of z as a parameter (1 / (n - 3) for Pearson's r, 1.06 / (n - 3) for Spearman's rho).
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Sequence
from typing import Any, overload

import numpy as np
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

__all__ = [
    "Seed",
    "bootstrap_ci",
    "bootstrap_distribution",
    "bootstrap_mean_ci_rows",
    "cluster_groups",
    "fisher_z_interval",
    "make_rng",
    "percentile_interval",
    "wilson",
]

_Values = np.ndarray | Sequence[float] | tuple[np.ndarray, ...]
#: a seed for :func:`numpy.random.default_rng`, or a generator to draw from (a legacy ``RandomState`` reproduces
#: a ``scipy.stats.bootstrap(..., random_state=<int>)`` call resample for resample)
Seed = int | np.random.Generator | np.random.RandomState


def _as_arrays(values: _Values) -> tuple[np.ndarray, ...]:
    arrays = tuple(np.asarray(v) for v in values) if isinstance(values, tuple) else (np.asarray(values),)
    n = len(arrays[0])
    if n == 0:
        raise ValueError("the bootstrap needs at least one value")
    if any(len(a) != n for a in arrays):
        raise ValueError("the bootstrap: aligned arrays must have the same length")
    return arrays


def make_rng(seed: Seed) -> np.random.Generator | np.random.RandomState:
    """A generator from a seed (``default_rng(seed)``); a generator given is returned as it is, to be drawn from."""
    return seed if isinstance(seed, np.random.Generator | np.random.RandomState) else np.random.default_rng(seed)


def _tails(ci: float) -> tuple[float, float]:
    """The quantiles that bound the central ``ci`` interval."""
    alpha = (1.0 - ci) / 2.0
    return alpha, 1.0 - alpha


def _takes_axis(statistic: Callable[..., Any]) -> bool:
    """Whether ``statistic`` reduces along an ``axis`` keyword, as ``np.mean`` does: scipy then hands it every
    resample in one array, the same resamples it would pass one at a time (about 15x faster for 2,000)."""
    try:
        return "axis" in inspect.signature(statistic).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False


def cluster_groups(clusters: Sequence[Any] | np.ndarray) -> list[np.ndarray]:
    """The row indices of each cluster, clusters in the order they first appear (``clusters``: one id per row, any
    hashable values: a (user, item) tuple, a user id)."""
    groups: dict[Any, list[int]] = {}
    for row, cluster in enumerate(clusters):
        groups.setdefault(cluster, []).append(row)
    return [np.asarray(rows, dtype=np.intp) for rows in groups.values()]


def _cluster_resamples(
    groups: Sequence[np.ndarray], n_boot: int, rng: np.random.Generator | np.random.RandomState
) -> list[np.ndarray]:
    """``n_boot`` resamples of rows: each draws as many clusters as there are, with replacement, and takes every row
    of each drawn cluster (a cluster drawn twice brings its rows twice)."""
    k = len(groups)
    draws = rng.integers(0, k, (n_boot, k)) if isinstance(rng, np.random.Generator) else rng.randint(0, k, (n_boot, k))
    order = np.concatenate(groups)
    sizes = np.array([len(g) for g in groups], dtype=np.intp)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp)
    out = []
    for drawn in draws:
        lengths = sizes[drawn]
        # the rows of the drawn clusters, one after the other: each cluster's start, then 0, 1, ... within it
        within = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        out.append(order[np.repeat(starts[drawn], lengths) + within])
    return out


def bootstrap_distribution(
    values: _Values,
    statistic: Callable[..., float] = np.mean,
    n_boot: int = 2000,
    seed: Seed = 0,
    clusters: Sequence[Any] | np.ndarray | None = None,
) -> tuple[float, np.ndarray]:
    """(point estimate, ``n_boot`` resampled statistics): rows drawn with replacement by ``scipy.stats.bootstrap``,
    aligned arrays together (a paired bootstrap), each resample passed positionally to ``statistic``. A single row
    gives ``n_boot`` copies of the point estimate. A ``statistic`` with an ``axis`` keyword gets all resamples at
    once (``vectorized``); the resamples are the same either way.

    ``clusters`` (one id per row): a cluster bootstrap instead, for rows that are not independent (the same (user,
    item) judged under several prompt templates): each resample draws as many clusters as there are, with
    replacement, and takes every row of each drawn cluster, so rows of one cluster are never split between resamples
    (Davison & Hinkley 1997 on hierarchical data: resample the clusters, each kept whole). Resampling such rows one
    by one treats k copies of a case as k independent cases and gives intervals too narrow. One cluster gives
    ``n_boot`` copies of the point estimate.
    """
    arrays = _as_arrays(values)
    point = float(statistic(*arrays))
    if clusters is not None:
        if len(clusters) != len(arrays[0]):
            raise ValueError(f"the bootstrap: {len(clusters)} cluster ids for {len(arrays[0])} rows")
        groups = cluster_groups(clusters)
        if len(groups) < 2:
            return point, np.full(n_boot, point)
        resamples = _cluster_resamples(groups, n_boot, make_rng(seed))
        return point, np.array([float(statistic(*(a[rows] for a in arrays))) for rows in resamples], dtype=float)
    if len(arrays[0]) < 2:
        return point, np.full(n_boot, point)
    with warnings.catch_warnings():
        # scipy warns when every resample gives the same value (e.g. all answers equal); the distribution is
        # still exact, and the interval is then a point, which is what the data say
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        res = stats.bootstrap(
            arrays,
            statistic,
            n_resamples=n_boot,
            paired=True,
            vectorized=_takes_axis(statistic),
            method="percentile",
            random_state=make_rng(seed),
        )
    return point, np.asarray(res.bootstrap_distribution, dtype=float).reshape(-1)


def bootstrap_ci(
    values: _Values,
    statistic: Callable[..., float] = np.mean,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: Seed = 0,
    clusters: Sequence[Any] | np.ndarray | None = None,
) -> tuple[float, float, float]:
    """Percentile bootstrap: returns (point estimate, low, high).

    ``values`` is one 1-D array, or a tuple of aligned arrays that are resampled together
    (rows stay paired) and passed positionally to ``statistic``; ``clusters`` as in :func:`bootstrap_distribution`.
    Resamples whose statistic is undefined (NaN) are left out of the quantiles (:func:`bootstrap_distribution` gives
    them, for a caller that reports how many).
    """
    point, boots = bootstrap_distribution(values, statistic, n_boot, seed, clusters)
    return (point, *percentile_interval(boots, ci))


def percentile_interval(boots: np.ndarray, ci: float = 0.95) -> tuple[float, float]:
    """The central ``ci`` interval of resampled statistics (NaN ones left out; NaN, NaN when all are)."""
    if np.isnan(boots).all():
        return float("nan"), float("nan")
    low, high = np.nanquantile(boots, _tails(ci))
    return float(low), float(high)


def bootstrap_mean_ci_rows(
    samples: np.ndarray, n_boot: int = 2000, rng: np.random.Generator | None = None, ci: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap CIs of the mean of every row of ``samples`` (reps x n) at once: (lows, highs).

    Each row is resampled on its own, ``n_boot`` times, with indices drawn as ``scipy.stats.bootstrap`` draws them
    (``rng.integers(0, n, (n_boot, n))`` per row, rows one after the other), so one row gives exactly
    :func:`bootstrap_ci` of ``np.mean`` under the same generator. ``rng`` is drawn from in place (a Monte Carlo
    study shares one stream between its samples and their resamples)."""
    samples = np.asarray(samples, dtype=float)
    if samples.ndim != 2 or samples.shape[1] == 0:
        raise ValueError(f"bootstrap_mean_ci_rows needs a non-empty 2-D array, got shape {samples.shape}")
    rng = np.random.default_rng() if rng is None else rng
    reps, n = samples.shape
    idx = rng.integers(0, n, size=(reps, n_boot, n))
    boots = np.take_along_axis(samples[:, None, :].repeat(n_boot, axis=1), idx, axis=2).mean(axis=2)
    low, high = np.quantile(boots, _tails(ci), axis=1)
    return low, high


@overload
def wilson(successes: float, n: float, ci: float = 0.95) -> tuple[float, float]: ...


@overload
def wilson(successes: np.ndarray, n: float | np.ndarray, ci: float = 0.95) -> tuple[np.ndarray, np.ndarray]: ...


def wilson(
    successes: float | np.ndarray, n: float | np.ndarray, ci: float = 0.95
) -> tuple[float, float] | tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of ``successes / n`` (NaN, NaN when n is 0); element-wise for arrays of counts.

    No successes give a lower bound of exactly 0 and all successes an upper bound of exactly 1, as the formula does
    (statsmodels' arithmetic can leave them a rounding error inside, which would read as "excludes 0")."""
    counts = np.asarray(successes, dtype=float)
    totals = np.broadcast_to(np.asarray(n, dtype=float), counts.shape)
    low, high = np.full(counts.shape, np.nan), np.full(counts.shape, np.nan)
    ok = totals > 0
    if ok.any():
        low[ok], high[ok] = proportion_confint(counts[ok], totals[ok], alpha=1.0 - ci, method="wilson")
        low[ok & (counts == 0)] = 0.0
        high[ok & (counts == totals)] = 1.0
    if np.ndim(successes) == 0 and np.ndim(n) == 0:
        return float(low), float(high)
    return low, high


def fisher_z_interval(r: float, n: int, ci: float = 0.95, z_variance: float = 1.0) -> tuple[float, float]:
    """The ``ci`` interval of a correlation ``r`` on ``n`` pairs through Fisher's z: tanh(artanh(r) -/+ q * se),
    with q the normal quantile and se = sqrt(z_variance / (n - 3)).

    ``z_variance`` is 1 for Pearson's r (Fisher 1921; ``scipy.stats.pearsonr(...).confidence_interval()``) and 1.06
    for Spearman's rho (Fieller, Hartley & Pearson 1957). NaN, NaN when n < 4, r is not finite or |r| = 1 (z is
    infinite there: the transform gives no interval)."""
    if n < 4 or not np.isfinite(r) or abs(r) >= 1:
        return float("nan"), float("nan")
    half = stats.norm.ppf(0.5 + ci / 2) * np.sqrt(z_variance / (n - 3))
    z = np.arctanh(r)
    return float(np.tanh(z - half)), float(np.tanh(z + half))
