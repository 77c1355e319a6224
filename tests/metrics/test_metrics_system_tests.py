"""Paired tests over users with the family-wise error controlled: against scipy and statsmodels, and by simulation
(identical systems: no more than 5 % of runs call any pair different; a known ordering: separated at the user count
the power planning predicts)."""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from recjudge_utils.metrics.power import pairwise_users_needed
from recjudge_utils.metrics.system_tests import (
    DECISIONS,
    MIN_USERS,
    compare_systems,
    dz_interval,
    holm,
    randomised_tukey_pvalues,
    sign_flip_pvalues,
)

RUNS = 200
#: 5 % plus two Monte Carlo standard errors of a rate measured over RUNS runs
FWER_BOUND = 0.05 + 2 * math.sqrt(0.05 * 0.95 / RUNS)


def avg_score_like(rng: np.random.Generator, n_users: int, effects: np.ndarray, k: int = 5) -> pd.DataFrame:
    """Per-user means of k 1-5 scores: a user's leniency shared by every system, plus each system's effect."""
    leniency = rng.normal(3.0, 0.6, (n_users, 1))
    raw = leniency[:, :, None] + effects[None, :, None] + rng.normal(0, 1.0, (n_users, len(effects), k))
    scores = np.clip(np.rint(raw), 1, 5).mean(axis=2)
    return pd.DataFrame(scores, columns=[f"s{i}" for i in range(len(effects))])


def test_sign_flip_is_scipys_paired_permutation_test() -> None:
    rng = np.random.default_rng(1)
    for n in (6, 9, 10):  # 2^n <= 2000: both enumerate every sign vector
        d = rng.normal(0.5, 1, n)
        want = stats.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=10_000).pvalue
        assert sign_flip_pvalues(d, n_resamples=2000)[0] == pytest.approx(want, abs=1e-12)
    # a pair with missing users is tested over the users it has, exactly as scipy does over those alone
    d = rng.normal(0.5, 1, (9, 2))
    d[:3, 1] = np.nan
    got = sign_flip_pvalues(d, n_resamples=2000)
    want = stats.permutation_test((d[3:, 1],), np.mean, permutation_type="samples", n_resamples=10_000).pvalue
    assert got[1] == pytest.approx(want, abs=1e-12)
    # random sign flips: within Monte Carlo error of scipy's
    d = rng.normal(0.3, 1, 40)
    want = stats.permutation_test(
        (d,), lambda x, axis: np.mean(x, axis=axis), vectorized=True, permutation_type="samples", n_resamples=20_000
    ).pvalue
    assert sign_flip_pvalues(d, n_resamples=20_000)[0] == pytest.approx(want, abs=4 * math.sqrt(want / 20_000))


def test_holm_is_statsmodels_and_the_interval_is_simultaneous() -> None:
    rng = np.random.default_rng(2)
    frame = avg_score_like(rng, 40, np.array([0.0, 0.0, 0.4, 0.8]))
    got = compare_systems(frame, n_resamples=2000, seed=3)
    assert len(got) == 6 and (got["family"] == 6).all()
    assert np.allclose(got["p_adjusted"], multipletests(got["p"], method="holm")[1])
    d = frame["s0"] - frame["s3"]
    row = got[(got["a"] == "s0") & (got["b"] == "s3")].iloc[0]
    ci = stats.ttest_1samp(d, 0).confidence_interval(confidence_level=1 - 0.05 / 6)
    assert (row["low"], row["high"]) == pytest.approx((ci.low, ci.high))
    assert row["difference"] == pytest.approx(d.mean()) and row["decision"] == "b higher"


def test_holm_matches_statsmodels_with_ties_and_caps() -> None:
    rng = np.random.default_rng(8)
    for p in (rng.uniform(0, 0.2, 28), np.array([0.01, 0.01, 0.04, 0.5, 0.03]), np.array([0.9]), rng.uniform(0, 1, 7)):
        assert np.allclose(holm(p), multipletests(p, method="holm")[1])


def test_effect_size_interval_inverts_the_noncentral_t() -> None:
    rng = np.random.default_rng(4)
    d = rng.normal(0.4, 1, 30)
    got = dz_interval(d)
    assert got.value == pytest.approx(d.mean() / d.std(ddof=1))
    t = got.value * math.sqrt(30)
    assert stats.nct.cdf(t, 29, got.low * math.sqrt(30)) == pytest.approx(0.975, abs=1e-6)
    assert stats.nct.cdf(t, 29, got.high * math.sqrt(30)) == pytest.approx(0.025, abs=1e-6)
    # large n: the normal approximation se = sqrt(1/n + d^2 / 2n)
    big = rng.normal(0.4, 1, 4000)
    wide = dz_interval(big)
    se = math.sqrt(1 / 4000 + wide.value**2 / 8000)
    assert (wide.low, wide.high) == pytest.approx((wide.value - 1.96 * se, wide.value + 1.96 * se), abs=2e-3)
    assert math.isnan(dz_interval(np.ones(5)).low)


