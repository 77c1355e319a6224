"""Random baseline: a fixed random ranking per user, reproducible from (seed, user id)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import register_recommender
from .base import Recommender


@register_recommender("random", display="Random", search_space=lambda t: {})  # empty: re-evaluated, nothing to tune
class RandomRS(Recommender):
    """Uniformly random scores; the same user always gets the same list for the same seed.

    Unseen users are scored like known ones (random), not by the popularity fallback, because a
    random recommender has no reason to prefer popular items for anyone.
    """

    name = "random"
    fallback = "random scores (same as known users)"

    def _fit(self, train: pd.DataFrame, items: pd.DataFrame | None) -> None:
        pass

    def _user_scores(self, user_id: int) -> np.ndarray:
        rng = np.random.default_rng([self.seed, int(user_id) & 0x7FFFFFFF])
        return rng.random(len(self.item_ids))

    def _score_known(self, user_rows: np.ndarray) -> np.ndarray:
        return (
            np.stack([self._user_scores(self.user_ids[r]) for r in user_rows])
            if len(user_rows)
            else np.zeros((0, len(self.item_ids)))
        )

    def score(self, users: np.ndarray) -> np.ndarray:
        """Random scores for every item, seeded per user id, so unseen users get random scores too (no fallback)."""
        if self.train_matrix is None:
            raise RuntimeError(f"{self.name}: call fit() before score()")
        users = np.asarray(users)
        if len(users) == 0:
            return np.zeros((0, len(self.item_ids)))
        return np.stack([self._user_scores(u) for u in users])
