"""A tournament's ranking from its duels: the Bradley-Terry model with Davidson's (1970) extension for ties.

Each system i has a strength pi_i; in a duel of i and j,

    P(i wins) = pi_i / D,  P(j wins) = pi_j / D,  P(tie) = nu sqrt(pi_i pi_j) / D,  D = pi_i + pi_j + nu sqrt(pi_i pi_j)

(nu >= 0: how readily the judge ties). :func:`davidson_fit` maximises the likelihood of the win, tie and loss counts
with ``scipy.optimize.minimize`` over log strengths (centred: only their ratios are identified) and log nu. Unlike a
share of points or Q per pair, the strengths put every system on one scale from every duel, even when each system
met only a baseline. With two systems the fit has a closed form (pi_1 / pi_2 = W / L, nu = T / sqrt(W L)), which the
tests check it against.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize

__all__ = ["DavidsonFit", "davidson_fit"]


@dataclass(frozen=True)
class DavidsonFit:
    """Log strengths (centred to mean 0) per system in the order given, the tie parameter nu, and the duels used."""

    systems: list[str]
    log_strength: np.ndarray
    nu: float
    n: int
    converged: bool


def davidson_fit(duels: Sequence[tuple[str, str, float, float, float]], systems: Sequence[str]) -> DavidsonFit:
    """Fit strengths from ``duels``: (i, j, wins of i, ties, wins of j) per pair (repeated pairs add up). A system
    that never won (or never lost) has no finite maximum-likelihood strength; a tiny ridge penalty keeps it finite
    but far from the others, which is how to read it. NaN without a duel."""
    names = list(systems)
    index = {s: k for k, s in enumerate(names)}
    rows = [(index[i], index[j], float(w), float(t), float(lo)) for i, j, w, t, lo in duels if w + t + lo > 0]
    k = len(names)
    if not rows or k < 2:
        return DavidsonFit(names, np.full(k, np.nan), math.nan, 0, False)
    i_idx = np.array([r[0] for r in rows])
    j_idx = np.array([r[1] for r in rows])
    w, t, lo = (np.array([r[c] for r in rows]) for c in (2, 3, 4))
    ridge = 1e-6  # keeps the strengths of an undefeated (or winless) system finite for the optimiser

    def negative_log_likelihood(theta: np.ndarray) -> float:
        s = np.append(theta[: k - 1], -theta[: k - 1].sum())
        log_nu = theta[-1]
        a, b = s[i_idx], s[j_idx]
        half = 0.5 * (a + b) + log_nu
        log_d = np.logaddexp(np.logaddexp(a, b), half)
        ll = w * (a - log_d) + lo * (b - log_d) + t * (half - log_d)
        return float(-ll.sum() + ridge * (s @ s))

    start = np.zeros(k)
    start[-1] = math.log(max(t.sum(), 0.5) / max(w.sum() + lo.sum(), 1.0))
    fit = optimize.minimize(negative_log_likelihood, start, method="BFGS")
    s = np.append(fit.x[: k - 1], -fit.x[: k - 1].sum())
    return DavidsonFit(names, s, float(math.exp(fit.x[-1])), int((w + t + lo).sum()), bool(fit.success))
