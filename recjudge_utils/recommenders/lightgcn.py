"""LightGCN (He et al. 2020), compact PyTorch.

The user-item interaction graph (users and items as nodes, one undirected edge per training
interaction) is normalised symmetrically, ``A_hat = D^-1/2 A D^-1/2``. Layer-0 embeddings are free
parameters; layer k+1 is ``A_hat @ E_k`` (no weights, no non-linearity, no self-loop), and the final
representation is the mean of layers 0..K. Score = dot product of the final user and item vectors.
Training: BPR on (user, positive, sampled negative) triples with L2 on the layer-0 embeddings of the
batch, Adam, the propagation recomputed at every step.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from recjudge_utils._extras import optional_imports

from . import register_recommender
from ._torch import batches, sample_negatives, seeded, torch_threads
from .base import Recommender

with optional_imports("recommenders"):
    import torch
    from torch import nn


def normalized_adjacency(matrix: sp.csr_matrix) -> torch.Tensor:
    """Sparse torch tensor of D^-1/2 A D^-1/2 for the bipartite graph of ``matrix`` (users x items)."""
    n_users, n_items = matrix.shape
    adj = sp.bmat([[None, matrix], [matrix.T, None]], format="csr").astype(np.float32)
    deg = np.asarray(adj.sum(axis=1)).ravel()
    inv = np.zeros_like(deg)
    inv[deg > 0] = deg[deg > 0] ** -0.5
    norm = (sp.diags(inv) @ adj @ sp.diags(inv)).tocoo()
    idx = torch.from_numpy(np.vstack([norm.row, norm.col]).astype(np.int64))
    return torch.sparse_coo_tensor(
        idx, torch.from_numpy(norm.data.astype(np.float32)), (n_users + n_items,) * 2
    ).coalesce()


@register_recommender(
    "lightgcn",
    display="LightGCN",
    budgets={"arena": {"small": {"epochs": 5, "batch_size": 4096, "lr": 1e-2}, "paper": {"epochs": 100}}},
)
class LightGCN(Recommender):
    """Dot product of user and item embeddings averaged over normalised graph propagation layers, trained with BPR."""

    name = "LightGCN"

    def __init__(
        self,
        dim: int = 64,
        n_layers: int = 3,
        epochs: int = 20,
        lr: float = 5e-3,
        batch_size: int = 2048,
        l2: float = 1e-4,
        seed: int = 0,
    ) -> None:
        super().__init__(seed=seed)
        self.dim, self.n_layers, self.epochs, self.lr = dim, n_layers, epochs, lr
        self.batch_size, self.l2 = batch_size, l2
        self.losses: list[float] = []
        self.embedding: nn.Embedding | None = None
        self._final: torch.Tensor | None = None

    def propagate(self, adj: torch.Tensor) -> torch.Tensor:
        """Final embeddings (users, then items): the mean of layers 0..n_layers of propagation by ``adj``."""
        assert self.embedding is not None  # created at the start of _fit
        e = self.embedding.weight
        layers = [e]
        for _ in range(self.n_layers):
            e = torch.sparse.mm(adj, e)
            layers.append(e)
        return torch.stack(layers).mean(0)

    def _fit(self, train: pd.DataFrame, items: pd.DataFrame | None) -> None:
        assert self.train_matrix is not None  # set by fit() before _fit()
        n_users, n_items = self.train_matrix.shape
        adj = normalized_adjacency(self.train_matrix)
        coo = self.train_matrix.tocoo()
        users, pos = coo.row.astype(np.int64), coo.col.astype(np.int64)
        with seeded(self.seed) as rng, torch_threads(1):
            self.embedding = nn.Embedding(n_users + n_items, self.dim)
            nn.init.normal_(self.embedding.weight, std=0.1)
            opt = torch.optim.Adam(self.embedding.parameters(), lr=self.lr)
            self.losses = []
            for _ in range(self.epochs):
                total = 0.0
                for idx in batches(rng, len(users), self.batch_size):
                    u = torch.from_numpy(users[idx])
                    p = torch.from_numpy(pos[idx] + n_users)
                    neg = sample_negatives(rng, users[idx], self.train_matrix, (len(idx),)) - 1
                    n = torch.from_numpy(neg + n_users)
                    final = self.propagate(adj)
                    s_pos = (final[u] * final[p]).sum(-1)
                    s_neg = (final[u] * final[n]).sum(-1)
                    loss = -nn.functional.logsigmoid(s_pos - s_neg).mean()
                    ego = self.embedding.weight
                    reg = self.l2 * 0.5 * (ego[u].pow(2).sum() + ego[p].pow(2).sum() + ego[n].pow(2).sum()) / len(idx)
                    opt.zero_grad()
                    (loss + reg).backward()
                    opt.step()
                    total += float(loss.detach()) * len(idx)
                self.losses.append(total / max(len(users), 1))
            with torch.no_grad():
                self._final = self.propagate(adj)

    @torch.no_grad()
    def _score_known(self, user_rows: np.ndarray) -> np.ndarray:
        assert self.train_matrix is not None and self._final is not None  # fitted: score() checks fit() ran
        n_users = self.train_matrix.shape[0]
        users = self._final[torch.from_numpy(user_rows)]
        return (users @ self._final[n_users:].T).numpy().astype(np.float64)
