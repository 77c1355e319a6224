"""Steps several chapters share: which users are judged, what each recommender shows them, and how the serendipity
judge scores the items of their lists (chapters 2 and 7).

Chapter 5 (what the protocols detect) calls these same functions, so its panels are built as the chapters build
theirs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from recjudge_utils.data import SerendipityPairs
from recjudge_utils.judge.types import Judge
from recjudge_utils.protocols.few_shot import select_few_shot_examples
from recjudge_utils.protocols.pointwise_score import SerendipityJudge
from recjudge_utils.protocols.truth import reevaluation_truth
from recjudge_utils.recommenders.base import Recommender
from recjudge_utils.splitting.temporal import last_items

__all__ = ["ITEM_NOUNS", "judge_recommendations", "sample_users", "serendipity_scorer", "top_lists"]

#: what a dataset's items are called in the prompts (default "movie"; the plural adds an "s")
ITEM_NOUNS = {"goodreads": "book", "amazon-beauty": "product"}


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


def serendipity_scorer(
    judge: Judge,
    example_pairs: SerendipityPairs,
    evaluated_users: Iterable[int],
    template: str,
    n_shots: int,
    n_history: int,
    seed: int,
    dataset_name: str,
) -> SerendipityJudge:
    """The serendipity judge with ``n_shots`` few-shot examples (the same number per level) that never come from an
    evaluated user, worded for the dataset's items."""
    evaluated = {int(u) for u in evaluated_users}
    examples = select_few_shot_examples(
        example_pairs.pairs, example_pairs.items, n_per_level=n_shots // 5, exclude_users=evaluated, seed=seed
    )
    if set(examples["user"]) & evaluated:
        raise AssertionError("few-shot leakage: an evaluated user is also an example user")
    noun = ITEM_NOUNS.get(dataset_name, "movie")
    return SerendipityJudge(judge, template=template, examples=examples, n_history=n_history, item_noun=noun)


def judge_recommendations(
    recs: pd.DataFrame,
    train: pd.DataFrame,
    items: pd.DataFrame,
    judge: SerendipityJudge,
    n_history: int = 10,
    desc: str | None = None,
    future: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Judge each distinct (user, item) pair of ``recs`` once; returns the judge's frame (one row per pair).

    ``future`` (ratings after the training period) makes each request carry its truth for the simulated judge
    (:func:`recjudge_utils.protocols.truth.reevaluation_truth`); the judged pairs get columns ``truth_g`` etc.
    """
    pairs = recs[["user", "item"]].drop_duplicates().sort_values(["user", "item"]).reset_index(drop=True)
    hist = last_items(train, n_history)
    pairs["history"] = [hist.get(int(u), []) for u in pairs["user"]]
    if pairs.empty:
        return pd.DataFrame(columns=["user", "item", "score", "status"])
    if future is not None:
        pairs = reevaluation_truth(pairs, future, items, hist)
    judged = judge.score(pairs, items, desc=desc) if desc else judge.score(pairs, items)
    if len(judged) != len(pairs):
        raise RuntimeError(f"judge returned {len(judged)} rows for {len(pairs)} pairs")
    judged = judged.copy()
    judged["user"] = pairs["user"].to_numpy()
    judged["item"] = pairs["item"].to_numpy()
    for col in ("g", "relevance", "unexpectedness"):
        if col in pairs and future is not None:
            judged[f"truth_{col}"] = pairs[col].to_numpy()
    return judged
