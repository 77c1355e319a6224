"""The interface every recommender implements, and the index bookkeeping they share.

A recommender learns from a frame of interactions (user, item, rating, timestamp) and scores
every known item for a batch of users. ``recommend`` turns scores into top-k lists and, by
default, never recommends what the user already saw in training. Users unseen in training
have no learned state: they receive the training popularity ranking (said in ``fallback``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np
import pandas as pd
import scipy.sparse as sp


class Recommender(ABC):
    """Base class: subclasses implement ``_fit`` and ``_score_known``."""

    name: str = "base"
    fallback = "popularity in the training data"
    #: True for models that learn from user attributes (FM, DeepFM): built with ``users=`` the users frame
    needs_users: ClassVar[bool] = False
    #: True for models defined on explicit ratings (KFN, UAUM): they are trained on every rating of the
    #: training slices, the others on the positives only
    uses_explicit_ratings: ClassVar[bool] = False
    #: what else the model needs from a dataset (:mod:`.data_needs`): a dataset without it leaves the model out
    needs_data: ClassVar[tuple[str, ...]] = ()

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.item_ids: np.ndarray = np.array([], dtype=np.int64)
        self.user_ids: np.ndarray = np.array([], dtype=np.int64)
        self._item_index: dict[int, int] = {}
        self._user_index: dict[int, int] = {}
        self.train_matrix: sp.csr_matrix | None = None
        self.popularity: np.ndarray = np.array([])

    # -- fitting -----------------------------------------------------------------------------
    def fit(self, train: pd.DataFrame, items: pd.DataFrame | None = None) -> Recommender:
        """Learn from ``train`` (columns user, item, rating, timestamp); ``items`` adds metadata."""
        missing = {"user", "item"} - set(train.columns)
        if missing:
            raise ValueError(f"{self.name}: training frame lacks columns {sorted(missing)}")
        if train.empty:
            raise ValueError(f"{self.name}: empty training frame")
        self.user_ids = np.sort(train["user"].unique())
        known_items = set(train["item"].unique())
        if items is not None:
            known_items |= set(items["item"].unique())
        self.item_ids = np.array(sorted(known_items), dtype=np.int64)
        self._user_index = {int(u): i for i, u in enumerate(self.user_ids)}
        self._item_index = {int(it): i for i, it in enumerate(self.item_ids)}
        rows = train["user"].map(self._user_index).to_numpy()
        cols = train["item"].map(self._item_index).to_numpy()
        matrix = sp.csr_matrix(
            (np.ones(len(train), dtype=np.float32), (rows, cols)),
            shape=(len(self.user_ids), len(self.item_ids)),
        )
        matrix.data[:] = 1.0  # duplicates collapse to a single implicit interaction
        self.train_matrix = matrix
        self.popularity = np.asarray(matrix.sum(axis=0)).ravel()
        self._fit(train, items)
        return self

    @abstractmethod
    def _fit(self, train: pd.DataFrame, items: pd.DataFrame | None) -> None:
        """Model-specific learning; the index maps and ``train_matrix`` are ready."""

    @abstractmethod
    def _score_known(self, user_rows: np.ndarray) -> np.ndarray:
        """Scores (len(user_rows) x n_items) for users given as row indices of ``train_matrix``."""

    # -- scoring -----------------------------------------------------------------------------
    def user_rows(self, users: np.ndarray) -> np.ndarray:
        """Row index per user, -1 for users unseen in training."""
        return np.array([self._user_index.get(int(u), -1) for u in np.asarray(users)], dtype=np.int64)

    def item_columns(self, items: np.ndarray) -> np.ndarray:
        """Column index per item, -1 for items unseen in training."""
        return np.array([self._item_index.get(int(i), -1) for i in np.asarray(items)], dtype=np.int64)

    def score(self, users: np.ndarray) -> np.ndarray:
        """Scores for every item in ``item_ids`` order; unseen users get the popularity fallback."""
        if self.train_matrix is None:
            raise RuntimeError(f"{self.name}: call fit() before score()")
        rows = self.user_rows(users)
        out = np.tile(self.popularity.astype(np.float64), (len(rows), 1))
        known = rows >= 0
        if known.any():
            out[known] = self._score_known(rows[known])
        return out

    def recommend(self, users: np.ndarray, k: int = 20, exclude_seen: bool = True) -> np.ndarray:
        """Top-k item ids per user (n_users x k), best first."""
        users = np.asarray(users)
        return self.top_k(self.score(users), users, k, exclude_seen)

    def top_k(self, scores: np.ndarray, users: np.ndarray, k: int = 20, exclude_seen: bool = True) -> np.ndarray:
        """:meth:`recommend` from the users' :meth:`score` rows already computed (an evaluation that needs both the
        scores and the lists scores once)."""
        if k <= 0:
            raise ValueError("k must be positive")
        users = np.asarray(users)
        scores = np.array(scores, dtype=np.float64)  # a copy: the caller's scores stay as they were
        if exclude_seen:
            assert self.train_matrix is not None  # score() raised otherwise
            rows = self.user_rows(users)
            known = np.flatnonzero(rows >= 0)
            seen = self.train_matrix[rows[known]].tocoo()
            scores[known[seen.row], seen.col] = -np.inf
        k = min(k, scores.shape[1])
        top = np.argpartition(-scores, kth=k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1, kind="stable")
        return self.item_ids[np.take_along_axis(top, order, axis=1)]


def explicit_ratings(model: Recommender, train: pd.DataFrame) -> sp.csr_matrix:
    """The training ratings as a users x items matrix in the model's index (0 = not rated).

    Duplicate (user, item) rows are averaged; a frame without ``rating`` counts every row as 1.
    Used by the models defined on explicit ratings (KFN, UAUM); ``train_matrix`` is the binary form.
    """
    ratings = train["rating"].to_numpy(dtype=np.float64) if "rating" in train.columns else np.ones(len(train))
    rows = train["user"].map(model._user_index).to_numpy()
    cols = train["item"].map(model._item_index).to_numpy()
    shape = (len(model.user_ids), len(model.item_ids))
    sums = sp.csr_matrix((ratings, (rows, cols)), shape=shape)  # duplicates are summed ...
    counts = sp.csr_matrix((np.ones(len(train)), (rows, cols)), shape=shape)
    sums.sort_indices()
    counts.sort_indices()
    sums.data /= counts.data  # ... and divided by their count (same sparsity pattern, same order)
    return sums
