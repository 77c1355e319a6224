"""Factorization machine (Rendle 2010) with user, item and genre features, compact PyTorch.

Features (one-hot unless said): user id; the user's age bucket, gender and occupation when a user
table is given; item id; the item's genres (multi-hot, each weighted ``1 / n_genres``).
The FM score of a (user, item) pair is

    w0 + sum_j w_j x_j + 1/2 * sum_f [(sum_j v_jf x_j)^2 - sum_j v_jf^2 x_j^2]

over the union of the user's and the item's active features. Because the features split into a
user side and an item side, the pair-wise term decomposes into (user-side pairs) + (item-side
pairs) + <sum of user-side vectors, sum of item-side vectors>, so a whole score matrix is a matrix
product (no loop over pairs). Training: BPR on (user, positive, sampled negative) triples (default)
or binary cross-entropy on positives against sampled negatives, Adam, L2 on the used parameters.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

import numpy as np
import pandas as pd

from recjudge_utils._extras import optional_imports

from . import register_recommender
from ._torch import batches, sample_negatives, seeded, torch_threads
from .base import Recommender

with optional_imports("recommenders"):
    import torch
    from torch import nn

_AGE_EDGES = (18, 25, 35, 45, 50, 56)  # ML-1M buckets; ML-100K ages in years fall into the same bins


@dataclass
class FeatureTable:
    """Per entity (row): padded feature ids (0 = padding) and values, plus the field of each slot."""

    ids: np.ndarray  # (n, slots) int64
    vals: np.ndarray  # (n, slots) float32
    fields: list[str]  # field name of each slot
    n_features: int  # feature ids used: 1 .. n_features (0 pads)


def _genre_list(value: object) -> list[str]:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return []
    if isinstance(value, str):
        return [g.strip() for g in value.replace("|", ",").split(",") if g.strip()]
    return [str(g) for g in list(cast(Iterable[object], value))]  # a list / array of genre names


def user_feature_table(
    user_ids: np.ndarray, users: pd.DataFrame | None, offset: int = 0, use_side: bool = True
) -> FeatureTable:
    """User id + (age bucket, gender, occupation where present). Unknown values get their own id."""
    n = len(user_ids)
    cols = [np.arange(n, dtype=np.int64) + 1 + offset]
    fields = ["user_id"]
    next_id = offset + n
    if use_side and users is not None and len(users):
        frame = users.drop_duplicates("user").set_index("user").reindex(user_ids)
        for col in ("age", "gender", "occupation"):
            if col not in frame.columns:
                continue
            raw = frame[col]
            if col == "age":
                ages = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
                codes = np.where(np.isnan(ages), -1, np.searchsorted(_AGE_EDGES, np.nan_to_num(ages), side="right"))
                vocab = np.unique(codes)
                ids = np.searchsorted(vocab, codes)
            else:
                text = raw.astype("string").fillna("<unknown>").to_numpy(dtype=object)
                vocab, ids = np.unique(text.astype(str), return_inverse=True)
            cols.append(ids.astype(np.int64) + 1 + next_id)
            fields.append(col)
            next_id += len(vocab)
    ids = np.stack(cols, axis=1)
    return FeatureTable(ids=ids, vals=np.ones(ids.shape, dtype=np.float32), fields=fields, n_features=next_id)


def item_feature_table(
    item_ids: np.ndarray, items: pd.DataFrame | None, offset: int = 0, use_side: bool = True
) -> FeatureTable:
    """Item id + its genres (multi-hot, weight 1/n_genres); the genre slots are padded with 0."""
    n = len(item_ids)
    genres: list[list[str]] = [[] for _ in range(n)]
    if use_side and items is not None and "genres" in items.columns:
        lookup = dict(zip(items["item"].astype(int), items["genres"], strict=False))
        genres = [_genre_list(lookup.get(int(i))) for i in item_ids]
    vocab = sorted({g for gs in genres for g in gs})
    gid = {g: j for j, g in enumerate(vocab)}
    width = max((len(g) for g in genres), default=0)
    ids = np.zeros((n, 1 + width), dtype=np.int64)
    vals = np.zeros((n, 1 + width), dtype=np.float32)
    ids[:, 0] = np.arange(n) + 1 + offset
    vals[:, 0] = 1.0
    base = offset + n
    for r, gs in enumerate(genres):
        for c, g in enumerate(gs):
            ids[r, 1 + c] = 1 + base + gid[g]
            vals[r, 1 + c] = 1.0 / len(gs)
    return FeatureTable(ids=ids, vals=vals, fields=["item_id"] + ["genre"] * width, n_features=base + len(vocab))


class FMModule(nn.Module):
    """FM parameters over one shared feature space; user and item sides are encoded separately."""

    def __init__(self, n_features: int, dim: int) -> None:
        super().__init__()
        self.w0 = nn.Parameter(torch.zeros(1))
        self.w = nn.Embedding(n_features + 1, 1, padding_idx=0)
        self.v = nn.Embedding(n_features + 1, dim, padding_idx=0)
        nn.init.zeros_(self.w.weight)
        nn.init.normal_(self.v.weight, std=0.05)
        with torch.no_grad():
            self.v.weight[0].zero_()

    def side(self, ids: torch.Tensor, vals: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(linear + within-side pair term (n,), summed vector (n, d), raw vectors (n, slots, d))."""
        vx = self.v(ids) * vals.unsqueeze(-1)
        summed = vx.sum(1)
        within = 0.5 * (summed.pow(2) - vx.pow(2).sum(1)).sum(-1)
        linear = (self.w(ids).squeeze(-1) * vals).sum(1)
        return linear + within, summed, vx


