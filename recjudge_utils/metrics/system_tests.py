"""Which systems differ? Paired tests over users with the family-wise error controlled.

A measure is a *users x systems* matrix of per-user values (NaN: no value). Two systems are compared over the users
both have, by the mean of their per-user differences. Testing every pair of k systems is k(k-1)/2 tests: at 5 % each,
8 identical systems give at least one "significant" pair in most runs, so the decisions here are corrected for the
family (Carterette 2012; Sakai 2006):

* :func:`sign_flip_pvalues`: the paired permutation test of a mean difference (each user's difference keeps or flips
  its sign, the null of exchangeable systems), two-sided, for many pairs at once; it is
  ``scipy.stats.permutation_test(..., permutation_type="samples")`` vectorised over pairs (the tests compare them);
* :func:`randomised_tukey_pvalues`: the randomised Tukey HSD (Carterette 2012): each user's values are shuffled across
  the systems and a pair's p-value is the share of shuffles whose *largest* difference between any two system means
  reaches the pair's own: a single-step max-statistic correction over all pairs, on the users with every system;
* :func:`compare_systems`: every pair (or every system against a ``baseline``, the family then being the k - 1
  comparisons, Dunnett-style), Holm's step-down correction (:func:`holm`, ``statsmodels``' ``multipletests``) of the
  sign-flip p-values or the randomised Tukey HSD, the difference with a simultaneous t interval (Bonferroni over the
  family, so an interval excluding 0 goes with a rejection), and the paired effect size d_z with its noncentral-t CI.

Below :data:`MIN_USERS` users with both systems no pair is called different: a permutation test over so few users
has few distinct outcomes and the effect size no useful interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

import numpy as np
import pandas as pd
from scipy import optimize, stats

from recjudge_utils.metrics.estimate import Estimate

__all__ = [
    "DECISIONS",
    "MIN_USERS",
    "EffectSize",
    "compare_systems",
    "dz_interval",
    "holm",
    "randomised_tukey_pvalues",
    "sign_flip_pvalues",
]

#: fewer users with both systems and no pair is called different (the table says why instead)
MIN_USERS = 10
#: ``decision`` values: a is higher, b is higher, no difference shown at the corrected level, too few users to test
DECISIONS = ("a higher", "b higher", "not separated", "no decision")
Method = Literal["holm", "tukey"]


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values: sorted ascending, the i-th (from 0) times (m - i), made non-decreasing,
    capped at 1. ``statsmodels.stats.multitest.multipletests(p, method="holm")[1]`` computes the same (the tests
    compare them); it runs a garbage collection on every call, which a simulation of thousands of families feels."""
    values = np.asarray(p, dtype=float)
    m = len(values)
    order = np.argsort(values, kind="stable")
    stepped = np.maximum.accumulate((m - np.arange(m)) * values[order])
    out = np.empty(m)
    out[order] = np.minimum(stepped, 1.0)
    return out


def _paired_differences(matrix: np.ndarray, pairs: list[tuple[int, int]]) -> np.ndarray:
    """users x pairs: a's value less b's, NaN where either is missing."""
    return np.stack([matrix[:, i] - matrix[:, j] for i, j in pairs], axis=1)


def _two_sided(null: np.ndarray, observed: np.ndarray, adjustment: int) -> np.ndarray:
    """scipy.stats.permutation_test's two-sided p-value: twice the smaller tail, the observed value counted in the
    null (``adjustment`` 1) unless the null is enumerated exactly; ties within a relative 1e-14 count as reaching."""
    gamma = np.abs(1e-14 * observed)
    n = null.shape[0]
    less = ((null <= observed + gamma).sum(axis=0) + adjustment) / (n + adjustment)
    greater = ((null >= observed - gamma).sum(axis=0) + adjustment) / (n + adjustment)
    return np.clip(2 * np.minimum(less, greater), 0.0, 1.0)


