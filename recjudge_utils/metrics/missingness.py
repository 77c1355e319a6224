"""Do unparsed answers fall evenly on the systems? A test of independence between system and parse failure.

A judge that fails more often on one system's lists leaves that system's score resting on other users, and, when
the failures are the hard lists, on the easier ones: missingness that carries information changes the conclusions.
:func:`unparsed_test` tests whether the share of unparsed answers is the same for every system (a systems x
{parsed, unparsed} table): Pearson's chi-square statistic (``scipy.stats.chi2_contingency``, no continuity
correction), its p-value from the chi-square distribution when every expected count is at least 5, else from
tables drawn with the same margins under independence (``scipy.stats.random_table``), which needs no large-sample
approximation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["UnparsedTest", "unparsed_test"]


@dataclass(frozen=True)
class UnparsedTest:
    """Pearson's chi-square of systems x {parsed, unparsed}, its degrees of freedom, the p-value and how it was made
    (``"chi-square"`` or ``"Monte Carlo, fixed margins"``; empty when nothing can be tested)."""

    statistic: float
    dof: int
    p: float
    method: str


def _chi2(table: np.ndarray, expected: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        cells = np.where(expected > 0, (table - expected) ** 2 / expected, 0.0)
    return cells.sum(axis=(-2, -1))


def unparsed_test(
    unparsed: Sequence[int], total: Sequence[int], n_resamples: int = 5000, seed: int = 0
) -> UnparsedTest:
    """Test that every system's answers are unparsed at the same rate (``unparsed[i]`` of ``total[i]`` for system
    i). NaN when fewer than two systems have answers, or when no answer (or every answer) is unparsed."""
    bad = np.asarray(unparsed, dtype=int)
    n = np.asarray(total, dtype=int)
    keep = n > 0
    table = np.column_stack([n[keep] - bad[keep], bad[keep]])
    if table.shape[0] < 2 or table[:, 1].sum() == 0 or table[:, 0].sum() == 0:
        return UnparsedTest(math.nan, max(table.shape[0] - 1, 0), math.nan, "")
    result = stats.chi2_contingency(table, correction=False)
    expected = np.asarray(result.expected_freq)
    if (expected >= 5).all():
        return UnparsedTest(float(result.statistic), int(result.dof), float(result.pvalue), "chi-square")
    draws = stats.random_table(table.sum(axis=1), table.sum(axis=0), seed=seed).rvs(n_resamples)
    null = _chi2(draws.astype(float), expected)
    reach = int((null >= result.statistic - 1e-9 * abs(result.statistic)).sum())
    return UnparsedTest(
        float(result.statistic), int(result.dof), (reach + 1) / (n_resamples + 1), "Monte Carlo, fixed margins"
    )
