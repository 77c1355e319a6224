"""Kendall's tau between system rankings, its bootstrap CI over users, system means and separated pairs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from recjudge_utils.metrics.system_agreement import kendall_tau, separated_pairs, system_means


def matrices(n_users: int = 40, noise: float = 1.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two measures of six systems whose true order is 0 < 1 < ... < 5, with independent per-user noise."""
    rng = np.random.default_rng(seed)
    truth = np.arange(6, dtype=float)
    return truth + rng.normal(0, noise, (n_users, 6)), truth + rng.normal(0, noise, (n_users, 6))


def test_point_estimate_is_scipys_tau_of_the_system_means() -> None:
    a, b = matrices()
    got = kendall_tau(a, b, n_boot=200)
    want = stats.kendalltau(a.mean(axis=0), b.mean(axis=0)).statistic
    assert got.tau == pytest.approx(want)
    assert (got.n_systems, got.n_users) == (6, 40)


def test_nan_cells_are_left_out_of_a_systems_mean() -> None:
    a, b = matrices()
    a[:20, 0] = np.nan
    got = kendall_tau(a, b, n_boot=50)
    want = stats.kendalltau(np.nanmean(a, axis=0), b.mean(axis=0)).statistic
    assert got.tau == pytest.approx(want)


def test_ci_holds_the_estimate_narrows_with_users_and_is_seeded() -> None:
    small = kendall_tau(*matrices(n_users=10, noise=3.0), n_boot=400, seed=1)
    large = kendall_tau(*matrices(n_users=160, noise=3.0), n_boot=400, seed=1)
    assert small.low <= small.tau <= small.high
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
    assert reversed_.tau == pytest.approx(-1.0)


def test_constant_ranking_and_single_user_give_no_tau_or_no_ci() -> None:
    a, _ = matrices()
    constant = np.full_like(a, 3.0)
    assert math.isnan(kendall_tau(a, constant).tau)
    one = kendall_tau(a[:1], a[:1] + 1)
    assert one.tau == pytest.approx(1.0)
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
