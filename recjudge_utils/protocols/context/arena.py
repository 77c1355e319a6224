"""The user RecSys Arena's judge role-plays (paper: recsys-arena, Section 2.3, Figure 2).

The role-play profile uses age, gender and occupation when the data has them, otherwise the history alone;
the history is the user's *most recent* ``n_history`` training items by timestamp (titles and genres, oldest
first). :class:`ArenaContext` builds everything once from the training data.

The authors' code (``anonyProjects/RecSys-Arena``, ``prompt_template_gpt.py``) shows 5 history items, the first
five of the user's training positives (``label == 1``) in its processed file's order, introduced as "You have
recently watched", and a profile sentence with the user id, age bracket, occupation and gender. ``--scale paper``
shows 5 items (:mod:`recjudge_utils.book.scales`); that file's order is not published, so the book takes the most
recent ones, and it leaves out the user id, which says nothing about tastes. "Watched" and "movies" are the
dataset's words (``words``: ``Dataset.domain``), so a book dataset's user "read" books.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from recjudge_utils.data.domain import NEUTRAL_DOMAIN, DomainWords

__all__ = ["ML1M_AGE_BUCKETS", "ArenaContext", "describe_profile"]

ML1M_AGE_BUCKETS = {
    1: "under 18 years old",
    18: "18-24 years old",
    25: "25-34 years old",
    35: "35-44 years old",
    45: "45-49 years old",
    50: "50-55 years old",
    56: "56 years old or older",
}


_GENDERS = {"m": "male", "f": "female", "male": "male", "female": "female"}


def _genres_text(genres: Any) -> str:
    if genres is None or (isinstance(genres, float) and np.isnan(genres)):
        return ""
    if isinstance(genres, str):
        return genres
    return ", ".join(str(g) for g in list(genres))


def _present(value: Any) -> bool:
    """False for None / NaN / pd.NA / blank strings."""
    if value is None:
        return False
    if np.ndim(value) == 0 and pd.isna(value):
        return False
    return not (isinstance(value, str) and not value.strip())


def describe_profile(row: Mapping[str, Any] | None, dataset: str = "") -> str:
    """Role-play sentence from age / gender / occupation (only the fields that are present)."""
    parts: list[str] = []
    if row is not None:
        age = row.get("age")
        if _present(age):
            assert age is not None  # _present() is False for None
            age_i = int(age)
            if dataset.lower() in {"ml-1m", "movielens-1m"} and age_i in ML1M_AGE_BUCKETS:
                parts.append(f"you are {ML1M_AGE_BUCKETS[age_i]}")
            else:
                parts.append(f"you are {age_i} years old")
        occupation = row.get("occupation")
        if _present(occupation):
            parts.append(f"your occupation is {str(occupation).strip()}")
        gender = row.get("gender")
        if _present(gender):
            g = _GENDERS.get(str(gender).strip().lower(), str(gender).strip())
            parts.append(f"you are {g}")
    if not parts:
        return "No personal information is known about you: infer your tastes only from the history below."
    return "About you: " + ", ".join(parts) + "."


class ArenaContext:
    """Everything the prompts need about users and items, built once from the training data.

    ``texts``: item id -> the line the judge reads of it, from the dataset's card
    (:func:`recjudge_utils.data.folder.judge_item_texts`); None: the paper's ``Title (Year), genres: A, B``.
    """

    def __init__(
        self,
        items: pd.DataFrame,
        train: pd.DataFrame,
        users: pd.DataFrame | None = None,
        n_history: int = 10,
        dataset: str = "ml-100k",
        words: DomainWords = NEUTRAL_DOMAIN,
        texts: Mapping[int, str] | None = None,
    ) -> None:
        if n_history <= 0:
            raise ValueError("n_history must be positive")
        self.dataset = dataset
        self.words = words
        self.n_history = n_history
        self._texts = texts
        years = items["year"] if "year" in items.columns else pd.Series([None] * len(items), index=items.index)
        self._items = {}
        for item, title, genres, year in zip(items["item"], items["title"], items["genres"], years, strict=True):
            title = str(title)
            if _present(year) and not re.search(r"\(\d{4}\)\s*$", title):
                title = f"{title} ({int(year)})"
            self._items[int(item)] = (title, _genres_text(genres))
        ordered = train.sort_values(["user", "timestamp", "item"], kind="mergesort")
        recent = ordered.groupby("user", sort=False).tail(n_history)
        self._history = {int(u): [int(i) for i in g] for u, g in recent.groupby("user", sort=False)["item"]}
        self._users: dict[int, dict[str, Any]] = {}
        if users is not None and len(users):
            cols = [c for c in ("age", "gender", "occupation") if c in users.columns]
            for rec in users[["user", *cols]].to_dict("records"):
                self._users[int(rec.pop("user"))] = rec

    def history(self, user: int) -> list[int]:
        """The user's ``n_history`` most recent training items by timestamp, oldest first."""
        return list(self._history.get(int(user), []))

    def profile(self, user: int) -> str:
        """The user's profile as the prompt shows it."""
        return describe_profile(self._users.get(int(user)), self.dataset)

    def describe(self, item: int) -> str:
        """An item as the prompt shows it: the card's line when given (``texts``), else title and genres."""
        if self._texts is not None and int(item) in self._texts:
            return self._texts[int(item)]
        title, genres = self._items.get(int(item), (f"item {int(item)}", ""))
        return f"{title}, genres: {genres}" if genres else title

    def numbered(self, items: Sequence[int]) -> str:
        """Items as a numbered list, or '(none)'."""
        if len(items) == 0:
            return "(none)"
        return "\n".join(f"{i}. {self.describe(it)}" for i, it in enumerate(items, start=1))
