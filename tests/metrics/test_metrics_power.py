"""Users a rerun needs: statsmodels' TTestPower at the corrected level, on hand-checked values."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.power import TTestPower

from recjudge_utils.metrics.power import pairwise_users_needed, users_needed


def test_users_needed_is_ttestpower_rounded_up() -> None:
    # d_z = 0.5, alpha 0.05, 80 %: 33.4 users, the textbook 34 (G*Power's paired t test)
    assert users_needed(0.5) == 34
    assert users_needed(-0.5) == 34
    want = TTestPower().solve_power(effect_size=0.3, alpha=0.05 / 6, power=0.8)
    assert users_needed(0.3, n_comparisons=6) == math.ceil(want)
    assert users_needed(0.0) == math.inf and math.isnan(users_needed(math.nan))
    assert users_needed(1e-6) == math.inf and users_needed(20.0) == 3  # at n = 2 the power is NaN (1 df)


def test_pairwise_plan_uses_the_pairs_own_differences() -> None:
    rng = np.random.default_rng(0)
    base = rng.normal(0, 1, 200)
    frame = pd.DataFrame({"a": base + 0.5 + rng.normal(0, 1, 200), "b": base + rng.normal(0, 1, 200)})
    frame.loc[:9, "a"] = np.nan
    got = pairwise_users_needed(frame).iloc[0]
    d = (frame["a"] - frame["b"]).dropna()
    assert got["n"] == 190 and got["d_z"] == pytest.approx(d.mean() / d.std(ddof=1))
    assert got["users_needed"] == users_needed(got["d_z"], n_comparisons=1)


@pytest.mark.parametrize("effect", [0.005, 0.03, 0.2, 0.8, 1.7, 3.0, 8.0, 20.0, 40.0])
@pytest.mark.parametrize("comparisons", [1, 6, 28])
def test_users_needed_is_the_smallest_n_that_reaches_the_power(effect: float, comparisons: int) -> None:
    # whatever solve_power's root finder does for this effect size: the plan is a whole n, the smallest that works
    n = users_needed(effect, n_comparisons=comparisons)
    level = 0.05 / comparisons
    assert math.isfinite(n) and n == int(n) >= 2
    power = TTestPower()
    assert power.power(effect, n, level, alternative="two-sided") >= 0.8
    if n > 2:
        below = power.power(effect, n - 1, level, alternative="two-sided")
        assert not below >= 0.8  # NaN (one degree of freedom) counts as not reached
