"""SASRec: self-attentive sequential recommendation (Kang & McAuley, ICDM 2018), compact PyTorch.

Each user's training items, in time order, form a sequence (last ``max_len`` kept, left-padded).
Item + learned positional embeddings go through ``n_blocks`` pre-norm Transformer blocks with a
causal mask (position t attends to positions <= t only). The hidden state at position t scores the
next item by a dot product with the (shared) item embedding. Training follows the paper: at every
non-pad position, binary cross-entropy of the true next item against one sampled negative item
(uniform over items the user never interacted with), Adam. Recommendation scores every item with
the hidden state of the last position.

Reusable parts for other models: ``SASRecEncoder`` (embedding + causal blocks, ``forward(seq) ->
hidden states``) and ``SASRecEncoder.item_scores``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from recjudge_utils._extras import optional_imports

from . import register_recommender
from ._torch import batches, left_pad, sample_negatives, seeded, torch_threads, user_sequences
from .base import Recommender

with optional_imports("recommenders"):
    import torch
    from torch import nn


class SASRecEncoder(nn.Module):
    """Item/position embeddings and causal self-attention blocks; index 0 is padding."""

    def __init__(self, n_items: int, dim: int, max_len: int, n_blocks: int, n_heads: int, dropout: float) -> None:
        super().__init__()
        self.item_emb = nn.Embedding(n_items + 1, dim, padding_idx=0)
        self.pos_emb = nn.Embedding(max_len, dim)
        self.dropout = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(
                dim, n_heads, dim_feedforward=dim, dropout=dropout, batch_first=True, norm_first=True
            )
            for _ in range(n_blocks)
        )
        self.norm = nn.LayerNorm(dim)
        self.max_len = max_len
        nn.init.normal_(self.item_emb.weight, std=0.05)
        with torch.no_grad():
            self.item_emb.weight[0].zero_()

    def forward(self, seq: torch.Tensor) -> torch.Tensor:
        """Hidden states (batch x len x dim) for left-padded item sequences (batch x len)."""
        length = seq.shape[1]
        pos = torch.arange(length, device=seq.device)
        x = self.item_emb(seq) * (self.item_emb.embedding_dim**0.5) + self.pos_emb(pos)[None]
        pad = seq == 0
        x = self.dropout(x) * (~pad).unsqueeze(-1)
        causal = torch.triu(torch.ones(length, length, dtype=torch.bool, device=seq.device), diagonal=1)
        for block in self.blocks:
            # fully padded rows would give NaN attention; let pads attend to themselves via the causal mask only
            x = block(x, src_mask=causal)
            x = x * (~pad).unsqueeze(-1)
        return self.norm(x)

    def item_scores(self, hidden: torch.Tensor) -> torch.Tensor:
        """Scores of every real item (columns = item index, pad excluded)."""
        return hidden @ self.item_emb.weight[1:].T


@register_recommender(
    "sasrec",
    display="SASRec",
    search_space=lambda t: {
        "dim": t.suggest_categorical("dim", [32, 64]),
        "n_blocks": t.suggest_int("n_blocks", 1, 2),
        "dropout": t.suggest_float("dropout", 0.0, 0.5),
        "lr": t.suggest_float("lr", 1e-4, 1e-2, log=True),
    },
    budgets={
        "reevaluation": {"small": {"epochs": 10}},
        "arena": {"small": {"epochs": 8, "max_len": 50, "dim": 64}, "paper": {"epochs": 100, "max_len": 50, "dim": 64}},
    },
)
class SASRec(Recommender):
    """Next-item scores from the last hidden state of a causal self-attention encoder over the user's sequence."""

    name = "sasrec"

    def __init__(
        self,
        dim: int = 64,
        max_len: int = 50,
        n_blocks: int = 2,
        n_heads: int = 1,
        dropout: float = 0.2,
        epochs: int = 20,
        lr: float = 1e-3,
        batch_size: int = 128,
        seed: int = 0,
    ) -> None:
        super().__init__(seed=seed)
        self.dim, self.max_len, self.n_blocks, self.n_heads = dim, max_len, n_blocks, n_heads
        self.dropout, self.epochs, self.lr, self.batch_size = dropout, epochs, lr, batch_size
        self.model: SASRecEncoder | None = None
        self.sequences: np.ndarray = np.zeros((0, max_len), dtype=np.int64)
        self.losses: list[float] = []

    def _fit(self, train: pd.DataFrame, items: pd.DataFrame | None) -> None:
        assert self.train_matrix is not None  # set by fit() before _fit()
        n_users, n_items = self.train_matrix.shape
        seqs = user_sequences(train, self._user_index, self._item_index, n_users)
        self.sequences = left_pad(seqs, self.max_len)
        inputs = left_pad([s[:-1] for s in seqs], self.max_len)
        targets = left_pad([s[1:] for s in seqs], self.max_len)
        trainable = np.flatnonzero((targets > 0).any(axis=1))
        with seeded(self.seed) as rng:
            self.model = SASRecEncoder(n_items, self.dim, self.max_len, self.n_blocks, self.n_heads, self.dropout)
            opt = torch.optim.Adam(self.model.parameters(), lr=self.lr, betas=(0.9, 0.98))
            self.losses = []
            for _ in range(self.epochs):
                self.model.train()
                total, count = 0.0, 0
                for idx in batches(rng, len(trainable), self.batch_size):
                    rows = trainable[idx]
                    seq = torch.from_numpy(inputs[rows])
                    pos = torch.from_numpy(targets[rows])
                    neg = torch.from_numpy(sample_negatives(rng, rows, self.train_matrix, pos.shape))
                    h = self.model(seq)
                    pos_logit = (h * self.model.item_emb(pos)).sum(-1)
                    neg_logit = (h * self.model.item_emb(neg)).sum(-1)
                    mask = (pos > 0).float()
                    bce = nn.functional.binary_cross_entropy_with_logits
                    loss = bce(pos_logit, torch.ones_like(pos_logit), reduction="none") + bce(
                        neg_logit, torch.zeros_like(neg_logit), reduction="none"
                    )
                    loss = (loss * mask).sum() / mask.sum().clamp(min=1)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    total += float(loss.detach()) * len(rows)
                    count += len(rows)
                self.losses.append(total / max(count, 1))
        self.model.eval()

    @torch.no_grad()
    def _score_known(self, user_rows: np.ndarray) -> np.ndarray:
        with torch_threads(1):
            return self._score_rows(user_rows)

    def _score_rows(self, user_rows: np.ndarray) -> np.ndarray:
        assert self.model is not None
        out = []
        for start in range(0, len(user_rows), 256):
            seq = torch.from_numpy(self.sequences[user_rows[start : start + 256]])
            h = self.model(seq)[:, -1]
            out.append(self.model.item_scores(h).numpy().astype(np.float64))
        return np.concatenate(out) if out else np.zeros((0, len(self.item_ids)))
