"""Agreement between rankings that can be read: tau_AP on hand-computed cases, split-half reliability, tau over the
pairs both measures decide, the claims' convention, and the coverage of the tau interval measured by simulation."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from scipy import stats

from recjudge_utils.metrics.rank_agreement import (
    MIN_SYSTEMS,
    agreement_claim,
    split_half_reliability,
    tau_ap,
    tau_ap_symmetric,
    tau_over_decided,
)
from recjudge_utils.metrics.system_agreement import kendall_tau


def test_tau_ap_on_hand_computed_rankings() -> None:
    scores = np.array([4.0, 3.0, 2.0, 1.0])  # ranking A B C D
    assert tau_ap(scores, scores) == pytest.approx(1.0)
    assert tau_ap(scores, -scores) == pytest.approx(-1.0)
    # reference A C B D: C(2) = 1 of 1, C(3) = 1 of 2, C(4) = 3 of 3 -> 2/3 * 2.5 - 1
    assert tau_ap(scores, np.array([4.0, 2.0, 3.0, 1.0])) == pytest.approx(2 / 3)
    # a swap at the top costs more than one at the bottom (Kendall's tau is 2/3 for both)
    top = tau_ap(scores, np.array([3.0, 4.0, 2.0, 1.0]))
    bottom = tau_ap(scores, np.array([4.0, 3.0, 1.0, 2.0]))
    assert top == pytest.approx(1 / 3) and bottom == pytest.approx(7 / 9)
    assert stats.kendalltau(scores, [3.0, 4.0, 2.0, 1.0]).statistic == pytest.approx(2 / 3)
    assert tau_ap_symmetric(scores, np.array([3.0, 4.0, 2.0, 1.0])) == pytest.approx(
        0.5 * (top + tau_ap(np.array([3.0, 4.0, 2.0, 1.0]), scores))
    )
    assert math.isnan(tau_ap(np.array([1.0]), np.array([2.0])))
    # a constant ranking has no order: no tau_AP either way round (tau-b is NaN there too)
    assert math.isnan(tau_ap(np.full(4, 4.0), scores)) and math.isnan(tau_ap(scores, np.full(4, 0.5)))


def test_split_half_reliability_is_high_for_a_clear_order_and_near_zero_for_noise() -> None:
    rng = np.random.default_rng(0)
    clear = np.arange(5.0) + rng.normal(0, 0.5, (80, 5))
    noise = rng.normal(0, 1, (80, 5))
    assert split_half_reliability(clear, n_splits=100).value > 0.9
    got = split_half_reliability(noise, n_splits=100)
    assert got.low < 0 < got.high and got.half == 40
    # one sample's chance order is shared by its halves; over samples, noise agrees with itself by nothing
    mean = np.mean([split_half_reliability(rng.normal(0, 1, (80, 5)), n_splits=50).value for _ in range(20)])
    assert abs(mean) < 0.15
    assert math.isnan(split_half_reliability(noise[:3]).value)


def test_tau_over_the_pairs_both_measures_decide() -> None:
    a = [("x", "y"), ("x", "z"), ("y", "z")]
    b = [("x", "y"), ("z", "x")]
    assert tau_over_decided(a, b) == (0.0, 2)
    assert tau_over_decided(a, a) == (1.0, 3)
    assert math.isnan(tau_over_decided(a, [])[0])


def test_claims_follow_the_convention() -> None:
    assert agreement_claim(0.95, 0.92, 1.0, 5, 0.9, 0.9) == "equivalent"
    assert agreement_claim(0.33, 0.05, 0.6, 5, 0.8, 0.7) == "agree"  # not "equivalent": the CI is not above 0.9
    assert agreement_claim(0.33, 0.05, 0.6, 5, 0.8, 0.2) == "unreliable"  # a measure does not agree with itself
    assert agreement_claim(-0.6, -0.9, -0.2, 5, 0.8, 0.7) == "disagree"
    assert agreement_claim(0.2, -0.3, 0.6, 5, 0.8, 0.7) == "unclear"
    assert agreement_claim(1.0, 1.0, 1.0, 3, 1.0, 1.0) == "too few systems" and MIN_SYSTEMS == 4
    assert agreement_claim(math.nan, math.nan, math.nan, 5, 0.8, 0.7) == "no tau"


def sparse_measures(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Five systems with the same true order in both measures (true tau = 1): sparse Precision@5 (hit rates 0.04 to
    0.08) and judge scores (mean of five 1-5 scores, system means 0.1 apart)."""
    precision = rng.binomial(5, np.array([0.04, 0.05, 0.06, 0.07, 0.08]), (n, 5)) / 5
    raw = 3.0 + (np.arange(5) * 0.1)[:, None] + rng.normal(0, 1, (n, 5, 5))
    return precision, np.clip(np.rint(raw), 1, 5).mean(axis=2)


def test_the_tau_interval_covers_the_tau_of_n_users_not_the_population_tau() -> None:
    """What chapter 7 says of its tau CI, measured (40 runs per user count, 200 resamples each): it covers the tau n
    users give on average, while it holds the population's tau (1 here) only once n is large; tau-hat drifts upward
    with n (noise in either ranking pulls tau towards 0), so a small run's low tau is no evidence of disagreement."""
    start, rows = time.perf_counter(), []
    for n in (30, 100, 300):
        rng = np.random.default_rng(n)
        got = [kendall_tau(*sparse_measures(rng, n), n_boot=200, seed=r) for r in range(40)]
        mean = float(np.nanmean([t.value for t in got]))
        rows.append(
            (
                n,
                mean,
                float(np.mean([t.high >= 1 - 1e-9 for t in got])),  # scipy's tau of one order is 1 - 1e-16
                float(np.mean([t.low <= mean <= t.high for t in got])),
            )
        )
    print("users, mean tau-hat, coverage of tau = 1, coverage of the mean tau-hat:", rows,
          f"{time.perf_counter() - start:.1f} s")  # fmt: skip
    means, true_cover, own_cover = zip(*[(m, c1, c2) for _, m, c1, c2 in rows], strict=True)
    assert means[0] < means[1] < means[2] < 1
    assert true_cover[0] <= 0.5 and true_cover[2] >= 0.9
    assert min(own_cover) >= 0.9
