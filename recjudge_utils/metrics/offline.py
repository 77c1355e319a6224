"""Offline metrics of the RecSys Arena paper (Section 3.2): per-user AUC, nDCG@k, URD diversity, Pearson r.

* **AUC** (per user, then averaged): the held-out test items of the user are the positives, every
  other item the user has not interacted with in training is a negative, training items are
  excluded. AUC is the probability that a random positive outranks a random negative, ties counting
  one half (the Mann-Whitney statistic, identical to ``sklearn.metrics.roc_auc_score``).
* **nDCG@k** as the paper defines it: gain ``2^p(i) - 1`` with p(i) "the preference score of the user u for the
  i-th item" (Sec. 3.2), read here as the user's rating of a held-out item (1-5 stars on MovieLens) and 0 for any
  item not held out; the ideal list ranks the user's held-out items by rating. Data without ratings (clicks) gives
  p = 1 for every held-out item, i.e. binary gain.
* **URD** (Qin & Zhu 2013, intra-list similarity of Ziegler et al. 2005):
  ``URD(rl) = 1 - 2 / (n (n - 1)) * sum over unordered pairs {a, b} of Sim(a, b)``, i.e. one minus the
  mean pair-wise similarity of the list. The paper prints the double sum over ordered pairs with
  the factor 2, which would double-count; we read it over unordered pairs so that URD lies in [0, 1]
  when Sim does. The paper does not say which Sim it uses; the default here is the Jaccard index
  of the two items' genre sets (any ``sim(a, b)`` callable can be passed instead).
* **Pearson r** (of Q against AUC, the paper's Table 3): :func:`~recjudge_utils.metrics.correlation.pearson`,
  importable from here too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from recjudge_utils.metrics.correlation import pearson
from recjudge_utils.metrics.ranking import graded_ndcg_at_k

__all__ = [
    "auc_per_user",
    "evaluate_recommender",
    "genre_jaccard",
    "ndcg_per_user",
    "offline_table",
    "pearson",
    "preference_gain",
    "urd",
]


def auc_per_user(scores: np.ndarray, positives: np.ndarray, exclude: np.ndarray | None = None) -> np.ndarray:
    """Per-row AUC of ``scores`` (n_users x n_items) for boolean ``positives`` against all other items.

    ``exclude`` (boolean, same shape) removes items from both classes (the training items).
    NaN for a user with no positive or no negative item.
    """
    scores = np.asarray(scores, dtype=np.float64)
    positives = np.asarray(positives, dtype=bool)
    if scores.shape != positives.shape:
        raise ValueError(f"scores {scores.shape} and positives {positives.shape} differ in shape")
    valid = np.ones_like(positives) if exclude is None else ~np.asarray(exclude, dtype=bool)
    out = np.full(scores.shape[0], np.nan)
    for u in range(scores.shape[0]):
        s = scores[u, valid[u]]
        p = positives[u, valid[u]]
        n_pos, n_neg = int(p.sum()), int((~p).sum())
        if n_pos == 0 or n_neg == 0:
            continue
        ranks = stats.rankdata(s)  # average ranks for ties
        out[u] = (ranks[p].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)
    return out


def _as_genre_set(value: Any) -> frozenset[str]:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return frozenset()
    if isinstance(value, str):
        return frozenset(g.strip() for g in value.replace("|", ",").split(",") if g.strip())
    return frozenset(str(g) for g in list(value))


def genre_jaccard(items: pd.DataFrame) -> Callable[[int, int], float]:
    """Sim(a, b) = |G_a ∩ G_b| / |G_a ∪ G_b| over the items' genre sets (0 when both are empty)."""
    genres = {int(i): _as_genre_set(g) for i, g in zip(items["item"], items["genres"], strict=True)}

    def sim(a: int, b: int) -> float:
        ga, gb = genres.get(int(a), frozenset()), genres.get(int(b), frozenset())
        union = ga | gb
        return len(ga & gb) / len(union) if union else 0.0

    return sim


