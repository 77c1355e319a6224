"""Item co-occurrence ("customers who bought this also bought") recommender, as in SAER Section 3.4.

Two items co-occur when the same customer consumed both (a binary user x item matrix X gives the
co-occurrence counts C = X^T X with a zero diagonal). A customer's score for item j is the sum of
C[i, j] over the customer's ``n_recent`` most recent items i (all items when ``n_recent`` is None),
so it counts how often *other* customers consumed j together with what this customer just had:
the customer's own row never contributes to an unseen item j because X[u, j] = 0.
Ties are broken by global popularity (a tiny epsilon), then by item id, so results are deterministic.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from recjudge_utils.recommenders import register_recommender
from recjudge_utils.recommenders.base import Recommender


def recent_item_columns(
    train: pd.DataFrame, user_index: dict[int, int], item_index: dict[int, int], n_recent: int | None
) -> list[np.ndarray]:
    """Per training user row: column indices of their ``n_recent`` latest items (newest last)."""
    frame = train.loc[:, ["user", "item"]].copy()
    frame["_ts"] = train["timestamp"].to_numpy() if "timestamp" in train.columns else np.arange(len(train))
    frame["_pos"] = np.arange(len(frame))
    frame = frame.sort_values(["user", "_ts", "_pos"], kind="stable").drop_duplicates(["user", "item"], keep="last")
    out: list[np.ndarray] = [np.array([], dtype=np.int64)] * len(user_index)
    for user, group in frame.groupby("user", sort=False):
        cols = group["item"].map(item_index).to_numpy(dtype=np.int64)
        if n_recent is not None:
            cols = cols[-n_recent:]
        out[user_index[int(user)]] = cols
    return out


@register_recommender("cooccurrence", display="Co-occurrence")
class CooccurrenceRecommender(Recommender):
    """Scores items by how often other customers consumed them together with the customer's recent items."""

    name = "co-occurrence"

    def __init__(self, n_recent: int | None = 20, seed: int = 0) -> None:
        super().__init__(seed=seed)
        if n_recent is not None and n_recent <= 0:
            raise ValueError("n_recent must be positive or None")
        self.n_recent = n_recent
        self.cooccurrence: sp.csr_matrix | None = None
        self._recent: list[np.ndarray] = []

    def _fit(self, train: pd.DataFrame, items: pd.DataFrame | None) -> None:
        assert self.train_matrix is not None  # set by fit() before _fit()
        x = self.train_matrix.astype(np.float64)
        c = (x.T @ x).tocsr()
        c.setdiag(0.0)
        c.eliminate_zeros()
        self.cooccurrence = c
        self._recent = recent_item_columns(train, self._user_index, self._item_index, self.n_recent)

    def _score_known(self, user_rows: np.ndarray) -> np.ndarray:
        n_items = len(self.item_ids)
        seeds = sp.lil_matrix((len(user_rows), n_items), dtype=np.float64)
        for i, row in enumerate(user_rows):
            cols = self._recent[int(row)]
            if len(cols):
                seeds[i, cols] = 1.0
        scores = np.asarray((seeds.tocsr() @ self.cooccurrence).todense(), dtype=np.float64)
        pop = self.popularity.astype(np.float64)
        tiebreak = pop / (pop.max() + 1.0) * 1e-3 if len(pop) else pop
        return scores + tiebreak[None, :]
