"""k-furthest neighbours (Said, Fields, Jain & Albayrak, CSCW 2013).

KFN inverts user-based k-NN: for each user it finds the ``k`` *least* similar users and recommends
what they liked, weighted by how dissimilar they are. Said et al. compute furthest neighbours on
explicit ratings and recommend items those anti-neighbours rated low (inverting their ratings).
Under this project's protocol only positive interactions (rating >= 4) are kept, so there are no
dislikes left to invert; on this implicit data KFN therefore recommends the items the most
dissimilar users interacted with (= liked), which is the implicit-feedback reading of the method.

Similarity is cosine over the binary training matrix (values 0..1), dissimilarity ``1 - cos``.
Many users share the minimum similarity (0) on sparse data; ties are broken by a seeded random
permutation of the users, so the neighbourhood is reproducible and not biased to low user ids.
Score ``s_ui = sum_{v in F_k(u)} (1 - cos(u, v)) * x_vi``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .base import Recommender


class KFN(Recommender):
    name = "kfn"

    def __init__(self, k: int = 50, seed: int = 0) -> None:
        super().__init__(seed=seed)
        self.k = k
        self._perm = np.zeros(0, dtype=np.int64)
        self._norms = np.zeros(0)

    def _fit(self, train: pd.DataFrame, items: pd.DataFrame | None) -> None:
        n_users = self.train_matrix.shape[0]
        self._perm = np.random.default_rng(self.seed).permutation(n_users)
        self._norms = np.sqrt(np.asarray(self.train_matrix.multiply(self.train_matrix).sum(axis=1)).ravel())

    def similarities(self, user_rows: np.ndarray) -> np.ndarray:
        """Cosine similarity of the given users to every training user (rows x n_users)."""
        x = self.train_matrix
        dots = np.asarray((x[user_rows] @ x.T).todense(), dtype=np.float64)
        denom = np.outer(self._norms[user_rows], self._norms)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(denom > 0, dots / denom, 0.0)

    def furthest(self, user_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(neighbour rows, their similarity) of the k least similar users, self excluded."""
        sims = self.similarities(user_rows)
        sims[np.arange(len(user_rows)), user_rows] = np.inf  # never one's own anti-neighbour
        k = min(self.k, sims.shape[1] - 1)
        permuted = sims[:, self._perm]
        order = np.argsort(permuted, axis=1, kind="stable")[:, :k]
        rows = self._perm[order]
        return rows, np.take_along_axis(sims, rows, axis=1)

    def _score_known(self, user_rows: np.ndarray) -> np.ndarray:
        rows, sims = self.furthest(user_rows)
        if rows.shape[1] == 0:
            return np.zeros((len(user_rows), len(self.item_ids)))
        weights = 1.0 - sims  # (n, k)
        x = self.train_matrix
        out = np.zeros((len(user_rows), x.shape[1]))
        for r in range(len(user_rows)):
            out[r] = weights[r] @ x[rows[r]].toarray()
        return out
