"""Chapter 4's classroom exercise: quadratic weighted kappa worked by hand on two annotators of five lists
(:data:`KAPPA_EXERCISE`), beside the package's value, and the single change of label that lowers it most."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from recjudge_utils.metrics.agreement import POINTWISE_LABELS, weighted_kappa

__all__ = ["KAPPA_EXERCISE", "KappaByHand", "kappa_by_hand"]

#: the weighted-kappa exercise's two annotators of five lists (chapter 4)
KAPPA_EXERCISE = (
    ("Good Match", "Partial Match", "Partial Match", "Poor Match", "Partial Match"),
    ("Good Match", "Partial Match", "Poor Match", "Poor Match", "Good Match"),
)


@dataclass(frozen=True)
class KappaByHand:
    """Quadratic weighted kappa worked by hand (codes from 0 for the lowest label, cost = squared distance), the
    package's value, and the single change to ``b`` that lowers it most."""

    a: list[str]
    b: list[str]
    codes_a: list[int]
    codes_b: list[int]
    costs: list[int]  # each pair's squared distance
    observed: float  # their mean
    shares_a: list[float]  # each annotator's label shares, lowest label first
    shares_b: list[float]
    expected: float  # the cost expected by chance from the two annotators' shares
    kappa: float  # 1 - observed / expected
    package: float  # metrics.agreement.weighted_kappa
    n_changes: int  # single changes to b tried
    worst: float  # the lowest kappa one change reaches ...
    where: int  # ... by changing b at this position (0-based) ...
    to: str  # ... to this label
    steps_before: int  # distance between a and b there before the change
    steps_after: int  # and after it


def kappa_by_hand(
    a: Sequence[str] = KAPPA_EXERCISE[0], b: Sequence[str] = KAPPA_EXERCISE[1], labels: Sequence[str] = POINTWISE_LABELS
) -> KappaByHand:
    """Every step of :class:`KappaByHand` for labels ordered lowest first (``POINTWISE_LABELS``: Poor < Partial
    < Good); by default on the exercise's two annotators."""
    order = list(labels)
    x, y = np.array([order.index(v) for v in a]), np.array([order.index(v) for v in b])
    k = len(order)
    weights = (np.arange(k)[:, None] - np.arange(k)[None, :]) ** 2
    pa, pb = np.bincount(x, minlength=k) / len(x), np.bincount(y, minlength=k) / len(y)
    observed, expected = float(np.mean((x - y) ** 2)), float(pa @ weights @ pb)
    changes = [
        (weighted_kappa(a, [*b[:i], label, *b[i + 1 :]], labels), i, label)
        for i in range(len(b))
        for label in order
        if label != b[i]
    ]
    worst, where, to = min(changes)
    return KappaByHand(
        list(a), list(b), x.tolist(), y.tolist(), ((x - y) ** 2).tolist(), observed, pa.tolist(), pb.tolist(),
        expected, 1 - observed / expected, weighted_kappa(a, b, labels), len(changes), worst, where, to,
        abs(int(y[where]) - int(x[where])), abs(order.index(to) - int(x[where])),
    )  # fmt: skip