def sign_flip_pvalues(
    differences: np.ndarray, n_resamples: int = 2000, seed: int | np.random.Generator = 0
) -> np.ndarray:
    """Two-sided paired permutation p-values of the mean of each column of ``differences`` (users x pairs, NaN where
    a user lacks a system), every column under the same sign flips.

    When 2^n (n users) is at most ``n_resamples`` every sign vector is enumerated (an exact test, as scipy does);
    otherwise ``n_resamples`` random ones, with the observed statistic counted in the null. NaN for a column with no
    user."""
    d = np.asarray(differences, dtype=float)
    if d.ndim == 1:
        d = d[:, None]
    ok = np.isfinite(d)
    counts = ok.sum(axis=0)
    filled = np.where(ok, d, 0.0)  # a missing difference flips to 0 either way: it drops out of the sum
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = filled.sum(axis=0) / counts
    n = d.shape[0]
    if n <= 20 and 2**n <= n_resamples:
        # every sign vector; users a pair lacks repeat each of its patterns equally often, so its p stays exact
        signs = 1.0 - 2.0 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
        adjustment = 0
    else:
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(n_resamples, n))
        adjustment = 1
    with np.errstate(invalid="ignore", divide="ignore"):
        null = (signs @ filled) / counts
        p = _two_sided(null, observed, adjustment)
    return np.where(counts > 0, p, np.nan)


def randomised_tukey_pvalues(
    matrix: np.ndarray, pairs: list[tuple[int, int]], n_resamples: int = 2000, seed: int | np.random.Generator = 0
) -> tuple[np.ndarray, int]:
    """(p-values of ``pairs``, users used): the randomised Tukey HSD over the users with a value in every system.

    Each resample shuffles every user's values across the systems; a pair's p-value is the share of resamples (the
    observed one counted) whose range of system means reaches the pair's absolute difference of means."""
    x = np.asarray(matrix, dtype=float)
    x = x[np.isfinite(x).all(axis=1)]
    if len(x) == 0:
        return np.full(len(pairs), np.nan), 0
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    means = x.mean(axis=0)
    observed = np.array([abs(means[i] - means[j]) for i, j in pairs])
    shuffled = rng.permuted(np.broadcast_to(x, (n_resamples, *x.shape)), axis=2)
    boot = shuffled.mean(axis=1)
    ranges = boot.max(axis=1) - boot.min(axis=1)
    reach = (ranges[:, None] >= observed[None, :] - np.abs(1e-14 * observed)).sum(axis=0)
    return (reach + 1) / (n_resamples + 1), len(x)


@dataclass(frozen=True)
class EffectSize(Estimate):
    """The paired effect size d_z = mean difference / its standard deviation (``value``), with its CI over the ``n``
    finite differences."""

    n: int = 0


def dz_interval(differences: np.ndarray, ci: float = 0.95) -> EffectSize:
    """d_z of paired differences with the exact CI of the noncentral t: t = d_z sqrt(n) has noncentrality
    delta sqrt(n) on n - 1 degrees of freedom, and each bound is the delta that puts the observed t at the
    (1 -/+ ci)/2 quantile. NaN bounds below two differences or with no spread."""
    d = np.asarray(differences, dtype=float)
    d = d[np.isfinite(d)]
    n = len(d)
    method = f"{ci:.0%} noncentral t"
    if n < 2:
        return EffectSize(math.nan, n=n, method=method)
    sd = float(np.std(d, ddof=1))
    if sd == 0:
        return EffectSize(math.nan, n=n, method=method)
    dz = float(np.mean(d)) / sd
    t, df, root = dz * math.sqrt(n), n - 1, math.sqrt(n)

    def cdf(nc: float) -> float:
        # scipy's nct.cdf returns NaN far in its tails, where the value is 0 (nc well above t) or 1 (well below)
        value = float(stats.nct.cdf(t, df, nc))
        return value if math.isfinite(value) else (0.0 if nc > t else 1.0)

    def bound(q: float) -> float:
        # nct.cdf(t; nc) falls as nc grows; t's standard error sqrt(1 + t^2 / 2df) sets a bracket holding the root
        half = 10.0 * math.sqrt(1.0 + t * t / (2.0 * df))
        return float(optimize.brentq(lambda nc: cdf(nc) - q, t - half, t + half)) / root

    tail = (1.0 - ci) / 2.0
    return EffectSize(dz, bound(1.0 - tail), bound(tail), n, method)


