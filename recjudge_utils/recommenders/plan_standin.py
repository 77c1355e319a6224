"""Plan mode without training: every recommender is a stored artifact, a cheap fit, or a stand-in.

The book runner's ``--plan`` sets ``RECJUDGE_PLAN`` (:func:`planning_without_training`). The one training path
(:func:`recjudge_utils.recommenders.training.train`) then loads what the artifact store holds and otherwise calls
:func:`fit_or_stand_in` instead of training or tuning:

* a model an earlier run stored (``runs/artifacts/``) is loaded, and its lists, hence the plan's requests, are
  exactly the run's;
* a model whose fit learns nothing (Pop, Random, co-occurrence counts) or only reads cached item embeddings
  (MiniLM models whose catalogue was encoded before) is fitted: as cheap as a stand-in, and exact;
* any other model is replaced by a :class:`StandInRecommender`: the items of its own stripe of the catalogue (each
  new model of a notebook gets the next stripe), the least popular first, seen items excluded as by any model. Lists
  have the same length as the model's would, and two stand-ins never give the same list (identical requests are
  asked once, so identical lists would undercount calls). The experiment code runs unchanged on these lists, so
  the number of users, pairs, orders and templates, hence of calls, is the run's. Only counts that depend on how
  much lists *overlap* become estimates: the re-evaluation judges each distinct (user, item) pair once, and
  stand-in lists share no item with each other and hardly any with Pop's or another fitted model's (they start
  from the catalogue's tail), so its count is about the most a run makes.

Nothing is stored in plan mode. What was done for each model is appended to the notebook's
``$RECJUDGE_PLAN/<notebook>/plan_methods.jsonl``; the runner sums it up in ``plan_method.json`` beside it.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

import numpy as np
import pandas as pd

from recjudge_utils.paths import run_mode
from recjudge_utils.recommenders.base import Recommender

__all__ = [
    "FITTED",
    "METHODS_FILE",
    "STAND_IN",
    "STORED",
    "StandInRecommender",
    "begin_plan_notebook",
    "fit_or_stand_in",
    "note_plan",
    "planning_without_training",
    "stand_in",
]

_PLAN_NOTEBOOK_ENV = "RECJUDGE_PLAN_NOTEBOOK"
METHODS_FILE = "plan_methods.jsonl"
STORED, FITTED, STAND_IN = "stored", "fitted", "stand-in"
#: registry keys whose fit is counting, not learning: fitted for real in plan mode (exact lists, no stand-in)
_NO_LEARNING = frozenset({"pop", "random", "cooccurrence", "co-occurrence"})
#: items are dealt to stand-ins in this many stripes (by item id): N stand-ins in a row never share an item
_N_STRIPES = 16
_stripes: dict[str, int] = {}


def planning_without_training() -> bool:
    """True in the book runner's plan mode (:func:`~recjudge_utils.paths.run_mode`): recommenders are loaded or
    stood in for."""
    return run_mode().planning


def note_plan(model: str | None = None, method: str | None = None, note: str | None = None) -> None:
    """Append what the plan did for one recommender (or a note on the counts) to the plan's log: the notebook's
    (``$RECJUDGE_PLAN/<notebook>/plan_methods.jsonl``, see :func:`begin_plan_notebook`), else the plan's own."""
    folder = run_mode().plan_folder
    if folder is None:
        return
    record = {k: v for k, v in {"model": model, "method": method, "note": note}.items() if v is not None}
    path = folder / os.environ.get(_PLAN_NOTEBOOK_ENV, "") / METHODS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")


