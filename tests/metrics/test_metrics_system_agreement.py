"""Kendall's tau between system rankings, its bootstrap CI over users, system means and separated pairs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from recjudge_utils.metrics.intervals import bootstrap_distribution
from recjudge_utils.metrics.system_agreement import (
    kendall_tau,
    mean_per_system,
    separated_pairs,
    system_means,
    tau_b_rows,
)


def matrices(n_users: int = 40, noise: float = 1.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two measures of six systems whose true order is 0 < 1 < ... < 5, with independent per-user noise."""
    rng = np.random.default_rng(seed)
    truth = np.arange(6, dtype=float)
    return truth + rng.normal(0, noise, (n_users, 6)), truth + rng.normal(0, noise, (n_users, 6))


def test_point_estimate_is_scipys_tau_of_the_system_means() -> None:
    a, b = matrices()
    got = kendall_tau(a, b, n_boot=200)
    want = stats.kendalltau(a.mean(axis=0), b.mean(axis=0)).statistic
    assert got.value == pytest.approx(want)
    assert (got.n_systems, got.n) == (6, 40)


def test_nan_cells_are_left_out_of_a_systems_mean() -> None:
    a, b = matrices()
    a[:20, 0] = np.nan
    got = kendall_tau(a, b, n_boot=50)
    want = stats.kendalltau(np.nanmean(a, axis=0), b.mean(axis=0)).statistic
    assert got.value == pytest.approx(want)


def test_ci_holds_the_estimate_narrows_with_users_and_is_seeded() -> None:
    small = kendall_tau(*matrices(n_users=10, noise=3.0), n_boot=400, seed=1)
    large = kendall_tau(*matrices(n_users=160, noise=3.0), n_boot=400, seed=1)
    assert small.low <= small.value <= small.high
    assert (large.high - large.low) < (small.high - small.low)
    again = kendall_tau(*matrices(n_users=10, noise=3.0), n_boot=400, seed=1)
    other = kendall_tau(*matrices(n_users=10, noise=3.0), n_boot=400, seed=2)
    assert (again.low, again.high) == (small.low, small.high)
    assert (other.low, other.high) != (small.low, small.high)


def test_unrelated_measures_have_a_ci_around_zero_and_reversed_ones_a_negative_tau() -> None:
    rng = np.random.default_rng(3)
    a = np.arange(6, dtype=float) + rng.normal(0, 0.3, (60, 6))
    unrelated = rng.normal(0, 1, (60, 6))
    got = kendall_tau(a, unrelated, n_boot=400)
    assert got.low < 0 < got.high
    reversed_ = kendall_tau(a, -a, n_boot=100)
    assert reversed_.value == pytest.approx(-1.0)


def test_constant_ranking_and_single_user_give_no_tau_or_no_ci() -> None:
    a, _ = matrices()
    constant = np.full_like(a, 3.0)
    assert math.isnan(kendall_tau(a, constant).value)
    one = kendall_tau(a[:1], a[:1] + 1)
    assert one.value == pytest.approx(1.0)
    assert math.isnan(one.low) and math.isnan(one.high)
    with pytest.raises(ValueError, match="one shape"):
        kendall_tau(a, a[:, :3])


def test_system_means_match_pandas_and_one_user_has_no_ci() -> None:
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0, np.nan], "y": [np.nan, np.nan, 5.0, np.nan]})
    got = system_means(frame, n_boot=200).set_index("system")
    assert got.loc["x", "mean"] == pytest.approx(2.0)
    assert got.loc["x", "n"] == 3
    assert got.loc["x", "low"] < 2.0 < got.loc["x", "high"]
    assert got.loc["y", "mean"] == 5.0 and math.isnan(got.loc["y", "low"])


def test_separated_pairs_follow_the_paired_ci() -> None:
    rng = np.random.default_rng(0)
    base = rng.normal(0, 1, 50)
    frame = pd.DataFrame({"a": base + 1.0, "b": base + rng.normal(0, 0.1, 50), "c": base + rng.normal(0, 0.1, 50)})
    got = separated_pairs(frame, n_boot=400).set_index(["a", "b"])
    assert bool(got.loc[("a", "b"), "separated"]) and got.loc[("a", "b"), "difference"] > 0.8
    assert not bool(got.loc[("b", "c"), "separated"])
    assert len(got) == 3


def test_tau_b_rows_is_scipys_tau_b_row_by_row_with_ties_and_missing_systems() -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(0, 4, (400, 6)).astype(float)  # few levels: many ties
    b = rng.integers(0, 4, (400, 6)).astype(float)
    a[rng.random(a.shape) < 0.15] = np.nan
    b[rng.random(b.shape) < 0.15] = np.nan
    got = tau_b_rows(a, b)
    for row in range(len(a)):
        ok = np.isfinite(a[row]) & np.isfinite(b[row])
        x, y = a[row][ok], b[row][ok]
        want = math.nan if ok.sum() < 2 or np.ptp(x) == 0 or np.ptp(y) == 0 else stats.kendalltau(x, y).statistic
        assert got[row] == pytest.approx(want, abs=1e-12, nan_ok=True), row
    assert np.isnan(got).any() and np.isfinite(got).sum() > 300  # both branches were exercised


def test_the_bootstrap_of_tau_gives_what_one_scipy_call_per_resample_gave() -> None:
    rng = np.random.default_rng(4)
    x = rng.normal(size=(25, 5)) + np.arange(5) * 0.3
    y = x + rng.normal(size=(25, 5))
    x[rng.random(x.shape) < 0.1] = np.nan
    got = kendall_tau(x, y, n_boot=300, seed=7)

    def one_resample(rows: np.ndarray) -> float:  # no axis keyword: scipy hands it one resample at a time
        ok = np.isfinite(mean_per_system(x[rows])) & np.isfinite(mean_per_system(y[rows]))
        return float(stats.kendalltau(mean_per_system(x[rows])[ok], mean_per_system(y[rows])[ok]).statistic)

    _, loop = bootstrap_distribution(np.arange(25), one_resample, n_boot=300, seed=7)
    kept = loop[np.isfinite(loop)]
    assert got.n_boot == len(kept) > 250
    assert (got.low, got.high) == pytest.approx(tuple(np.quantile(kept, [0.025, 0.975])), abs=1e-12)
