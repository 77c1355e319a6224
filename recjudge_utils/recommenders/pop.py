"""Most-popular baseline: every user gets the items with the most training interactions."""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import register_recommender
from .base import Recommender


@register_recommender("pop", display="Pop", search_space=lambda t: {})  # empty: re-evaluated, nothing to tune
class Pop(Recommender):
    """Score = number of training users who interacted with the item (ties: lower item id first)."""

    name = "pop"

    def _fit(self, train: pd.DataFrame, items: pd.DataFrame | None) -> None:
        pass

    def _score_known(self, user_rows: np.ndarray) -> np.ndarray:
        return np.tile(self.popularity.astype(np.float64), (len(user_rows), 1))
