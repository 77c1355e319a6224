"""How the serendipity judge is shown an item and a user's history (paper: serendipity-llm-judge, Sec. 3).

An item is ``Title (Year) (categories: A, B)`` (a folder dataset's judge reads its card's line instead, given as
:class:`~recjudge_utils.protocols.pointwise_score.SerendipityJudge`'s ``texts``); a history is the user's last ``n``
items, numbered, oldest first. :func:`item_texts` builds the text of every item of a catalogue once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

__all__ = ["as_item_list", "format_item", "history_lines", "item_texts", "lookup"]


def _genres_text(genres: Any) -> str:
    if genres is None or (isinstance(genres, float) and math.isnan(genres)):
        return "unknown"
    if isinstance(genres, str):
        return genres.strip() or "unknown"
    parts = [str(g).strip() for g in genres if str(g).strip()]
    return ", ".join(parts) if parts else "unknown"


def format_item(title: Any, genres: Any) -> str:
    """How one item is shown to the judge: ``Title (categories: A, B)``."""
    return f"{str(title).strip()} (categories: {_genres_text(genres)})"


def _with_year(title: Any, year: Any) -> Any:
    """``Title (1995)`` when the items frame has a separate year the title does not already show."""
    try:
        y = int(year)
    except (TypeError, ValueError):
        return title
    if y <= 0 or str(title).rstrip().endswith(f"({y})"):
        return title
    return f"{str(title).strip()} ({y})"


def item_texts(items: pd.DataFrame) -> dict[int, str]:
    """Item id -> prompt text, for every row of an items frame (columns item, title, genres, optional year)."""
    missing = {"item", "title", "genres"} - set(items.columns)
    if missing:
        raise ValueError(f"items frame lacks columns {sorted(missing)}")
    titles = items["title"].to_numpy()
    if "year" in items.columns:
        titles = [_with_year(t, y) for t, y in zip(titles, items["year"].to_numpy(), strict=True)]
    return {
        int(i): format_item(t, g)
        for i, t, g in zip(items["item"].to_numpy(), titles, items["genres"].to_numpy(), strict=True)
    }


def lookup(texts: Mapping[int, str], item: Any) -> str:
    """The text of one item; an unknown item is a KeyError naming it."""
    try:
        return texts[int(item)]
    except KeyError:
        raise KeyError(f"item {item!r} is not in the items frame") from None


def as_item_list(history: Any) -> list[Any]:
    """A history cell as a list (NaN or None = empty)."""
    if history is None or (isinstance(history, float) and math.isnan(history)):
        return []
    return list(history)


def history_lines(history_text: Sequence[str], n_history: int) -> tuple[int, str]:
    """(number shown, numbered lines) of the last ``n_history`` items of a history, oldest first."""
    hist = list(history_text)[-n_history:]
    lines = "\n".join(f"{k}. {t}" for k, t in enumerate(hist, start=1)) if hist else "(no history)"
    return len(hist), lines
