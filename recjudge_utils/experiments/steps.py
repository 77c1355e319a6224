"""Steps several chapters share: which users are judged and what each recommender shows them.

Chapter 5 (what the protocols detect) calls these same functions, so its panels are built as the chapters build
theirs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from recjudge_utils.recommenders.base import Recommender

__all__ = ["sample_users", "top_lists"]


def sample_users(candidates: Iterable[int], n: int, seed: int | Sequence[int]) -> list[int]:
    """``n`` distinct users drawn with ``default_rng(seed)`` from the sorted candidates, sorted; all when ``n`` is 0
    or there are fewer candidates than ``n``."""
    pool = np.array(sorted({int(u) for u in candidates}))
    size = len(pool) if n == 0 else min(n, len(pool))
    rng = np.random.default_rng(seed)
    return sorted(int(u) for u in rng.choice(pool, size=size, replace=False))


def top_lists(
    models: Mapping[str, Recommender], users: Sequence[int], k: int, exclude_seen: bool = True
) -> dict[str, dict[int, list[int]]]:
    """Top-``k`` list per model per user (items the model saw the user consume excluded unless ``exclude_seen``
    is False)."""
    users_arr = np.asarray(list(users), dtype=np.int64)
    out: dict[str, dict[int, list[int]]] = {}
    for name, model in models.items():
        recs = model.recommend(users_arr, k=k, exclude_seen=exclude_seen)
        out[name] = {int(u): [int(i) for i in row] for u, row in zip(users_arr, recs, strict=True)}
    return out
