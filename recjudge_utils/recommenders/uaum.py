"""Unexpectedness-augmented utility model (after Li & Tuzhilin, "Latent modeling of unexpectedness").

The paper under reproduction describes UAUM as "an MF-based approach incorporating an unexpectedness
term into singular value decomposition". Following Li & Tuzhilin, the utility of item ``i`` for
user ``u`` is

    utility(u, i) = relevance(u, i) + lam * unexpectedness(u, i)

* relevance: a truncated SVD of the binary training matrix (PureSVD, ``X ~ U S V^T``; scores
  ``(U S V^T)_ui``), seeded randomized SVD so the result is reproducible;
* latent space: item embeddings ``e_i = V_i * sqrt(S)``;
* expectation set of ``u``: the items ``u`` interacted with in training;
* unexpectedness: the Euclidean distance of ``e_i`` from the user's expectation set in that space.
  Li & Tuzhilin measure the distance to the *closure* (convex hull) of the expected items; exact
  hull distances need one quadratic programme per (user, item), so two documented approximations
  are offered: ``expectation="centroid"`` (distance to the mean embedding of the expected items,
  default) and ``expectation="nearest"`` (distance to the closest expected item, which is an upper
  bound of the hull distance).

Relevance and unexpectedness live on different scales, so each is standardised per user (z-score
over all items) before the weighted sum; ``lam`` = 0 gives plain PureSVD.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.utils.extmath import randomized_svd

from .base import Recommender


def _zscore(x: np.ndarray) -> np.ndarray:
    sd = x.std(axis=1, keepdims=True)
    return (x - x.mean(axis=1, keepdims=True)) / np.where(sd > 0, sd, 1.0)


class UAUM(Recommender):
    name = "uaum"

    def __init__(self, factors: int = 32, lam: float = 0.5, expectation: str = "centroid", seed: int = 0) -> None:
        super().__init__(seed=seed)
        if expectation not in ("centroid", "nearest"):
            raise ValueError("expectation must be 'centroid' or 'nearest'")
        self.factors, self.lam, self.expectation = factors, lam, expectation
        self.user_factors = np.zeros((0, factors))
        self.item_factors = np.zeros((0, factors))
        self.item_embeddings = np.zeros((0, factors))

    def _fit(self, train: pd.DataFrame, items: pd.DataFrame | None) -> None:
        x = self.train_matrix.astype(np.float64)
        k = max(1, min(self.factors, min(x.shape) - 1))
        u, s, vt = randomized_svd(x, n_components=k, random_state=self.seed, n_iter=5)
        self.user_factors = u * s
        self.item_factors = vt.T
        self.item_embeddings = vt.T * np.sqrt(s)

    def relevance(self, user_rows: np.ndarray) -> np.ndarray:
        return self.user_factors[user_rows] @ self.item_factors.T

    def unexpectedness(self, user_rows: np.ndarray) -> np.ndarray:
        """Distance of every item from each user's expectation set in the latent space."""
        emb = self.item_embeddings
        sub = self.train_matrix[user_rows]
        out = np.zeros((len(user_rows), emb.shape[0]))
        if self.expectation == "centroid":
            counts = np.asarray(sub.sum(axis=1)).ravel()
            centroids = (sub @ emb) / np.maximum(counts, 1)[:, None]
            sq = (emb**2).sum(1)[None, :] - 2 * centroids @ emb.T + (centroids**2).sum(1)[:, None]
            return np.sqrt(np.maximum(sq, 0.0))
        item_sq = (emb**2).sum(1)
        for r in range(len(user_rows)):
            seen = sub[r].indices
            if len(seen) == 0:
                continue
            e = emb[seen]
            sq = item_sq[None, :] - 2 * e @ emb.T + (e**2).sum(1)[:, None]
            out[r] = np.sqrt(np.maximum(sq, 0.0)).min(axis=0)
        return out

    def _score_known(self, user_rows: np.ndarray) -> np.ndarray:
        rel = _zscore(self.relevance(user_rows))
        if self.lam == 0:
            return rel
        return rel + self.lam * _zscore(self.unexpectedness(user_rows))
