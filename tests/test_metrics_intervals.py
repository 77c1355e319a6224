"""Bootstrap confidence intervals and weighted kappa."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from recjudge_utils.metrics.agreement import weighted_kappa
from recjudge_utils.metrics.intervals import bootstrap_ci


def test_bootstrap_ci_brackets_the_mean_and_shrinks_with_n() -> None:
    rng = np.random.default_rng(1)
    small = rng.normal(3.0, 1.0, size=30)
    large = rng.normal(3.0, 1.0, size=3000)
    point, low, high = bootstrap_ci(small, seed=0)
    assert point == pytest.approx(small.mean())
    assert low < point < high
    _, low_l, high_l = bootstrap_ci(large, seed=0)
    assert (high_l - low_l) < (high - low) / 5


def test_bootstrap_ci_resamples_aligned_arrays_together() -> None:
    pred = np.array([1, 2, 3, 4, 5, 3, 2])
    gold = pred.copy()
    point, low, high = bootstrap_ci((pred, gold), statistic=lambda p, g: np.mean(np.abs(p - g)))
    assert (point, low, high) == (0.0, 0.0, 0.0)  # pairs stay paired: the error is zero in every resample


def test_bootstrap_ci_is_reproducible_under_a_seed() -> None:
    values = np.arange(20.0)
    assert bootstrap_ci(values, seed=3) == bootstrap_ci(values, seed=3)


def test_bootstrap_ci_rejects_empty_and_misaligned_input() -> None:
    with pytest.raises(ValueError, match="at least one"):
        bootstrap_ci([])
    with pytest.raises(ValueError, match="same length"):
        bootstrap_ci((np.arange(3), np.arange(4)))


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