def test_tukey_hsd_on_a_hand_made_case() -> None:
    # two users, two systems: a shuffle keeps or swaps each user's pair; the means differ by 1 (the observed range)
    # when both users keep or both swap, half the shuffles, and by 0 otherwise: p = (B / 2 + 1) / (B + 1)
    x = np.array([[1.0, 0.0], [1.0, 0.0]])
    p, n = randomised_tukey_pvalues(x, [(0, 1)], n_resamples=4000, seed=0)
    assert n == 2 and p[0] == pytest.approx(0.5, abs=0.03)
    separated = np.column_stack([np.zeros(30), np.full(30, 5.0), np.full(30, 5.0)]) + np.random.default_rng(0).normal(
        0, 0.1, (30, 3)
    )
    p, _ = randomised_tukey_pvalues(separated, [(0, 1), (1, 2)], n_resamples=500, seed=0)
    assert p[0] < 0.01 and p[1] > 0.05


def test_below_ten_users_no_pair_is_called_different() -> None:
    frame = pd.DataFrame({"a": np.arange(9.0) + 10, "b": np.arange(9.0), "c": np.arange(9.0) - 10})
    got = compare_systems(frame, n_resamples=500)
    assert (got["decision"] == "no decision").all() and MIN_USERS == 10
    assert (compare_systems(pd.concat([frame, frame.iloc[:1]]), n_resamples=500)["decision"] != "no decision").all()


def test_every_system_against_a_baseline_is_one_family() -> None:
    rng = np.random.default_rng(5)
    frame = avg_score_like(rng, 50, np.array([0.0, 0.6, 0.0, -0.6]))
    got = compare_systems(frame, baseline="s0", n_resamples=1000)
    assert list(got["a"]) == ["s1", "s2", "s3"] and set(got["b"]) == {"s0"} and (got["family"] == 3).all()
    assert got.set_index("a").loc["s1", "decision"] == "a higher"
    assert got.set_index("a").loc["s3", "decision"] == "b higher"
    with pytest.raises(ValueError, match="not one of the systems"):
        compare_systems(frame, baseline="nope")


def test_identical_systems_rarely_give_any_separation() -> None:
    """Issue 41: 8 identical systems (28 pairs), 200 simulated runs: the corrected all-pairs decisions call at least
    one pair different in at most 5 % of runs (with Monte Carlo margin); the uncorrected ones in most runs."""
    start = time.perf_counter()
    rng = np.random.default_rng(41)
    effects = np.zeros(8)
    any_holm = any_tukey = any_raw = 0
    for run in range(RUNS):
        frame = avg_score_like(rng, 30, effects)
        holm = compare_systems(frame, seed=run, intervals=False)
        tukey = compare_systems(frame, method="tukey", n_resamples=300, seed=run, intervals=False)
        any_holm += bool(holm["decision"].isin(DECISIONS[:2]).any())
        any_tukey += bool(tukey["decision"].isin(DECISIONS[:2]).any())
        any_raw += bool((holm["p"] < 0.05).any())
    rates = {"holm": any_holm / RUNS, "tukey": any_tukey / RUNS, "uncorrected": any_raw / RUNS}
    print(f"family-wise false-positive rate over {RUNS} runs (8 identical systems, 30 users): {rates}; "
          f"bound {FWER_BOUND:.3f}; {time.perf_counter() - start:.1f} s")  # fmt: skip
    assert rates["holm"] <= FWER_BOUND and rates["tukey"] <= FWER_BOUND
    assert rates["uncorrected"] > 0.3  # what the chapter's old uncorrected CIs did


def test_a_known_ordering_is_separated_at_the_planned_user_count() -> None:
    """Four systems with known effects: the users the power planning asks for (80 %, Holm over the 6 pairs) separate
    the closest pair in about 80 % of simulated runs."""
    rng = np.random.default_rng(7)
    effects = np.array([0.0, 0.25, 0.7, 1.1])
    pilot = avg_score_like(rng, 3000, effects)
    plan = pairwise_users_needed(pilot, [("s1", "s0")], n_comparisons=6)
    n = int(plan["users_needed"].iloc[0])
    assert 10 <= n <= 400
    hits = 0
    runs = 100
    for run in range(runs):
        got = compare_systems(avg_score_like(rng, n, effects), seed=run, intervals=False)
        hits += got.set_index(["a", "b"]).loc[("s0", "s1"), "decision"] == "b higher"
    print(f"planned {n} users (d_z {plan['d_z'].iloc[0]:.3f}); closest pair separated in {hits}/{runs} runs")
    assert hits / runs >= 0.7
