"""Common training loop for models that score a target item from a user's recent history (PURS, DESR).

Training instances are (history window of the ``max_len`` items before position t, item at t) for
every position of every user's time-ordered training sequence, each paired with one sampled negative;
the loss is binary cross-entropy on the model's logit (positive = 1, negative = 0), optimised with
Adam. At recommendation time the history is the user's last ``max_len`` training items and every
item is scored.
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np
import pandas as pd

from recjudge_utils._extras import optional_imports

from ._torch import batches, history_target_instances, left_pad, sample_negatives, seeded, torch_threads, user_sequences
from .base import Recommender

with optional_imports("recommenders"):
    import torch
    from torch import nn


class HistoryModel(nn.Module):
    """``logits(history (B x L), items (B x C)) -> (B x C)``; index 0 of the history is padding."""

    @abstractmethod
    def logits(self, history: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        """Logits (B x C) of the candidate ``items`` (B x C) given each row's padded ``history`` (B x L)."""


class HistoryRecommender(Recommender):
    """Subclasses implement ``build_model(n_items)``; hyperparameters shared by the loop live here."""

    def __init__(
        self,
        dim: int = 32,
        max_len: int = 20,
        epochs: int = 5,
        lr: float = 1e-3,
        batch_size: int = 256,
        l2: float = 0.0,
        seed: int = 0,
    ) -> None:
        super().__init__(seed=seed)
        self.dim, self.max_len, self.epochs = dim, max_len, epochs
        self.lr, self.batch_size, self.l2 = lr, batch_size, l2
        self.model: HistoryModel | None = None
        self.histories: np.ndarray = np.zeros((0, max_len), dtype=np.int64)
        self.losses: list[float] = []

    @abstractmethod
    def build_model(self, n_items: int) -> HistoryModel:
        """A fresh model over ``n_items`` items (ids 1..n_items, 0 pads); called inside the seeded fit."""

    def _fit(self, train: pd.DataFrame, items: pd.DataFrame | None) -> None:
        assert self.train_matrix is not None  # set by fit() before _fit()
        n_users, n_items = self.train_matrix.shape
        seqs = user_sequences(train, self._user_index, self._item_index, n_users)
        self.histories = left_pad(seqs, self.max_len)
        users, hists, targets = history_target_instances(seqs, self.max_len)
        with seeded(self.seed) as rng:
            self.model = self.build_model(n_items)
            opt = torch.optim.Adam(self.model.parameters(), lr=self.lr, weight_decay=self.l2)
            bce = nn.functional.binary_cross_entropy_with_logits
            self.losses = []
            for _ in range(self.epochs):
                self.model.train()
                total = 0.0
                for idx in batches(rng, len(users), self.batch_size):
                    neg = sample_negatives(rng, users[idx], self.train_matrix, (len(idx),))
                    cand = torch.from_numpy(np.stack([targets[idx], neg], axis=1))
                    logit = self.model.logits(torch.from_numpy(hists[idx]), cand)
                    label = torch.zeros_like(logit)
                    label[:, 0] = 1.0
                    loss = bce(logit, label)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    total += float(loss.detach()) * len(idx)
                self.losses.append(total / max(len(users), 1))
        self.model.eval()

    @torch.no_grad()
    def _score_known(self, user_rows: np.ndarray) -> np.ndarray:
        with torch_threads(1):
            return self._score_rows(user_rows)

    def _score_rows(self, user_rows: np.ndarray) -> np.ndarray:
        assert self.model is not None
        assert self.train_matrix is not None  # score() checks fit() ran
        n_items = self.train_matrix.shape[1]
        all_items = torch.arange(1, n_items + 1)
        out = []
        for start in range(0, len(user_rows), 64):
            hist = torch.from_numpy(self.histories[user_rows[start : start + 64]])
            cand = all_items.expand(len(hist), n_items)
            out.append(self.model.logits(hist, cand).numpy().astype(np.float64))
        return np.concatenate(out) if out else np.zeros((0, n_items))
