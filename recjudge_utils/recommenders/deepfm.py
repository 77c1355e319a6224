"""DeepFM (Guo et al. 2017): an FM component and a deep MLP sharing the same feature embeddings.

Fields are those of :mod:`recjudge_utils.recommenders.fm` (user id, age bucket, gender, occupation
where present; item id; genres). Each field's embedding is the (value-weighted) sum of its active
feature vectors (genres: the mean of the item's genre vectors); the deep part is an MLP over the
concatenated field embeddings, and the score is FM score + MLP output. The first MLP layer is
linear in the concatenation, so it splits into a user part and an item part that are computed once
per user and per item; only the later layers run per (user, item) pair. Training as for FM (BPR by
default, or BCE on sampled negatives).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import numpy as np
import pandas as pd

from recjudge_utils._extras import optional_imports

from . import register_recommender
from .fm import FM, FM_BUDGETS, FMModule

with optional_imports("recommenders"):
    import torch
    from torch import nn


class DeepFMModule(FMModule):
    """FM parameters plus the MLP, its first layer split into a user part and an item part summed per pair."""

    def __init__(
        self, n_features: int, dim: int, n_user_fields: int, n_item_fields: int, hidden: Sequence[int]
    ) -> None:
        super().__init__(n_features, dim)
        self.n_user_fields, self.n_item_fields = n_user_fields, n_item_fields
        h1 = hidden[0]
        self.first_user = nn.Linear(n_user_fields * dim, h1)
        self.first_item = nn.Linear(n_item_fields * dim, h1, bias=False)
        layers: list[nn.Module] = []
        for a, b in pairwise(hidden):
            layers += [nn.ReLU(), nn.Linear(a, b)]
        layers += [nn.ReLU(), nn.Linear(hidden[-1], 1)]
        self.rest = nn.Sequential(*layers)


def _field_concat(vx: torch.Tensor, field_of_slot: list[str]) -> torch.Tensor:
    """(n, slots, d) -> (n, n_fields * d): slots of the same field are summed (genres: weighted mean)."""
    names = list(dict.fromkeys(field_of_slot))
    parts = []
    for name in names:
        cols = [j for j, f in enumerate(field_of_slot) if f == name]
        parts.append(vx[:, cols].sum(1))
    return torch.cat(parts, dim=-1)


@register_recommender("deepfm", display="DeepFM", budgets=FM_BUDGETS)
class DeepFM(FM):
    """DeepFM recommender: FM + MLP over field embeddings (same features and training as :class:`FM`)."""

    name = "DeepFM"
    module: DeepFMModule | None  # what build_module() returns

    def __init__(
        self,
        users: pd.DataFrame | None = None,
        dim: int = 16,
        hidden: Sequence[int] = (64, 32),
        epochs: int = 10,
        lr: float = 3e-3,
        batch_size: int = 1024,
        l2: float = 1e-5,
        loss: str = "bpr",
        use_side_features: bool = True,
        seed: int = 0,
    ) -> None:
        super().__init__(users, dim, epochs, lr, batch_size, l2, loss, use_side_features, seed)
        self.hidden = tuple(hidden)

    def build_module(self, n_features: int) -> DeepFMModule:
        """A :class:`DeepFMModule` with one first-layer input block per distinct user and item field."""
        n_uf = len(dict.fromkeys(self.user_fields))
        n_if = len(dict.fromkeys(self.item_fields))
        return DeepFMModule(n_features, self.dim, n_uf, n_if, self.hidden)

    def _sides(self, u_idx: torch.Tensor | None, i_idx: torch.Tensor | None):
        m = self.module
        assert m is not None  # built at the start of _fit
        uids, uvals = (self._uids, self._uvals) if u_idx is None else (self._uids[u_idx], self._uvals[u_idx])
        iids, ivals = (self._iids, self._ivals) if i_idx is None else (self._iids[i_idx], self._ivals[i_idx])
        u_own, u_sum, u_vx = m.side(uids, uvals)
        i_own, i_sum, i_vx = m.side(iids, ivals)
        u_h = m.first_user(_field_concat(u_vx, self.user_fields))
        i_h = m.first_item(_field_concat(i_vx, self.item_fields))
        return u_own, u_sum, u_h, i_own, i_sum, i_h

    def pair_scores(self, u_idx: torch.Tensor, i_idx: torch.Tensor) -> torch.Tensor:
        """Scores of aligned (user row, item column) pairs (1-D): FM score + MLP output."""
        assert self.module is not None  # built at the start of _fit
        u_own, u_sum, u_h, i_own, i_sum, i_h = self._sides(u_idx, i_idx)
        fm = self.module.w0 + u_own + i_own + (u_sum * i_sum).sum(-1)
        return fm + self.module.rest(u_h + i_h).squeeze(-1)

    @torch.no_grad()
    def _score_known(self, user_rows: np.ndarray) -> np.ndarray:
        assert self.module is not None  # fitted: score() checks fit() ran
        out = []
        for start in range(0, len(user_rows), 64):
            rows = torch.from_numpy(user_rows[start : start + 64])
            u_own, u_sum, u_h, i_own, i_sum, i_h = self._sides(rows, None)
            fm = self.module.w0 + u_own[:, None] + i_own[None, :] + u_sum @ i_sum.T
            deep = self.module.rest(u_h[:, None, :] + i_h[None, :, :]).squeeze(-1)
            out.append((fm + deep).numpy().astype(np.float64))
        return np.concatenate(out) if out else np.zeros((0, len(self.item_ids)))