def urd(rec_list: Sequence[int], sim: Callable[[int, int], float]) -> float:
    """1 - mean similarity over the unordered pairs of the list (NaN for lists shorter than 2)."""
    items = list(rec_list)
    n = len(items)
    if n < 2:
        return float("nan")
    total = sum(sim(items[i], items[j]) for i in range(n) for j in range(i + 1, n))
    return 1.0 - 2.0 / (n * (n - 1)) * total


def _urd_per_user(recs: np.ndarray, sim: Callable[[int, int], float]) -> np.ndarray:
    """URD of every user's list (one row of ``recs`` per user)."""
    return np.array([urd(row, sim) for row in np.asarray(recs)], dtype=np.float64)


def preference_gain(p: float | Sequence[float] | np.ndarray) -> np.ndarray:
    """The paper's DCG gain ``2^p - 1`` of a preference score p (0 for p = 0, an item the user did not choose)."""
    return np.exp2(np.asarray(p, dtype=np.float64)) - 1.0


def ndcg_per_user(recs: np.ndarray, relevant: Sequence[Mapping[int, float] | set[int]], k: int) -> np.ndarray:
    """Per-user nDCG@k of top-k lists with the paper's gain ``2^p - 1``: ``relevant[u]`` maps each held-out item of
    user ``u`` to its preference score p (a set: p = 1 for each, binary gain)."""
    prefs = [r if isinstance(r, Mapping) else dict.fromkeys(r, 1.0) for r in relevant]
    top = np.asarray(recs)[:, :k]
    p = np.array([[float(pref.get(int(i), 0.0)) for i in row] for row, pref in zip(top, prefs, strict=True)])
    gains = preference_gain(p.reshape(len(prefs), top.shape[1]))
    return graded_ndcg_at_k(gains, [preference_gain(list(pref.values())) for pref in prefs], k)


def evaluate_recommender(
    model: Any,
    train: pd.DataFrame,
    test: pd.DataFrame,
    items: pd.DataFrame,
    k: int = 5,
    users: Sequence[int] | None = None,
    sim: Callable[[int, int], float] | None = None,
) -> pd.DataFrame:
    """Per-user AUC, nDCG@k (gain ``2^rating - 1`` of the held-out items, binary without ratings) and URD@k of a
    fitted recommender on ``test`` (rows: users with test items).

    Test items the model has never seen (not in ``model.item_ids``) cannot be ranked and are left out of AUC; they
    stay in nDCG's ideal list, as items the model could not recommend.
    """
    held = test.assign(_p=test["rating"].astype(float) if "rating" in test.columns else 1.0)
    # a (user, item) held out twice counts once, at its highest rating
    prefs = held.groupby(["user", "item"])["_p"].max()
    truth = {int(u): {int(i): float(p) for (_, i), p in grp.items()} for u, grp in prefs.groupby(level="user")}
    eval_users = np.array(sorted(truth if users is None else set(users) & set(truth)), dtype=np.int64)
    sim = sim or genre_jaccard(items)
    rows = []
    for start in range(0, len(eval_users), 256):
        batch = eval_users[start : start + 256]
        scores = model.score(batch)
        cols = model.user_rows(batch)
        positives = np.zeros(scores.shape, dtype=bool)
        exclude = np.zeros(scores.shape, dtype=bool)
        for r, (u, row) in enumerate(zip(batch, cols, strict=True)):
            pc = model.item_columns(np.fromiter(truth[u], dtype=np.int64))
            positives[r, pc[pc >= 0]] = True
            if row >= 0:
                exclude[r, model.train_matrix[row].indices] = True
        exclude &= ~positives
        auc = auc_per_user(scores, positives, exclude)
        recs = model.top_k(scores, batch, k=k)
        ndcg = ndcg_per_user(recs, [truth[u] for u in batch], k)
        div = _urd_per_user(recs, sim)
        rows.append(pd.DataFrame({"user": batch, "auc": auc, f"ndcg@{k}": ndcg, "urd": div}))
    return pd.concat(rows, ignore_index=True)


def offline_table(per_user: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Mean of each per-user metric per model (rows in the order given)."""
    rows = []
    for name, frame in per_user.items():
        means = frame.drop(columns=["user"]).mean(numeric_only=True)
        rows.append({"rs": name, **means.to_dict(), "n_users": len(frame)})
    return pd.DataFrame(rows)