def _t_interval(d: np.ndarray, level: float) -> tuple[float, float]:
    d = d[np.isfinite(d)]
    if len(d) < 2:
        return math.nan, math.nan
    if np.ptp(d) == 0:
        return float(d[0]), float(d[0])
    ci = stats.ttest_1samp(d, 0.0).confidence_interval(confidence_level=level)
    return float(ci.low), float(ci.high)


def compare_systems(
    matrix: pd.DataFrame,
    *,
    baseline: str | None = None,
    method: Method = "holm",
    alpha: float = 0.05,
    n_resamples: int = 2000,
    seed: int = 0,
    min_users: int = MIN_USERS,
    intervals: bool = True,
) -> pd.DataFrame:
    """Every two systems (columns of ``matrix``), or every system against ``baseline`` (b is then the baseline),
    tested over the users both have with the family-wise error held at ``alpha``.

    Columns: a, b, n (users with both), difference (mean of a - b), low, high (its simultaneous t interval, each at
    1 - alpha / family), d_z, dz_low, dz_high (95 %), p (unadjusted; for the Tukey HSD already family-wise),
    p_adjusted, test, family (comparisons corrected over) and decision (:data:`DECISIONS`: "no decision" below
    ``min_users``, whatever the p-value). Pairs with too few users stay in the family, which keeps it conservative.
    ``intervals=False`` leaves the intervals and d_z NaN (a simulation needs only the decisions).

    A Monte Carlo p-value is never below 1 / (resamples + 1); Holm's first step needs p < alpha / family, so the
    resamples are raised to at least 10 x family / alpha (for 28 pairs, 5,600) lest no pair could ever be
    separated."""
    names = [str(c) for c in matrix.columns]
    x = matrix.to_numpy(dtype=float)
    if baseline is not None:
        if baseline not in names:
            raise ValueError(f"baseline {baseline!r} is not one of the systems {names}")
        if method == "tukey":
            raise ValueError("the randomised Tukey HSD compares every pair; against a baseline use method='holm'")
        base = names.index(baseline)
        pairs = [(i, base) for i in range(len(names)) if i != base]
    else:
        pairs = list(combinations(range(len(names)), 2))
    columns = ["a", "b", "n", "difference", "low", "high", "d_z", "dz_low", "dz_high", "p", "p_adjusted", "test",
               "family", "decision"]  # fmt: skip
    if not pairs:
        return pd.DataFrame(columns=columns)
    diffs = _paired_differences(x, pairs)
    n = np.isfinite(diffs).sum(axis=0)
    family = len(pairs)
    if method == "holm":
        resamples = max(n_resamples, math.ceil(10 * family / alpha))
        p = sign_flip_pvalues(diffs, n_resamples=resamples, seed=seed)
        adjusted = np.full(family, np.nan)
        tested = np.isfinite(p)
        if tested.any():
            # untestable pairs (no user) leave the family; every testable one stays in it, decided or not
            adjusted[tested] = holm(p[tested])
        test = "paired sign-flip permutation, Holm"
    else:
        p, n_complete = randomised_tukey_pvalues(x, pairs, n_resamples=n_resamples, seed=seed)
        adjusted = p
        n = np.full(family, n_complete)
        complete = np.isfinite(x).all(axis=1)
        diffs = np.where(complete[:, None], diffs, np.nan)  # the HSD's users for every number of the row
        test = "randomised Tukey HSD"
    rows = []
    for k, (i, j) in enumerate(pairs):
        d = diffs[:, k]
        mean = float(np.nanmean(d)) if n[k] else math.nan
        low, high = _t_interval(d, 1.0 - alpha / family) if intervals else (math.nan, math.nan)
        effect = dz_interval(d) if intervals else EffectSize(math.nan)
        if n[k] < min_users or not math.isfinite(adjusted[k]):
            decision = DECISIONS[3]
        elif adjusted[k] < alpha and mean != 0:
            decision = DECISIONS[0] if mean > 0 else DECISIONS[1]
        else:
            decision = DECISIONS[2]
        rows.append([names[i], names[j], int(n[k]), mean, low, high, effect.value, effect.low, effect.high, float(p[k]),
                     float(adjusted[k]), test, family, decision])  # fmt: skip
    return pd.DataFrame(rows, columns=columns)