def _seed(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")


class StandInRecommender(Recommender):
    """Its own stripe of items first, least popular first (seeded ties): a list built without learning."""

    name = "stand-in"
    fallback = "the stand-in's own order (as for known users)"

    def __init__(self, model: str, stripe: int = 0, n_stripes: int = _N_STRIPES, seed: int = 0) -> None:
        super().__init__(seed=seed)
        self.model = model
        self.stripe = stripe
        self.n_stripes = n_stripes
        self.order_scores: np.ndarray = np.array([])

    def _fit(self, train: pd.DataFrame, items: pd.DataFrame | None) -> None:
        n = len(self.item_ids)
        # least popular first (the tail, not the head, so that a stand-in's list and Pop's or a trained model's
        # hardly share an item), ties broken by a seeded jitter below 1 (the tail has many items of equal popularity)
        rng = np.random.default_rng(_seed(f"stand-in:{self.seed}"))
        jittered = self.popularity.astype(np.float64) + rng.uniform(0.0, 0.99, n)
        rank = np.empty(n, dtype=np.int64)
        rank[np.argsort(jittered, kind="stable")] = np.arange(n)
        # the stripe depends on the item id alone, so stripes partition the catalogue for every stand-in, whatever
        # frame it was fitted on (positives, or all ratings for KFN and UAUM)
        stripes = max(1, min(self.n_stripes, n))
        own = self.item_ids % stripes == self.stripe % stripes
        # own stripe first, then every other item: a list is always full length, and stand-ins in different
        # stripes share no item unless a user has seen nearly all of a stripe
        self.order_scores = np.where(own, 2.0 * n - rank, float(n) - rank).astype(np.float64)

    def _score_known(self, user_rows: np.ndarray) -> np.ndarray:
        return np.tile(self.order_scores, (len(user_rows), 1))

    def score(self, users: np.ndarray) -> np.ndarray:
        """The same order for every user, unseen ones included (their popularity fallback would be shared)."""
        if self.train_matrix is None:
            raise RuntimeError(f"{self.name}: call fit() before score()")
        return np.tile(self.order_scores, (len(np.asarray(users)), 1))


def begin_plan_notebook(notebook: str) -> None:
    """The runner's first cell of each planned notebook (a kernel plans several): log what is done for its
    recommenders under its name, and start the stripes afresh, so that its stand-in lists do not depend on which
    notebooks were planned before it."""
    os.environ[_PLAN_NOTEBOOK_ENV] = notebook
    _stripes.clear()


def stand_in(model: str, train: pd.DataFrame, items: pd.DataFrame | None, *, key: str, seed: int = 0) -> Recommender:
    """A fitted stand-in for ``model`` (``key``: its artifact identity; each new key gets the next stripe)."""
    stripe = _stripes.setdefault(key, len(_stripes))
    rec = StandInRecommender(model, stripe=stripe, seed=seed).fit(train, items)
    note_plan(model, STAND_IN)
    return rec


class _EncodingRefused(RuntimeError):
    """Raised by the plan's encoder: the item embeddings are not cached, and encoding is training-like work."""


def _refuse_encoding(texts: list[str]) -> np.ndarray:
    raise _EncodingRefused(f"{len(texts)} item texts are not in the embedding cache")


def fit_or_stand_in(
    name: str, model: Recommender, train: pd.DataFrame, items: pd.DataFrame | None, *, key: str, seed: int = 0
) -> Recommender:
    """Outside plan mode ``model.fit(train, items)``; in plan mode the fit when it is cheap (no learning, or item
    embeddings already cached), else a stand-in. ``name`` labels the model in the plan, ``key`` its identity."""
    if not planning_without_training():
        return model.fit(train, items)
    if name.lower() in _NO_LEARNING:
        fitted = model.fit(train, items)
        note_plan(name, FITTED)
        return fitted
    encoding: Any = model  # the MiniLM models (``encoder``, ``cache``): nothing learned but the item encoding
    if hasattr(encoding, "encoder") and hasattr(encoding, "cache"):
        given = encoding.encoder
        encoding.encoder = _refuse_encoding  # read the embedding cache only
        try:
            fitted = model.fit(train, items)
        except _EncodingRefused:
            if given is None:
                return stand_in(name, train, items, key=key, seed=seed)
            # a caller's own encoder (tests) is cheap by contract; the cache is not written in plan mode
            encoding.encoder, encoding.cache = given, False
            fitted = model.fit(train, items)
        finally:
            if encoding.encoder is _refuse_encoding:
                encoding.encoder = given
        note_plan(name, FITTED)
        return fitted
    return stand_in(name, train, items, key=key, seed=seed)
