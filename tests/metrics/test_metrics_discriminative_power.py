"""Discriminative power, the swap rate and the users-needed curve, on cases whose answer is known."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from recjudge_utils.metrics.discriminative_power import discriminative_power, swap_rate, users_needed_curve
from recjudge_utils.metrics.system_tests import compare_systems


def frame(rng: np.random.Generator, n: int, effects: list[float], noise: float = 1.0) -> pd.DataFrame:
    return pd.DataFrame(
        np.array(effects) + rng.normal(0, noise, (n, len(effects))), columns=list("abcd")[: len(effects)]
    )


def test_power_is_the_share_of_pairs_decided() -> None:
    rng = np.random.default_rng(0)
    clear = compare_systems(frame(rng, 60, [0.0, 2.0, 4.0, 6.0]), intervals=False)
    assert discriminative_power(clear) == 1.0
    none = compare_systems(frame(rng, 60, [0.0, 0.0, 0.0, 0.0], noise=0.01) * 0, intervals=False)
    assert discriminative_power(none) == 0.0
    assert math.isnan(discriminative_power(clear.iloc[:0]))


def test_swap_rate_is_zero_for_a_clear_order_and_near_half_for_noise() -> None:
    rng = np.random.default_rng(1)
    assert swap_rate(frame(rng, 80, [0.0, 2.0, 4.0, 6.0], noise=0.5), n_splits=50).rate == 0.0
    noisy = swap_rate(frame(rng, 80, [0.0, 0.0, 0.0, 0.0]), n_splits=200)
    assert 0.35 < noisy.rate < 0.65 and noisy.half == 40 and noisy.comparisons == 200 * 6
    # hand-made: users 1-2 favour a, users 3-4 favour b; a split that keeps 1-2 together (1 of the 3 ways to halve)
    # orders the pair oppositely in its halves; the other two leave a difference of 0 in both, which is not counted
    x = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    got = swap_rate(x, n_splits=3000, seed=2)
    assert got.rate == 1.0 and 0.28 < got.comparisons / 3000 < 0.39
    assert math.isnan(swap_rate(x[:3]).rate)


def test_the_curve_rises_with_users_and_the_swap_rate_falls() -> None:
    rng = np.random.default_rng(3)
    data = frame(rng, 200, [0.0, 0.3, 0.6, 0.9])
    curve = users_needed_curve(data, [5, 20, 80], n_draws=10, n_resamples=300)
    assert list(curve["users"]) == [5, 20, 80]
    assert curve["power"].iloc[0] == 0.0  # below ten users no decision
    assert curve["power"].iloc[2] > curve["power"].iloc[1]
    assert curve["swap_rate"].iloc[2] < curve["swap_rate"].iloc[0]
