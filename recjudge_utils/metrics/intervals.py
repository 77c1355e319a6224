"""Confidence intervals shared by every metric.

* :func:`bootstrap_ci`: the percentile bootstrap of any statistic (resampling rows, paired when several aligned
  arrays are given), on ``scipy.stats.bootstrap``;
* :func:`wilson`: the Wilson score interval of a proportion (statsmodels' ``proportion_confint``), the right
  interval for a share (a win rate, an accuracy, a detection or consistency rate) when n is small: the percentile
  bootstrap of a share of 10 is often a zero-width interval at 0% or 100%.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

__all__ = ["bootstrap_ci", "bootstrap_distribution", "percentile_interval", "wilson"]

Values = np.ndarray | Sequence[float] | tuple[np.ndarray, ...]


def _as_arrays(values: Values) -> tuple[np.ndarray, ...]:
    arrays = tuple(np.asarray(v) for v in values) if isinstance(values, tuple) else (np.asarray(values),)
    n = len(arrays[0])
    if n == 0:
        raise ValueError("the bootstrap needs at least one value")
    if any(len(a) != n for a in arrays):
        raise ValueError("the bootstrap: aligned arrays must have the same length")
    return arrays


def bootstrap_distribution(
    values: Values, statistic: Callable[..., float] = np.mean, n_boot: int = 2000, seed: int = 0
) -> tuple[float, np.ndarray]:
    """(point estimate, ``n_boot`` resampled statistics): rows drawn with replacement by ``scipy.stats.bootstrap``,
    aligned arrays together (a paired bootstrap), each resample passed positionally to ``statistic``. A single row
    gives ``n_boot`` copies of the point estimate."""
    arrays = _as_arrays(values)
    point = float(statistic(*arrays))
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
            vectorized=False,
            method="percentile",
            random_state=np.random.default_rng(seed),
        )
    return point, np.asarray(res.bootstrap_distribution, dtype=float).reshape(-1)


def bootstrap_ci(
    values: Values,
    statistic: Callable[..., float] = np.mean,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Percentile bootstrap: returns (point estimate, low, high).

    ``values`` is one 1-D array, or a tuple of aligned arrays that are resampled together
    (rows stay paired) and passed positionally to ``statistic``. Resamples whose statistic is undefined (NaN) are
    left out of the quantiles.
    """
    point, boots = bootstrap_distribution(values, statistic, n_boot, seed)
    return (point, *percentile_interval(boots, ci))


def percentile_interval(boots: np.ndarray, ci: float = 0.95) -> tuple[float, float]:
    """The central ``ci`` interval of resampled statistics (NaN ones left out; NaN, NaN when all are)."""
    if np.isnan(boots).all():
        return float("nan"), float("nan")
    alpha = (1.0 - ci) / 2.0
    low, high = np.nanquantile(boots, [alpha, 1.0 - alpha])
    return float(low), float(high)


def wilson(successes: float, n: float, ci: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of ``successes / n`` (NaN, NaN when n is 0)."""
    if n <= 0:
        return float("nan"), float("nan")
    low, high = proportion_confint(successes, n, alpha=1.0 - ci, method="wilson")
    return float(low), float(high)
