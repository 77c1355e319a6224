"""Confidence intervals (recjudge_utils.metrics.intervals), each against its reference implementation: the percentile
bootstrap against ``scipy.stats.bootstrap`` on the same resamples, Wilson against statsmodels' ``proportion_confint``,
Fisher's z against ``scipy.stats.pearsonr(...).confidence_interval()``; and weighted kappa against scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from recjudge_utils.metrics.agreement import weighted_kappa
from recjudge_utils.metrics.intervals import (
    bootstrap_ci,
    bootstrap_distribution,
    bootstrap_mean_ci_rows,
    cluster_groups,
    fisher_z_interval,
    percentile_interval,
    wilson,
)


def test_bootstrap_ci_brackets_the_mean_and_shrinks_with_n() -> None:
    rng = np.random.default_rng(1)
    small = rng.normal(3.0, 1.0, size=30)
    large = rng.normal(3.0, 1.0, size=3000)
    point, low, high = bootstrap_ci(small, seed=0)
    assert point == pytest.approx(small.mean())
    assert low < point < high
    _, low_l, high_l = bootstrap_ci(large, seed=0)
    assert (high_l - low_l) < (high - low) / 5


@pytest.mark.parametrize("ci", [0.95, 0.9])
def test_bootstrap_ci_is_scipys_percentile_bootstrap_on_the_same_resamples(ci: float) -> None:
    values = np.random.default_rng(4).exponential(2.0, size=45)
    reference = stats.bootstrap(
        (values,), np.mean, n_resamples=1500, method="percentile", confidence_level=ci, rng=np.random.default_rng(9)
    )
    point, low, high = bootstrap_ci(values, np.mean, n_boot=1500, ci=ci, seed=9)
    assert point == values.mean()
    assert (low, high) == pytest.approx(tuple(reference.confidence_interval), rel=0, abs=1e-12)
    _, boots = bootstrap_distribution(values, np.mean, n_boot=1500, seed=9)
    assert boots == pytest.approx(reference.bootstrap_distribution, rel=0, abs=1e-12)


def test_a_legacy_random_state_reproduces_scipys_integer_random_state() -> None:
    values = np.random.default_rng(6).normal(size=60)
    reference = stats.bootstrap((values,), np.mean, n_resamples=800, method="percentile", random_state=3)
    _, low, high = bootstrap_ci(values, np.mean, n_boot=800, seed=np.random.RandomState(3))
    assert (low, high) == pytest.approx(tuple(reference.confidence_interval), rel=0, abs=1e-12)


def test_bootstrap_ci_resamples_aligned_arrays_together() -> None:
    pred = np.array([1, 2, 3, 4, 5, 3, 2])
    gold = pred.copy()
    point, low, high = bootstrap_ci((pred, gold), statistic=lambda p, g: np.mean(np.abs(p - g)))
    assert (point, low, high) == (0.0, 0.0, 0.0)  # pairs stay paired: the error is zero in every resample


def test_the_seed_chooses_the_resamples() -> None:
    values = np.random.default_rng(0).normal(size=25)
    same = bootstrap_ci(values, seed=3)
    assert same == bootstrap_ci(values, seed=3)  # one seed, one interval, to the last bit
    others = {bootstrap_ci(values, seed=s)[1:] for s in (4, 5, 6)}
    assert same[1:] not in others and len(others) == 3  # another seed, other resamples, another interval
    assert not np.array_equal(bootstrap_distribution(values, seed=3)[1], bootstrap_distribution(values, seed=4)[1])


def test_bootstrap_ci_rejects_empty_and_misaligned_input() -> None:
    with pytest.raises(ValueError, match="at least one"):
        bootstrap_ci([])
    with pytest.raises(ValueError, match="same length"):
        bootstrap_ci((np.arange(3), np.arange(4)))


def test_percentile_interval_leaves_undefined_resamples_out() -> None:
    boots = np.array([np.nan, *np.arange(101.0), np.nan])
    assert percentile_interval(boots, 0.9) == pytest.approx((5.0, 95.0))
    assert all(math.isnan(v) for v in percentile_interval(np.full(4, np.nan)))


def test_the_rows_bootstrap_is_the_same_bootstrap_for_each_row() -> None:
    samples = np.random.default_rng(2).integers(0, 5, size=(3, 40)).astype(float)
    lows, highs = bootstrap_mean_ci_rows(samples, 600, np.random.default_rng(8))
    # row by row: the resamples scipy draws from the same stream, one row after the other
    stream = np.random.default_rng(8)
    for row, low, high in zip(samples, lows, highs, strict=True):
        reference = stats.bootstrap((row,), np.mean, n_resamples=600, method="percentile", rng=stream)
        assert (low, high) == pytest.approx(tuple(reference.confidence_interval), rel=0, abs=1e-12)
    one = bootstrap_mean_ci_rows(samples[:1], 600, np.random.default_rng(8))
    assert (one[0][0], one[1][0]) == pytest.approx(bootstrap_ci(samples[0], n_boot=600, seed=8)[1:], abs=1e-12)
    with pytest.raises(ValueError, match="2-D"):
        bootstrap_mean_ci_rows(samples[0], 10, np.random.default_rng(0))


def test_wilson_is_statsmodels_for_counts_and_arrays_of_counts() -> None:
    for k, n in ((0, 10), (3, 10), (10, 10), (57, 200)):
        assert wilson(k, n) == pytest.approx(proportion_confint(k, n, alpha=0.05, method="wilson"), abs=1e-15)
        assert wilson(k, n, ci=0.9) == pytest.approx(proportion_confint(k, n, alpha=0.1, method="wilson"), abs=1e-15)
    counts = np.array([0, 4, 9])
    low, high = wilson(counts, 9)
    ref_low, ref_high = proportion_confint(counts, 9, alpha=0.05, method="wilson")
    assert low == pytest.approx(ref_low, abs=1e-15) and high == pytest.approx(ref_high, abs=1e-15)
    assert all(math.isnan(v) for v in wilson(0, 0))
    # the formula's exact ends (statsmodels leaves 5.6e-17 for 0 of 3): none can read as "excludes 0", all as "below 1"
    for n in (3, 6, 7, 9, 48):
        assert wilson(0, n)[0] == 0.0 and wilson(n, n)[1] == 1.0
    ends = wilson(np.array([0, 3]), 3)
    assert (ends[0][0], ends[1][1]) == (0.0, 1.0)
    low, high = wilson(np.array([1, 0]), np.array([4, 0]))
    assert low[0] == pytest.approx(proportion_confint(1, 4, method="wilson")[0]) and math.isnan(high[1])


def test_fisher_z_interval_is_scipys_interval_for_pearsons_r() -> None:
    rng = np.random.default_rng(7)
    for n in (5, 12, 80):
        x = rng.normal(size=n)
        y = 0.5 * x + rng.normal(size=n)
        res = stats.pearsonr(x, y)
        for ci in (0.95, 0.8):
            reference = res.confidence_interval(confidence_level=ci)
            got = fisher_z_interval(float(res.statistic), n, ci)
            assert got == pytest.approx((reference.low, reference.high), rel=0, abs=1e-12)


def test_fisher_z_interval_widens_with_the_variance_of_z_and_has_no_bounds_at_the_edges() -> None:
    low, high = fisher_z_interval(0.5, 20)
    low_s, high_s = fisher_z_interval(0.5, 20, z_variance=1.06)
    assert low_s < low < 0.5 < high < high_s
    half = 1.959963984540054 * math.sqrt(1.06 / 17)
    assert (low_s, high_s) == pytest.approx((math.tanh(math.atanh(0.5) - half), math.tanh(math.atanh(0.5) + half)))
    for r, n in ((0.5, 3), (1.0, 20), (-1.0, 20), (float("nan"), 20)):
        assert all(math.isnan(v) for v in fisher_z_interval(r, n))


def test_weighted_kappa_matches_hand_computation() -> None:
    a = [1, 2, 3, 3]
    b = [1, 2, 2, 3]
    # Quadratic weights over labels 1..3: w = (i-j)^2 / 4. Observed disagreement: one (3,2) pair, weight 1/4.
    observed = 0.25 / 4
    # Expected from marginals a: {1:1,2:1,3:2}/4, b: {1:1,2:2,3:1}/4.
    pa, pb = np.array([1, 1, 2]) / 4, np.array([1, 2, 1]) / 4
    w = np.array([[(i - j) ** 2 / 4 for j in range(3)] for i in range(3)])
    expected = float((np.outer(pa, pb) * w).sum())
    assert weighted_kappa(a, b, labels=[1, 2, 3]) == pytest.approx(1 - observed / expected)
    assert weighted_kappa(a, b, labels=[1, 2, 3]) == pytest.approx(
        cohen_kappa_score(a, b, labels=[1, 2, 3], weights="quadratic")
    )


def test_weighted_kappa_rejects_unknown_labels_and_length_mismatch() -> None:
    with pytest.raises(ValueError, match="not in"):
        weighted_kappa(["Good", "Bad"], ["Good", "Good"], labels=["Good", "Poor"])
    with pytest.raises(ValueError, match="labels vs"):
        weighted_kappa([1, 2], [1], labels=[1, 2])


def test_a_statistic_with_an_axis_gets_the_same_resamples_all_at_once() -> None:
    from recjudge_utils.metrics.judge_scores import _acc3, _mean_abs_err
    from recjudge_utils.metrics.pairwise import _share_for_q

    rng = np.random.default_rng(3)
    codes = rng.integers(-1, 2, size=37)
    pred, truth = rng.integers(1, 6, size=50).astype(float), rng.integers(1, 6, size=50).astype(float)
    cases = [((codes,), _share_for_q), ((pred, truth), _mean_abs_err), ((pred, truth), _acc3), ((pred,), np.mean)]
    for arrays, statistic in cases:
        one_at_a_time = bootstrap_distribution(arrays, lambda *a, s=statistic: float(s(*a)), n_boot=500, seed=4)
        at_once = bootstrap_distribution(arrays, statistic, n_boot=500, seed=4)
        assert at_once[0] == pytest.approx(one_at_a_time[0])
        np.testing.assert_allclose(at_once[1], one_at_a_time[1], rtol=1e-12)


def test_a_cluster_bootstrap_draws_whole_clusters() -> None:
    """Every resample holds as many clusters as there are, each with all its rows (a cluster drawn twice: its rows
    twice), never a cluster split; one cluster gives the point estimate back."""
    values = np.arange(12, dtype=float)
    clusters = [int(v) // 3 for v in values]  # four clusters of three rows
    seen: list[np.ndarray] = []

    def record(x: np.ndarray) -> float:
        seen.append(x.copy())
        return float(np.mean(x))

    point, boots = bootstrap_distribution(values, record, n_boot=50, seed=4, clusters=clusters)
    assert point == 5.5 and len(boots) == 50
    for x in seen[1:]:  # the first call is the point estimate
        counts = np.bincount(x.astype(int), minlength=12).reshape(4, 3)
        assert len(x) == 12 and (counts == counts[:, :1]).all()  # each cluster 0, 1, 2 ... times, rows together
    assert boots.tolist() == [float(np.mean(x)) for x in seen[1:]]
    assert len({tuple(x) for x in seen[1:]}) > 10
    assert (bootstrap_distribution(values, np.mean, n_boot=5, clusters=[0] * 12)[1] == 5.5).all()
    with pytest.raises(ValueError, match="3 cluster ids for 12 rows"):
        bootstrap_distribution(values, np.mean, clusters=[0, 1, 2])
    assert [g.tolist() for g in cluster_groups(["b", "a", "b"])] == [[0, 2], [1]]