#: RecSys Arena training lengths, shared by DeepFM (same features and training)
FM_BUDGETS = {"arena": {"small": {"epochs": 5}, "paper": {"epochs": 30}}}


@register_recommender("fm", display="FM", budgets=FM_BUDGETS)
class FM(Recommender):
    """Factorization machine recommender (user/item ids + user attributes + item genres)."""

    name = "FM"
    needs_users = True

    def __init__(
        self,
        users: pd.DataFrame | None = None,
        dim: int = 32,
        epochs: int = 10,
        lr: float = 5e-3,
        batch_size: int = 1024,
        l2: float = 1e-5,
        loss: str = "bpr",
        use_side_features: bool = True,
        seed: int = 0,
    ) -> None:
        super().__init__(seed=seed)
        if loss not in ("bpr", "bce"):
            raise ValueError("loss must be 'bpr' or 'bce'")
        self.users, self.dim, self.epochs, self.lr = users, dim, epochs, lr
        self.batch_size, self.l2, self.loss, self.use_side_features = batch_size, l2, loss, use_side_features
        self.losses: list[float] = []
        self.module: FMModule | None = None

    # subclasses (DeepFM) replace these two
    def build_module(self, n_features: int) -> FMModule:
        """The :class:`FMModule` over ``n_features`` feature ids; DeepFM overrides this to add its MLP."""
        return FMModule(n_features, self.dim)

    def pair_scores(self, u_idx: torch.Tensor, i_idx: torch.Tensor) -> torch.Tensor:
        """Scores of aligned (user row, item column) pairs (1-D)."""
        m = self.module
        assert m is not None  # built at the start of _fit
        u_own, u_sum, _ = m.side(self._uids[u_idx], self._uvals[u_idx])
        i_own, i_sum, _ = m.side(self._iids[i_idx], self._ivals[i_idx])
        return m.w0 + u_own + i_own + (u_sum * i_sum).sum(-1)

    def _prepare_features(self, items: pd.DataFrame | None) -> int:
        ut = user_feature_table(self.user_ids, self.users, 0, self.use_side_features)
        it = item_feature_table(self.item_ids, items, ut.n_features, self.use_side_features)
        self.user_fields, self.item_fields = ut.fields, it.fields
        self._uids, self._uvals = torch.from_numpy(ut.ids), torch.from_numpy(ut.vals)
        self._iids, self._ivals = torch.from_numpy(it.ids), torch.from_numpy(it.vals)
        return it.n_features

    def _fit(self, train: pd.DataFrame, items: pd.DataFrame | None) -> None:
        n_features = self._prepare_features(items)
        assert self.train_matrix is not None  # set by fit() before _fit()
        coo = self.train_matrix.tocoo()
        users, pos = coo.row.astype(np.int64), coo.col.astype(np.int64)
        with seeded(self.seed) as rng, torch_threads(1):
            self.module = self.build_module(n_features)
            opt = torch.optim.Adam(self.module.parameters(), lr=self.lr)
            self.losses = []
            for _ in range(self.epochs):
                self.module.train()
                total = 0.0
                for idx in batches(rng, len(users), self.batch_size):
                    u = torch.from_numpy(users[idx])
                    p = torch.from_numpy(pos[idx])
                    n = torch.from_numpy(sample_negatives(rng, users[idx], self.train_matrix, (len(idx),)) - 1)
                    sp_, sn_ = self.pair_scores(u, p), self.pair_scores(u, n)
                    if self.loss == "bpr":
                        loss = -nn.functional.logsigmoid(sp_ - sn_).mean()
                    else:
                        logits = torch.cat([sp_, sn_])
                        labels = torch.cat([torch.ones_like(sp_), torch.zeros_like(sn_)])
                        loss = nn.functional.binary_cross_entropy_with_logits(logits, labels)
                    reg = self.l2 * sum(
                        self.module.v(ids).pow(2).sum() / len(idx)
                        for ids in (self._uids[u], self._iids[p], self._iids[n])
                    )
                    opt.zero_grad()
                    (loss + reg).backward()
                    opt.step()
                    total += float(loss.detach()) * len(idx)
                self.losses.append(total / max(len(users), 1))
        self.module.eval()

    @torch.no_grad()
    def _score_known(self, user_rows: np.ndarray) -> np.ndarray:
        m = self.module
        assert m is not None  # fitted: score() checks fit() ran
        u_own, u_sum, _ = m.side(self._uids[torch.from_numpy(user_rows)], self._uvals[torch.from_numpy(user_rows)])
        i_own, i_sum, _ = m.side(self._iids, self._ivals)
        scores = m.w0 + u_own[:, None] + i_own[None, :] + u_sum @ i_sum.T
        return scores.numpy().astype(np.float64)
