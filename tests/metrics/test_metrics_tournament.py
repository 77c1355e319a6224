"""Bradley-Terry with Davidson's ties: the two-system closed form, and known strengths recovered by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from recjudge_utils.metrics.tournament import davidson_fit


def test_two_systems_match_the_closed_form() -> None:
    fit = davidson_fit([("a", "b", 12, 6, 3)], ["a", "b"])
    assert fit.converged and fit.n == 21
    assert fit.log_strength[0] - fit.log_strength[1] == pytest.approx(math.log(12 / 3), abs=1e-3)
    assert fit.nu == pytest.approx(6 / math.sqrt(12 * 3), abs=1e-3)


def test_known_strengths_are_recovered_from_a_star_of_duels_with_a_baseline() -> None:
    rng = np.random.default_rng(0)
    truth = np.array([0.0, 0.5, 1.0, -0.5])
    nu = 0.8
    names = ["base", "b", "c", "d"]
    duels = []
    for j in range(1, 4):  # every system meets only the baseline
        pi_i, pi_j = math.exp(truth[j]), math.exp(truth[0])
        tie = nu * math.sqrt(pi_i * pi_j)
        p = np.array([pi_i, tie, pi_j]) / (pi_i + pi_j + tie)
        w, t, lo = rng.multinomial(4000, p)
        duels.append((names[j], "base", w, t, lo))
    fit = davidson_fit(duels, names)
    got = fit.log_strength - fit.log_strength[0]
    assert got == pytest.approx(truth, abs=0.1) and fit.nu == pytest.approx(nu, abs=0.1)
    assert stats.kendalltau(got, truth).statistic == pytest.approx(1.0)
    assert math.isnan(davidson_fit([], names).nu)
