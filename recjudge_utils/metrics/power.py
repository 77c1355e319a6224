"""How many users would a rerun need? Power planning from a run's own per-user paired differences.

For a pair of systems, the paired differences of their per-user values give the effect size d_z (mean over standard
deviation). A paired t test at level alpha / m (Bonferroni over a family of m comparisons, which Holm's step-down
procedure never does worse than) reaches the wanted power at the n that ``statsmodels.stats.power.TTestPower``
solves for (the power analysis chapter 5 uses too). The permutation test of
:mod:`~recjudge_utils.metrics.system_tests` has nearly the t test's power at these sizes; the tests check the plan by
simulation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from statsmodels.stats.power import TTestPower

__all__ = ["pairwise_users_needed", "users_needed"]

#: no plan beyond this: an effect this small is not worth a rerun's users (inf is reported instead)
_MAX_USERS = 10_000_000


def users_needed(effect_size: float, alpha: float = 0.05, n_comparisons: int = 1, power: float = 0.8) -> float:
    """Users for a two-sided paired t test of effect size d_z to reach ``power`` at ``alpha / n_comparisons``,
    rounded up; inf for no effect, NaN for an unknown one."""
    if not math.isfinite(effect_size):
        return math.nan
    if effect_size == 0:
        return math.inf
    level = alpha / max(n_comparisons, 1)
    analysis = TTestPower()

    def reaches(n: int) -> bool:
        reached = analysis.power(abs(effect_size), n, level, alternative="two-sided")
        return bool(math.isfinite(reached) and reached >= power)

    for n in range(2, 11):
        # power at one degree of freedom is NaN for d_z around 20: count up where the solver would fail
        if reaches(n):
            return float(n)
    # the smallest n that reaches the power, by doubling then bisection on TTestPower's power (increasing in n):
    # solve_power's root finder returns NaN for some effect sizes, the power itself turns NaN at millions of users,
    # and a plan must be a whole number of users anyway
    low, high = 10, 20  # low does not reach the power; high is doubled until it does
    while not reaches(high):
        if high >= _MAX_USERS:
            return math.inf
        low, high = high, 2 * high
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if reaches(mid) else (mid, high)
    return float(high)


def pairwise_users_needed(
    matrix: pd.DataFrame,
    pairs: Sequence[tuple[str, str]] | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    n_comparisons: int | None = None,
) -> pd.DataFrame:
    """Per pair (every two columns of ``matrix`` when None): users with both, d_z of a - b, and the users a rerun
    needs to separate it at ``power`` after a correction over ``n_comparisons`` (default: the pairs given).
    Columns: a, b, n, d_z, users_needed."""
    names = [str(c) for c in matrix.columns]
    chosen = list(pairs) if pairs is not None else [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    family = n_comparisons if n_comparisons is not None else len(chosen)
    rows = []
    for a, b in chosen:
        d = matrix[a].to_numpy(dtype=float) - matrix[b].to_numpy(dtype=float)
        d = d[np.isfinite(d)]
        sd = float(np.std(d, ddof=1)) if len(d) > 1 else math.nan
        dz = float(np.mean(d)) / sd if len(d) > 1 and sd > 0 else (math.nan if len(d) < 2 or np.mean(d) else 0.0)
        rows.append({"a": a, "b": b, "n": len(d), "d_z": dz, "users_needed": users_needed(dz, alpha, family, power)})
    return pd.DataFrame(rows, columns=["a", "b", "n", "d_z", "users_needed"])
