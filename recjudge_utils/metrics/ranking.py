"""Top-k ranking metrics, vectorised over users.

Everything starts from a boolean *hit matrix*: ``hits[u, r]`` is True when the item at rank ``r``
(0-based) of user ``u``'s list is relevant. The metrics are then array arithmetic, with no
per-user Python loop (see ``benchmarks/bench_ranking_metrics.py`` for the measured speed-up).

Conventions (binary relevance):

* ``precision_at_k = hits@k / k`` (k is the list length asked for, even if a list is shorter);
* ``recall_at_k = hits@k / n_relevant``; NaN for users with no relevant item (undefined);
* ``ndcg_at_k``: DCG with gain 1 and discount ``1 / log2(rank + 2)``, divided by the ideal DCG
  of ``min(n_relevant, k)`` hits at the top; 0.0 for users with no relevant item (as
  ``sklearn.metrics.ndcg_score``).

Graded relevance: ``graded_ndcg_at_k`` takes each listed item's gain (e.g. ``2**p - 1`` for a preference score p,
RecSys Arena Sec. 3.2) and each user's relevant gains; the ideal DCG puts the ``k`` largest of those at the top.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

_DENSE_LIMIT = 50_000_000  # cells of the (users x item-id span) boolean lookup table


def hit_matrix(recs: np.ndarray, relevant: Sequence[set[int]] | Sequence[Sequence[int]]) -> np.ndarray:
    """Boolean (n_users x k): whether ``recs[u, r]`` is in ``relevant[u]``.

    ``recs`` holds integer item ids (any value; -1 can pad short lists and never hits unless -1 is
    listed as relevant). Built with one scatter into a (users x item-id span) boolean table and one
    gather, or, when that table would exceed ``_DENSE_LIMIT`` cells, a binary search over sorted keys.
    """
    recs = np.asarray(recs)
    if recs.ndim != 2:
        raise ValueError("recs must be a 2-D array (n_users x k)")
    if len(relevant) != recs.shape[0]:
        raise ValueError(f"{recs.shape[0]} recommendation lists but {len(relevant)} relevant sets")
    n_users, k = recs.shape
    if n_users == 0 or k == 0:
        return np.zeros((n_users, k), dtype=bool)
    sizes = np.fromiter((len(r) for r in relevant), dtype=np.int64, count=n_users)
    total = int(sizes.sum())
    if total == 0:
        return np.zeros((n_users, k), dtype=bool)
    rel_items = np.fromiter(itertools.chain.from_iterable(relevant), dtype=np.int64, count=total)
    rel_users = np.repeat(np.arange(n_users, dtype=np.int64), sizes)
    rec_items = recs.astype(np.int64, copy=False)
    lo = min(int(rel_items.min()), int(rec_items.min()))
    span = max(int(rel_items.max()), int(rec_items.max())) - lo + 1
    rows = np.arange(n_users, dtype=np.int64)[:, None]
    if n_users * span <= _DENSE_LIMIT:
        # dense boolean lookup table: one scatter, one gather
        table = np.zeros((n_users, span), dtype=bool)
        table[rel_users, rel_items - lo] = True
        return table[rows, rec_items - lo]
    # large id spaces: sorted (user, item) keys and a binary search
    keys = np.sort(rel_users * span + (rel_items - lo))
    query = rows * span + (rec_items - lo)
    pos = np.minimum(np.searchsorted(keys, query), len(keys) - 1)
    return keys[pos] == query


def _cut(hits: np.ndarray, k: int) -> np.ndarray:
    hits = np.asarray(hits, dtype=bool)
    if hits.ndim != 2:
        raise ValueError("hits must be a 2-D boolean array")
    if k <= 0:
        raise ValueError("k must be positive")
    return hits[:, :k]


def precision_at_k(hits: np.ndarray, k: int) -> np.ndarray:
    """Per-user precision@k."""
    return _cut(hits, k).sum(axis=1) / float(k)


def recall_at_k(hits: np.ndarray, n_relevant: np.ndarray | Sequence[int], k: int) -> np.ndarray:
    """Per-user recall@k; NaN where the user has no relevant item."""
    n_rel = np.asarray(n_relevant, dtype=np.float64)
    found = _cut(hits, k).sum(axis=1).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n_rel > 0, found / n_rel, np.nan)


def _discounts(k: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(k, dtype=np.float64) + 2.0)


def ndcg_at_k(hits: np.ndarray, n_relevant: np.ndarray | Sequence[int], k: int) -> np.ndarray:
    """Per-user NDCG@k with binary gains; ideal DCG over ``min(n_relevant, k)`` hits; 0 if none relevant."""
    cut = _cut(hits, k)
    disc = _discounts(k)
    dcg = cut.astype(np.float64) @ disc[: cut.shape[1]]
    ideal_cum = np.concatenate([[0.0], np.cumsum(disc)])
    n_ideal = np.clip(np.asarray(n_relevant, dtype=np.int64), 0, k)
    idcg = ideal_cum[n_ideal]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(idcg > 0, dcg / idcg, 0.0)


def graded_ndcg_at_k(gains: np.ndarray, relevant_gains: Sequence[Sequence[float] | np.ndarray], k: int) -> np.ndarray:
    """Per-user NDCG@k with graded gains: ``gains[u, r]`` is the gain of the item at rank ``r`` of user ``u``'s list
    (0 for an item that is not relevant), ``relevant_gains[u]`` the gains of every relevant item of the user (the
    ideal list takes the ``k`` largest); 0 for a user whose relevant gains are all 0."""
    gains = np.asarray(gains, dtype=np.float64)
    if gains.ndim != 2:
        raise ValueError("gains must be a 2-D array (n_users x list length)")
    if len(relevant_gains) != gains.shape[0]:
        raise ValueError(f"{gains.shape[0]} lists but {len(relevant_gains)} sets of relevant gains")
    if k <= 0:
        raise ValueError("k must be positive")
    cut = gains[:, :k]
    disc = _discounts(k)
    dcg = cut @ disc[: cut.shape[1]]
    ideal = np.zeros((len(relevant_gains), k))
    for u, rel in enumerate(relevant_gains):
        best = np.sort(np.asarray(rel, dtype=np.float64))[::-1][:k]
        ideal[u, : len(best)] = best
    idcg = ideal @ disc
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(idcg > 0, dcg / idcg, 0.0)
