"""Small statistics shared by every notebook: bootstrap confidence intervals and weighted kappa."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sklearn.metrics import cohen_kappa_score


def bootstrap_ci(
    values: np.ndarray | Sequence[float] | tuple[np.ndarray, ...],
    statistic: Callable[..., float] = np.mean,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Percentile bootstrap: returns (point estimate, low, high).

    ``values`` is one 1-D array, or a tuple of aligned arrays that are resampled together
    (rows stay paired) and passed positionally to ``statistic``.
    """
    arrays = tuple(np.asarray(v) for v in values) if isinstance(values, tuple) else (np.asarray(values),)
    n = len(arrays[0])
    if n == 0:
        raise ValueError("bootstrap_ci needs at least one value")
    if any(len(a) != n for a in arrays):
        raise ValueError("bootstrap_ci: aligned arrays must have the same length")
    point = float(statistic(*arrays))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    boots = np.array([statistic(*(a[i] for a in arrays)) for i in idx], dtype=float)
    alpha = (1.0 - ci) / 2.0
    low, high = np.nanquantile(boots, [alpha, 1.0 - alpha])
    return point, float(low), float(high)


def weighted_kappa(a: Sequence[Any], b: Sequence[Any], labels: Sequence[Any], weights: str = "quadratic") -> float:
    """Cohen's kappa between two labelers over a fixed, ordered label set (quadratic weights by default).

    Returns NaN when kappa is undefined (for example both labelers always give the same single label).
    """
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ValueError(f"weighted_kappa: {len(a)} labels vs {len(b)} labels")
    unknown = (set(a) | set(b)) - set(labels)
    if unknown:
        raise ValueError(f"weighted_kappa: labels {sorted(map(str, unknown))} not in {list(labels)}")
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = cohen_kappa_score(a, b, labels=list(labels), weights=weights if weights != "none" else None)
    return float(kappa)
