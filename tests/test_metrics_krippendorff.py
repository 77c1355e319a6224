"""Krippendorff's alpha and its bootstrap CI (chapter 6's agreement among a panel's members): Krippendorff's own
worked example, statsmodels' Fleiss' kappa for complete nominal data, and scipy's percentile bootstrap."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats import inter_rater

from recjudge_utils.metrics.agreement import krippendorff_alpha, krippendorff_alpha_ci

LEVELS = [1, 2, 3, 4, 5]
N = None
#: Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C: four observers, twelve units, gaps
EXAMPLE = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
    [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
]


def test_krippendorffs_worked_example_gives_his_values() -> None:
    nominal, counts = krippendorff_alpha(EXAMPLE, LEVELS, "nominal")
    assert round(nominal, 3) == 0.743
    assert round(krippendorff_alpha(EXAMPLE, LEVELS, "interval")[0], 3) == 0.849
    assert counts.shape == (11, 5) and counts.sum() == 40  # unit 12 has one value: not pairable, left out


def test_nominal_alpha_on_complete_data_is_statsmodels_fleiss_kappa_corrected() -> None:
    rng = np.random.default_rng(3)
    for raters, cases in ((3, 40), (4, 25), (5, 200)):
        truth = rng.integers(0, 5, cases)
        codes = np.clip(truth[:, None] + rng.integers(-1, 2, (cases, raters)), 0, 4)
        fleiss = inter_rater.fleiss_kappa(inter_rater.aggregate_raters(codes, n_cat=5)[0], method="fleiss")
        n = raters * cases
        alpha, _ = krippendorff_alpha([list(codes[:, j] + 1) for j in range(raters)], LEVELS, "nominal")
        assert alpha == pytest.approx(1 - (1 - fleiss) * (n - 1) / n, abs=1e-12)


def test_the_interval_is_scipys_percentile_bootstrap_over_cases() -> None:
    rng = np.random.default_rng(7)
    truth = rng.integers(1, 6, 60)
    raters = [list(np.clip(truth + rng.integers(-1, 2, 60), 1, 5)) for _ in range(3)]
    got = krippendorff_alpha_ci(raters, LEVELS, n_boot=500, seed=11)
    value, _ = krippendorff_alpha(raters, LEVELS)

    def alpha_of(rows: np.ndarray) -> float:  # the raters' labels of the resampled cases
        return krippendorff_alpha([[labels[r] for r in rows] for labels in raters], LEVELS)[0]

    ref = stats.bootstrap((np.arange(60),), alpha_of, n_resamples=500, vectorized=False, method="percentile",
                          random_state=np.random.default_rng(11))  # fmt: skip
    assert got.value == value and got.n == 60
    assert (got.low, got.high) == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high))
    assert got.low < value < got.high and got.se > 0


def test_perfect_agreement_one_label_and_unknown_labels() -> None:
    same = [[1, 2, 3, 4, 5, 1], [1, 2, 3, 4, 5, 1], [1, 2, 3, 4, 5, None]]
    k = krippendorff_alpha_ci(same, LEVELS)
    assert (k.value, k.low, k.high, k.n) == (1.0, 1.0, 1.0, 6)
    assert math.isnan(krippendorff_alpha([[2, 2], [2, 2]], LEVELS)[0])  # one label everywhere
    assert math.isnan(krippendorff_alpha_ci([[1, None], [None, 2]], LEVELS).value)  # no case labelled twice
    with pytest.raises(ValueError, match="not in"):
        krippendorff_alpha([[1, 6], [1, 2]], LEVELS)
