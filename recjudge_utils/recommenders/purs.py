"""PURS: personalised unexpected recommender system (Li, Que, Jiang, Hu & Tuzhilin, RecSys 2020), compact.

What PURS does, and what this version keeps:

* **Relevance** from the user's behaviour sequence: PURS encodes the click sequence and predicts a
  click-through rate. Here: item + position embeddings, one self-attention layer over the history,
  masked mean pooling to a user vector ``h``; relevance ``r_ui = h . e_i + b_i``.
* **Unexpectedness** as the distance of the candidate from the user's interest clusters in the latent
  space: PURS clusters the embeddings of the user's behaviours with mean-shift and measures the
  distance of the item to the cluster centres, weighted by cluster size. Here: ``shift_iters``
  differentiable mean-shift steps with a Gaussian kernel (bandwidth ``bandwidth``) move every history
  embedding towards its mode; the unexpectedness is the mean distance of ``e_i`` to the shifted points
  (points that collapsed on one mode count as that cluster's size, so this is the size-weighted
  distance to the cluster centres without an explicit, non-differentiable cluster assignment).
* **Unexpected activation** ``f(x) = x * exp(-x)`` (PURS), which rewards moderate unexpectedness and
  damps items that are far too remote.
* **Personalised unexpectedness factor** ``a_u = sigmoid(w . h + c)``: from the self-attentive
  representation of the user's recent behaviour, as PURS's self-attentive factor network.
* **Utility** ``logit = r_ui + a_u * f(unexp_ui)``, trained end to end with binary cross-entropy on
  (history, next item) vs a sampled negative, as PURS trains on click labels.

Deviations: PURS uses a GRU/MLP relevance model and hard mean-shift clusters over the whole history
with a window of recent behaviours; this version uses one attention layer, dot-product relevance,
soft mean-shift over the last ``max_len`` items, and no sessions (the datasets have none).
"""

from __future__ import annotations

from recjudge_utils._extras import optional_imports

from . import register_recommender
from ._history import HistoryModel, HistoryRecommender

with optional_imports("recommenders"):
    import torch
    from torch import nn


class PURSModel(HistoryModel):
    """PURS scorer: self-attentive relevance plus a personalised factor times activated unexpectedness."""

    def __init__(self, n_items: int, dim: int, max_len: int, bandwidth: float, shift_iters: int) -> None:
        super().__init__()
        self.item_emb = nn.Embedding(n_items + 1, dim, padding_idx=0)
        self.item_bias = nn.Embedding(n_items + 1, 1, padding_idx=0)
        self.pos_emb = nn.Embedding(max_len, dim)
        self.attn = nn.MultiheadAttention(dim, 1, batch_first=True)
        self.factor = nn.Linear(dim, 1)
        self.bandwidth, self.shift_iters = bandwidth, shift_iters
        nn.init.normal_(self.item_emb.weight, std=0.1)
        nn.init.zeros_(self.item_bias.weight)

    def encode(self, history: torch.Tensor) -> torch.Tensor:
        """User vector ``h`` (B x d): self-attention over item + position embeddings, mean over non-pad slots."""
        mask = history > 0
        x = self.item_emb(history) + self.pos_emb(torch.arange(history.shape[1]))[None]
        pad = ~mask
        pad[:, -1] = False  # keep one key per row so an all-pad row cannot produce NaN
        a, _ = self.attn(x, x, x, key_padding_mask=pad, need_weights=False)
        m = mask.unsqueeze(-1).float()
        return (a * m).sum(1) / m.sum(1).clamp(min=1)

    def unexpectedness(self, history: torch.Tensor, cand_emb: torch.Tensor) -> torch.Tensor:
        """Mean distance (B x C) of each candidate embedding to the soft mean-shifted history embeddings."""
        mask = (history > 0).float()  # B x L
        pts = self.item_emb(history)  # B x L x d
        for _ in range(self.shift_iters):
            d2 = torch.cdist(pts, pts).pow(2)
            w = torch.exp(-d2 / (2 * self.bandwidth**2)) * mask[:, None, :]
            pts = (w @ pts) / w.sum(-1, keepdim=True).clamp(min=1e-9)
        dist = torch.cdist(cand_emb, pts)  # B x C x L
        return (dist * mask[:, None, :]).sum(-1) / mask.sum(-1, keepdim=True).clamp(min=1)

    def logits(self, history: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        """Utility ``r_ui + a_u * f(unexp_ui)``, ``f(x) = x * exp(-x)``, for every candidate (B x C)."""
        h = self.encode(history)
        e = self.item_emb(items)
        rel = (h[:, None, :] * e).sum(-1) + self.item_bias(items).squeeze(-1)
        unexp = self.unexpectedness(history, e)
        factor = torch.sigmoid(self.factor(h))  # B x 1
        return rel + factor * unexp * torch.exp(-unexp)


@register_recommender(
    "purs",
    display="PURS",
    search_space=lambda t: {
        "dim": t.suggest_categorical("dim", [16, 32, 64]),
        "lr": t.suggest_float("lr", 1e-4, 1e-2, log=True),
        "bandwidth": t.suggest_float("bandwidth", 0.3, 3.0, log=True),
        "l2": t.suggest_float("l2", 1e-8, 1e-3, log=True),
    },
    budgets={"reevaluation": {"small": {"epochs": 2}}},
)
class PURS(HistoryRecommender):
    """Sequence relevance plus unexpectedness: the distance of an item from the user's mean-shifted interest modes."""

    name = "purs"

    def __init__(self, bandwidth: float = 1.0, shift_iters: int = 3, **kwargs) -> None:
        super().__init__(**kwargs)
        self.bandwidth, self.shift_iters = bandwidth, shift_iters

    def build_model(self, n_items: int) -> PURSModel:
        """A :class:`PURSModel` with this recommender's ``dim``, ``max_len``, ``bandwidth`` and ``shift_iters``."""
        return PURSModel(n_items, self.dim, self.max_len, self.bandwidth, self.shift_iters)
