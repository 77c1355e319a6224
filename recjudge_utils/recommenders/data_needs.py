"""What a recommender needs from a dataset, and which recommenders a dataset can train.

A dataset read from a folder may lack what a model is defined on: explicit ratings (implicit feedback: every
interaction is a positive, so KFN's anti-neighbours and UAUM's rated matrix have nothing to learn from) or item text
(a catalogue without titles or described columns: the content model would embed item ids). Such a recommender is
left out of a chapter with one printed line saying why (:func:`keep_usable`), before anything is trained or judged,
never a traceback. A recommender declares what it needs with :attr:`Recommender.needs_data` (and
``uses_explicit_ratings``); what a dataset offers comes from its card (``Dataset.extra["card"]``).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Protocol, TypeVar

from recjudge_utils.data import Dataset

from . import DISPLAY_NAMES, recommender_class

__all__ = ["EXPLICIT_RATINGS", "ITEM_TEXT", "keep_usable", "lacking", "offered", "usable_recommenders"]

#: the needs a recommender can declare
EXPLICIT_RATINGS = "explicit ratings"
ITEM_TEXT = "item text"


class _WithRecommenders(Protocol):
    @property
    def recommenders(self) -> tuple[str, ...]: ...  # a frozen dataclass's field is read-only


C = TypeVar("C", bound=_WithRecommenders)


def offered(dataset: Dataset) -> dict[str, str | None]:
    """Each need -> None when ``dataset`` offers it, else why it does not (in words)."""
    card: Any = dataset.extra.get("card")
    ratings = None if not math.isinf(dataset.positive_threshold) else "its interactions are implicit feedback"
    describe = None if card is None else card.items.describe
    text = None if describe is None or len(describe) else "its catalogue gives the judge no item columns to describe"
    return {EXPLICIT_RATINGS: ratings, ITEM_TEXT: text}


def lacking(name: str, dataset: Dataset) -> str | None:
    """Why ``dataset`` cannot train the recommender ``name`` (None: it can)."""
    cls = recommender_class(name)
    needs = [*cls.needs_data, *([EXPLICIT_RATINGS] if cls.uses_explicit_ratings else [])]
    has = offered(dataset)
    missing = [f"{need} ({has[need]})" for need in needs if has.get(need)]
    return "; ".join(missing) or None


def usable_recommenders(names: tuple[str, ...], dataset: Dataset) -> tuple[tuple[str, ...], list[str]]:
    """The ``names`` ``dataset`` can train, and one line per recommender left out saying why."""
    kept, said = [], []
    for name in names:
        why = lacking(name, dataset)
        if why is None:
            kept.append(name)
        else:
            said.append(f"{DISPLAY_NAMES.get(name, name)} is left out: it needs {why} ({dataset.label}).")
    return tuple(kept), said


def keep_usable(config: C, dataset: Dataset, **changes: Any) -> C:
    """``config`` with the recommenders ``dataset`` cannot train left out, each saying why in one printed line."""
    kept, said = usable_recommenders(tuple(config.recommenders), dataset)
    for line in said:
        print(line)
    if not said:
        return config
    return replace(config, recommenders=kept, **changes)  # type: ignore[type-var]
