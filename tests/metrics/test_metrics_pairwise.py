"""Pairwise statistics' intervals (recjudge_utils.metrics.pairwise) against their references: the paired difference
against ``scipy.stats.bootstrap`` (paired, percentile) on the same resamples, the win share against statsmodels'
Wilson interval."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from recjudge_utils.metrics.pairwise import WTL_COLUMNS, paired_difference, q_from_codes, q_share, q_value, wtl_summary


def test_paired_difference_is_scipys_paired_percentile_bootstrap() -> None:
    rng = np.random.default_rng(3)
    a = rng.normal(0.6, 0.2, size=40)
    b = a - rng.normal(0.1, 0.1, size=40)
    res = paired_difference(a, b, n_boot=1000, seed=5)
    reference = stats.bootstrap(
        (a, b), lambda x, y: np.mean(x) - np.mean(y), paired=True, vectorized=False, n_resamples=1000,
        method="percentile", rng=np.random.default_rng(5),
    )  # fmt: skip
    assert res.value == pytest.approx(a.mean() - b.mean())
    assert (res.low, res.high) == pytest.approx(tuple(reference.confidence_interval), rel=0, abs=1e-12)
    se = float(np.std(reference.bootstrap_distribution))
    assert res.standardised == pytest.approx(abs(res.value) / se)
    assert res.low > 0  # b is a minus a positive shift: the interval says so


def test_paired_difference_drops_non_finite_pairs_and_needs_two() -> None:
    a, b = np.array([1.0, 2.0, np.inf, 4.0]), np.array([0.5, np.nan, 1.0, 3.0])
    assert paired_difference(a, b, n_boot=200).value == pytest.approx(0.75)  # pairs 1 and 4
    short = paired_difference(np.array([1.0, np.nan]), np.array([0.0, 1.0]))
    assert all(math.isnan(v) for v in (short.value, short.low, short.high, short.standardised))


def test_q_is_compared_by_its_share_and_no_resample_is_dropped() -> None:
    """x wins against the baseline for 8 of 10 users and ties twice: Q = inf on the whole sample and on most
    resamples. A difference of Q loses every such resample (counted, no longer silently); the difference of Q's
    shares s = (W+T)/(W+L+2T) = Q / (1 + Q) keeps all, is scipy's paired percentile bootstrap of it, and has the
    sign of the Q difference wherever Q is finite."""
    x = np.array([1.0] * 8 + [0.0] * 2)  # outcome codes per user: 1 win, 0 tie, -1 lose
    y = np.array([1.0, 0.0, -1.0, -1.0, 0.0, 1.0, -1.0, 0.0, 1.0, -1.0])
    assert q_share(x) == pytest.approx(10 / 12) and q_from_codes(x) == pytest.approx(5.0)  # 10/12 = 5 / (1 + 5)
    assert q_share(np.array([1.0, 1.0])) == 1.0 and math.isinf(q_from_codes(np.array([1.0, 1.0])))
    by_q = paired_difference(x, y, statistic=q_from_codes, n_boot=1000, seed=2)
    assert by_q.n_boot == 1000 and by_q.dropped > 50  # resamples with the two ties left out: Q = inf - finite
    by_share = paired_difference(x, y, statistic=q_share, n_boot=1000, seed=2)
    assert (by_share.dropped, by_share.n_boot) == (0, 1000)
    reference = stats.bootstrap(
        (x, y), lambda p, q: float(q_share(p) - q_share(q)), paired=True, vectorized=False, n_resamples=1000,
        method="percentile", rng=np.random.default_rng(2),
    )  # fmt: skip
    assert by_share.value == pytest.approx(10 / 12 - q_share(y))
    assert (by_share.low, by_share.high) == pytest.approx(tuple(reference.confidence_interval), abs=1e-12)
    rng = np.random.default_rng(0)
    for _ in range(200):
        p, q = rng.integers(-1, 2, 6), rng.integers(-1, 2, 6)
        qp, qq = q_from_codes(p), q_from_codes(q)
        if np.isfinite(qp) and np.isfinite(qq):
            assert np.sign(q_share(p) - q_share(q)) == np.sign(round(qp - qq, 12))


def test_wtl_summary_shares_have_wilson_intervals_and_q_is_counted() -> None:
    outcomes = ["win"] * 11 + ["tie"] * 4 + ["lose"] * 5 + [None] * 2
    summary = wtl_summary(outcomes, n_boot=500)
    assert list(summary.columns) == WTL_COLUMNS and summary["measure"].tolist() == ["win", "tie", "lose", "Q"]
    assert (summary["n"] == 20).all() and (summary["n_unjudged"] == 2).all()
    row = summary.set_index("measure")
    assert row.loc[["win", "tie", "lose"], "value"].tolist() == pytest.approx([55.0, 20.0, 25.0])
    for measure, count in (("win", 11), ("tie", 4), ("lose", 5)):
        low, high = proportion_confint(count, 20, alpha=0.05, method="wilson")
        assert (row.loc[measure, "low"], row.loc[measure, "high"]) == pytest.approx((100 * low, 100 * high))
    assert row.loc["Q", "value"] == q_value(11, 4, 5) == pytest.approx(15 / 9)
    assert row.loc["Q", "low"] < row.loc["Q", "value"] < row.loc["Q", "high"]
