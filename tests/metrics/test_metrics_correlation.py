"""Correlations (recjudge_utils.metrics.correlation) against scipy: Pearson's r and p, Spearman's rho with its
Fisher-z interval, and the range of r under rounding against a draw-by-draw loop."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from recjudge_utils.metrics import offline
from recjudge_utils.metrics.correlation import SPEARMAN_Z_VARIANCE, pearson, pearson_rounding_range, spearman_ci


def test_pearson_is_scipys_on_the_finite_pairs() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=30)
    y = 0.3 * x + rng.normal(size=30)
    reference = stats.pearsonr(x, y)
    assert pearson(x, y) == pytest.approx((reference.statistic, reference.pvalue), rel=1e-12)
    x_gaps, y_gaps = np.append(x, [np.nan, 1.0]), np.append(y, [2.0, np.inf])
    assert pearson(x_gaps, y_gaps) == pytest.approx((reference.statistic, reference.pvalue), rel=1e-12)
    assert all(math.isnan(v) for v in pearson([1, 2, np.nan], [3, 4, 5]))  # two finite pairs: no r
    assert offline.pearson is pearson  # the Arena chapter's import path is the same function


def test_spearman_ci_is_scipys_rho_with_a_fisher_z_interval() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=9)
    y = x + rng.normal(size=9)
    res = spearman_ci(x, y)
    rho, low, high = res.value, res.low, res.high
    assert res.n == 9 and rho == pytest.approx(stats.spearmanr(x, y).statistic, rel=1e-12)
    half = stats.norm.ppf(0.975) * math.sqrt(SPEARMAN_Z_VARIANCE / (9 - 3))
    assert (low, high) == pytest.approx((math.tanh(math.atanh(rho) - half), math.tanh(math.atanh(rho) + half)))
    assert low < rho < high
    narrower = spearman_ci(x, y, ci=0.8)
    assert low < narrower.low < rho < narrower.high < high


@pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning")  # the constant column: rho undefined
@pytest.mark.parametrize(
    ("x", "y", "why"),
    [([1, 2, 3], [1, 3, 2], "n < 4"), ([1, 2, 3, 4], [2, 4, 6, 8], "|rho| = 1"), ([1, 2, 3, 4], [5, 5, 5, 5], "nan")],
)
def test_spearman_ci_has_no_interval_where_fisher_z_has_none(x: list[float], y: list[float], why: str) -> None:
    res = spearman_ci(x, y)
    assert math.isnan(res.low) and math.isnan(res.high) and res.n == len(x)
    assert math.isnan(res.value) if why == "nan" else math.isfinite(res.value)


def test_pearson_rounding_range_is_the_range_of_scipys_r_over_the_jittered_draws() -> None:
    x = np.array([0.7512, 0.6803, 0.6771, 0.6104, 0.7])
    y = np.array([1.9521, 1.9107, 1.7909, 1.7233, 1.8])
    low, high = pearson_rounding_range(x, y, half_unit=5e-5, draws=300, seed=4)
    rng = np.random.default_rng(4)
    rs = [
        stats.pearsonr(x + rng.uniform(-5e-5, 5e-5, len(x)), y + rng.uniform(-5e-5, 5e-5, len(y))).statistic
        for _ in range(300)
    ]
    assert (low, high) == pytest.approx((min(rs), max(rs)), rel=0, abs=1e-12)
    r = pearson(x, y)[0]
    assert low < r < high and high - low < 0.01  # a rounding of 1e-4 moves r a little, not a lot
    wider = pearson_rounding_range(x, y, half_unit=5e-3, draws=300, seed=4)
    assert wider[0] < low and wider[1] > high
    with pytest.raises(ValueError, match="aligned"):
        pearson_rounding_range(x, y[:3])
