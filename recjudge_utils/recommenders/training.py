"""Building and fitting a registered recommender with its data: the one place models are trained.

``fit_recommender`` hands each model the training data it is defined on (every explicit rating for models with
``uses_explicit_ratings``, else the positives), the user attributes to models with ``needs_users``, and the
item metadata to all; torch runs on one thread (see :func:`recjudge_utils.recommenders._torch.torch_threads`).
``train_or_load`` does the same through the artifact store, so a second run (another judge) trains nothing; in plan
mode it only loads, and a model that is not stored becomes a stand-in (:mod:`recjudge_utils.recommenders.plan_standin`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from recjudge_utils.recommenders import make_recommender, recommender_class
from recjudge_utils.recommenders._torch import torch_threads
from recjudge_utils.recommenders.artifacts import ArtifactStore, code_hash, dataset_fingerprint, frame_fingerprint
from recjudge_utils.recommenders.base import Recommender
from recjudge_utils.recommenders.plan_standin import fit_or_stand_in

__all__ = ["build_recommender", "fit_recommender", "train_or_load", "training_frame"]


def build_recommender(name: str, seed: int, params: dict[str, Any], users: pd.DataFrame | None = None) -> Recommender:
    """``make_recommender(name)`` with ``params``, plus the users frame for models that learn from attributes."""
    extra = {"users": users} if recommender_class(name).needs_users else {}
    return make_recommender(name, seed=seed, **params, **extra)


def training_frame(name: str, positives: pd.DataFrame, ratings: pd.DataFrame | None) -> pd.DataFrame:
    """What ``name`` is trained on: all ``ratings`` when it uses explicit ratings (and they are given)."""
    if recommender_class(name).uses_explicit_ratings and ratings is not None:
        return ratings
    return positives


def fit_recommender(
    name: str,
    positives: pd.DataFrame,
    items: pd.DataFrame | None,
    *,
    seed: int = 0,
    params: dict[str, Any] | None = None,
    users: pd.DataFrame | None = None,
    ratings: pd.DataFrame | None = None,
) -> Recommender:
    """Build and fit one recommender on the data it is defined on."""
    model = build_recommender(name, seed, dict(params or {}), users)
    with torch_threads(1):
        return model.fit(training_frame(name, positives, ratings), items)


def train_or_load(
    name: str,
    positives: pd.DataFrame,
    items: pd.DataFrame | None,
    *,
    split: Mapping[str, Any],
    seed: int = 0,
    params: dict[str, Any] | None = None,
    users: pd.DataFrame | None = None,
    ratings: pd.DataFrame | None = None,
    store: ArtifactStore | None = None,
) -> tuple[Recommender, bool]:
    """:func:`fit_recommender`, or the model an earlier run stored for exactly this data, split, code, parameters
    and seed (``runs/artifacts/``); returns (model, loaded). In plan mode a model not stored is a cheap fit or a
    stand-in, never trained nor stored."""
    store = store or ArtifactStore()
    data = training_frame(name, positives, ratings)
    fields = {
        "recommender": name,
        "code": code_hash(name),
        "train": dataset_fingerprint(data),
        "items": None if items is None else frame_fingerprint(items),
        "users": None if users is None or not recommender_class(name).needs_users else frame_fingerprint(users),
        "split": dict(split),
        "params": dict(params or {}),
        "seed": seed,
    }
    return store.get_or_compute(
        "models",
        fields,
        lambda: fit_recommender(name, positives, items, seed=seed, params=params, users=users, ratings=ratings),
        stand_in=lambda: fit_or_stand_in(
            name,
            build_recommender(name, seed, dict(params or {}), users),
            data,
            items,
            key=store.key(fields),
            seed=seed,
        ),
    )
