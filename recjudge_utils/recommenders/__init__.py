"""Recommenders for the notebooks, behind one registry.

``make_recommender(name, **params)`` builds any of them by name; ``RECOMMENDERS`` lists the
re-evaluation set. Accuracy-oriented: ``bprmf``, ``sasrec``; serendipity-oriented: ``kfn``, ``uaum``,
``desr``, ``purs``; sanity baselines: ``pop``, ``random``. The RecSys Arena models (``fm``, ``deepfm``,
``lightgcn``, ``minilm-content``) and the SAER ones (``cooccurrence``, ``embedding``) are registered
as well. The torch models are imported lazily so that importing the registry stays cheap.
"""

from __future__ import annotations

import importlib

from .base import Recommender

_REGISTRY: dict[str, tuple[str, str]] = {
    "pop": ("pop", "Pop"),
    "random": ("random_rs", "RandomRS"),
    "bprmf": ("bprmf", "BPRMF"),
    "sasrec": ("sasrec", "SASRec"),
    "kfn": ("kfn", "KFN"),
    "uaum": ("uaum", "UAUM"),
    "desr": ("desr", "DESR"),
    "purs": ("purs", "PURS"),
}
# The re-evaluation notebook's set; the arena and SAER models below are registered too, but they need
# side information (user demographics, item text) that the toy contract tests do not have.
RECOMMENDERS: tuple[str, ...] = tuple(_REGISTRY)
_REGISTRY.update(
    {
        "fm": ("fm", "FM"),
        "deepfm": ("deepfm", "DeepFM"),
        "lightgcn": ("lightgcn", "LightGCN"),
        "minilm-content": ("content", "ContentMiniLM"),
        "cooccurrence": ("cooccurrence", "CooccurrenceRecommender"),
        "embedding": ("embedding", "EmbeddingRecommender"),
    }
)
DISPLAY_NAMES: dict[str, str] = {
    "pop": "Pop",
    "random": "Random",
    "bprmf": "BPRMF",
    "sasrec": "SASRec",
    "kfn": "KFN",
    "uaum": "UAUM",
    "desr": "DESR",
    "purs": "PURS",
    "fm": "FM",
    "deepfm": "DeepFM",
    "lightgcn": "LightGCN",
    "minilm-content": "MiniLM-content",
    "cooccurrence": "Co-occurrence",
    "embedding": "Embedding (MiniLM)",
}


def recommender_class(name: str) -> type[Recommender]:
    key = name.lower()
    if key not in _REGISTRY:
        raise KeyError(f"unknown recommender {name!r}; known: {', '.join(RECOMMENDERS)}")
    module, cls = _REGISTRY[key]
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)


def make_recommender(name: str, **params) -> Recommender:
    """Instantiate the recommender registered as ``name`` with keyword hyperparameters (and ``seed``)."""
    return recommender_class(name)(**params)


__all__ = ["DISPLAY_NAMES", "RECOMMENDERS", "Recommender", "make_recommender", "recommender_class"]
