"""Unparsed answers across systems: scipy's chi-square where it holds, fixed-margin Monte Carlo where it does not."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from recjudge_utils.metrics.missingness import unparsed_test


def test_large_counts_are_scipys_chi_square() -> None:
    got = unparsed_test([30, 60, 45], [300, 300, 300])
    want = stats.chi2_contingency(np.array([[270, 30], [240, 60], [255, 45]]), correction=False)
    assert got.method == "chi-square" and got.dof == 2
    assert (got.statistic, got.p) == pytest.approx((want.statistic, want.pvalue))


def test_small_counts_use_fixed_margin_draws_close_to_the_exact_test() -> None:
    # two systems: the fixed-margin null is Fisher's hypergeometric; the two-sided chi-square p is near Fisher's
    got = unparsed_test([0, 5], [10, 10], n_resamples=20_000)
    assert got.method == "Monte Carlo, fixed margins"
    fisher = stats.fisher_exact([[10, 0], [5, 5]]).pvalue
    assert got.p == pytest.approx(fisher, abs=0.01)


def test_identical_rates_rarely_reject_and_nothing_to_test_is_nan() -> None:
    rng = np.random.default_rng(0)
    rejections = sum(unparsed_test(rng.binomial(30, 0.1, 4), [30] * 4, n_resamples=500, seed=k).p < 0.05
                     for k in range(100))  # fmt: skip
    assert rejections <= 12
    assert math.isnan(unparsed_test([0, 0], [10, 10]).p) and math.isnan(unparsed_test([3], [10]).p)
