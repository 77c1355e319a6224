"""Agreement between system rankings that can be read: top-weighted tau, each measure's own reliability, the pairs
both measures decide, and the claim a tau supports.

* :func:`tau_ap`: Yilmaz, Aslam and Robertson's (2008) AP correlation, which weighs a swap near the top of the
  ranking more than one near the bottom; :func:`tau_ap_symmetric` averages it over both measures as the reference;
* :func:`split_half_reliability`: tau-b between a measure's system means on two disjoint random halves of the users,
  over many splits: how far a measure agrees *with itself*. Two measures cannot be expected to agree more than each
  agrees with itself, so it is the ceiling a cross-measure tau is read against (on half the users, so a
  conservative one);
* :func:`tau_over_decided`: tau over the pairs both measures separate at the corrected level (concordant less
  discordant over their number), the agreement on the conclusions rather than on noisy orders;
* :func:`agreement_claim`: the word a tau and its CI support, by the IR convention (Voorhees 2000: rankings with tau
  of at least 0.9 are equivalent): ``"equivalent"`` only when the CI lies above 0.9; ``"agree"`` / ``"disagree"``
  only when the CI excludes 0 *and* both measures agree with themselves (reliability of at least
  :data:`MIN_RELIABILITY`); never a claim with fewer than :data:`MIN_SYSTEMS` systems (with 3, tau is +-1/3 or +-1).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from recjudge_utils.metrics.estimate import Estimate
from recjudge_utils.metrics.system_agreement import mean_per_system, tau_b_rows

__all__ = [
    "CLAIMS",
    "MIN_RELIABILITY",
    "MIN_SYSTEMS",
    "Reliability",
    "agreement_claim",
    "split_half_reliability",
    "tau_ap",
    "tau_ap_symmetric",
    "tau_over_decided",
]

#: fewer systems and tau is shown, never claimed
MIN_SYSTEMS = 4
#: a measure whose halves agree less than this with each other cannot carry an agree / disagree claim
MIN_RELIABILITY = 0.5
#: what :func:`agreement_claim` returns
CLAIMS = ("too few systems", "no tau", "equivalent", "unreliable", "agree", "disagree", "unclear")


def tau_ap(scores: np.ndarray, reference: np.ndarray) -> float:
    """tau_AP of the ranking by ``scores`` (higher first) against the ranking by ``reference``: with C(i) the items
    above the i-th of the ``scores`` ranking that ``reference`` also puts above it, 2 / (N - 1) * sum over i >= 2 of
    C(i) / (i - 1), less 1. A tie in ``reference`` counts half; ties in ``scores`` are broken by position. NaN
    below two systems with both values, or when either ranking is constant (no order to agree with: tau-b is then
    NaN too, and a tau_AP of 0 beside it would read as "no relation")."""
    a, b = np.asarray(scores, dtype=float), np.asarray(reference, dtype=float)
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    n = len(a)
    if n < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan
    order = np.argsort(-a, kind="stable")
    ref = b[order]
    total = 0.0
    for i in range(1, n):
        above = ref[:i]
        correct = float((above > ref[i]).sum() + 0.5 * (above == ref[i]).sum())
        total += correct / i
    return 2.0 * total / (n - 1) - 1.0


def tau_ap_symmetric(a: np.ndarray, b: np.ndarray) -> float:
    """The mean of tau_AP with either ranking as the reference (tau_AP itself is not symmetric)."""
    return 0.5 * (tau_ap(a, b) + tau_ap(b, a))


#: how :func:`split_half_reliability` makes its interval
_SPLITS = "2.5-97.5 % of random splits"


@dataclass(frozen=True)
class Reliability(Estimate):
    """Split-half reliability: the mean tau-b between two halves over the ``n`` splits with both rankings defined
    (``value``), its 2.5 and 97.5 % quantiles over those splits (``low``, ``high``), and the users per half."""

    n: int = 0
    half: int = 0


def split_half_reliability(matrix: np.ndarray, n_splits: int = 200, seed: int = 0) -> Reliability:
    """Tau-b between the system means of two disjoint random halves of the users (users x systems), over
    ``n_splits`` splits (seeded). NaN below four users or when every split leaves a ranking constant."""
    x = np.asarray(matrix, dtype=float)
    half = x.shape[0] // 2
    if half < 2:
        return Reliability(math.nan, n=0, method=_SPLITS, half=half)
    rng = np.random.default_rng(seed)
    orders = np.array([rng.permutation(x.shape[0]) for _ in range(n_splits)], dtype=np.intp).reshape(n_splits, -1)
    taus = tau_b_rows(mean_per_system(x[orders[:, :half]]), mean_per_system(x[orders[:, half : 2 * half]]))
    kept = taus[np.isfinite(taus)]
    if len(kept) == 0:
        return Reliability(math.nan, n=0, method=_SPLITS, half=half)
    low, high = np.quantile(kept, [0.025, 0.975])
    return Reliability(float(kept.mean()), float(low), float(high), len(kept), _SPLITS, half=half)


def tau_over_decided(decided_a: Iterable[tuple[str, str]], decided_b: Iterable[tuple[str, str]]) -> tuple[float, int]:
    """(tau, pairs) over the pairs of systems both measures decide, each given as (higher, lower): concordant less
    discordant over their number. NaN when they decide no pair in common."""
    first = {frozenset(p): p for p in decided_a}
    second = {frozenset(p): p for p in decided_b}
    common = set(first) & set(second)
    if not common:
        return math.nan, 0
    concordant = sum(first[k] == second[k] for k in common)
    return (2 * concordant - len(common)) / len(common), len(common)


def agreement_claim(
    tau: float, low: float, high: float, n_systems: int, reliability_a: float, reliability_b: float
) -> str:
    """One of :data:`CLAIMS` for a tau with its CI, the systems ranked, and the two measures' split-half
    reliabilities (NaN: unknown, which allows no agree / disagree claim)."""
    if n_systems < MIN_SYSTEMS:
        return "too few systems"
    if not (math.isfinite(tau) and math.isfinite(low) and math.isfinite(high)):
        return "no tau"
    if low > 0.9:
        return "equivalent"
    ceiling = min(reliability_a, reliability_b)
    if low > 0 or high < 0:
        if not (math.isfinite(ceiling) and ceiling >= MIN_RELIABILITY):
            return "unreliable"
        return "agree" if low > 0 else "disagree"
    return "unclear"
