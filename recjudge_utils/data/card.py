"""The dataset card ``recjudge.yaml``: what a folder's files cannot say about themselves.

A card is optional and every key in it is optional; a key the card leaves out is inferred by the folder reader
(:mod:`recjudge_utils.data.folder`), which says what it assumed. The full card, with every key::

    name: tiny-books                    # how tables and run folders name the dataset (default: the folder's name)
    label: Tiny books (synthetic)       # the title of every table and figure (default: "<name> (folder dataset)")
    source: Written by hand for the tests; CC0.   # provenance and terms, appended to Dataset.source
    columns:                            # which columns are the user, item, rating and time (in the interactions file)
      user: reader                      # default: user_id (RecBole atomic files) or user
      item: isbn                        # default: item_id (RecBole atomic files) or item
      rating: stars                     # default: rating; no rating column at all means implicit feedback
      time: read_on                     # default: timestamp; no time column at all means the rows' order is time
    time_unit: iso                      # s (epoch seconds) | ms (epoch milliseconds) | iso (ISO 8601 dates/times)
    ratings:
      scale: [1, 5]                     # lowest and highest possible rating (default: the lowest and highest seen)
      positive_threshold: 4             # a rating >= this is a positive (default: 3/4 up the scale, rounded up)
      implicit: false                   # true: every interaction is a positive (no threshold)
    items:                              # the catalogue (items file); the item id column is columns.item
      title: title                      # default: a column named title, or ending in title (RecBole: movie_title)
      genres: shelves                   # categories/genres (default: genres, genre, class, categories or category)
      lists: [shelves]                  # columns holding lists (default: the genres column)
      list_separator: "|"               # separator of a list column in CSV/TSV (RecBole token_seq: a space)
      describe: [title, author, shelves, year]   # what the judge is told about an item, in this order
      max_chars: 200                    # cap on that text (longer text is cut and ends with "…")
    users:
      profile: [age, country]           # user columns that form a profile (users file; default: none)
    domain:                             # the words every prompt uses (default: neutral words, never a movie word)
      item: book                        # singular item noun
      items: books                      # plural item noun
      consumed: read                    # the verb for consuming one: watched, read, bought, listened to
      platform: book                    # the kind of platform: movie, book, online shop (default: the item noun)

Column names are the names in the files; for RecBole atomic files the field name without its type
(``isbn`` for a header ``isbn:token``), as RecBole's own ``USER_ID_FIELD`` etc. name them.

:func:`read_card` reads and validates a card; an unknown key, a wrong type or a bad value is a
:class:`~recjudge_utils.data._common.DataFormatError` naming the file, the line and the key (with the closest valid
key for a misspelling).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..registry import suggestion
from ._common import DataFormatError
from .domain import NEUTRAL_DOMAIN, DomainWords

__all__ = [
    "CARD_FILE",
    "NEUTRAL_DOMAIN",
    "CardColumns",
    "CardItems",
    "CardRatings",
    "CardUsers",
    "DatasetCard",
    "DomainWords",
    "card_line",
    "named_card",
    "read_card",
]

CARD_FILE = "recjudge.yaml"
#: the cards of the datasets the package knows by name (``<name>.yaml``), shipped with it
NAMED_CARDS = Path(__file__).parent / "cards"
TimeUnit = Literal["s", "ms", "iso"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CardColumns(_Strict):
    """Which interaction columns are the user, item, rating and time (names as in the files)."""

    user: str | None = Field(None, description="user id column (default: user_id for RecBole files, else user)")
    item: str | None = Field(None, description="item id column (default: item_id for RecBole files, else item)")
    rating: str | None = Field(None, description="rating column (default: rating; absent: implicit feedback)")
    time: str | None = Field(None, description="time column (default: timestamp; absent: row order is time)")


class CardRatings(_Strict):
    """The rating scale and what counts as a positive."""

    scale: tuple[float, float] | None = Field(None, description="lowest and highest possible rating")
    positive_threshold: float | None = Field(None, description="a rating >= this is a positive")
    implicit: bool = Field(False, description="every interaction is a positive (no threshold)")

    @model_validator(mode="after")
    def _consistent(self) -> CardRatings:
        if self.scale is not None:
            low, high = self.scale
            if not (math.isfinite(low) and math.isfinite(high)) or low >= high:
                raise ValueError(f"scale must be [lowest, highest] with lowest < highest, got {list(self.scale)}")
        if self.implicit and self.positive_threshold is not None:
            raise ValueError("implicit: true means every interaction is a positive: leave out positive_threshold")
        if self.positive_threshold is not None and self.scale is not None:
            low, high = self.scale
            if not low <= self.positive_threshold <= high:
                raise ValueError(
                    f"positive_threshold {self.positive_threshold:g} lies outside scale {list(self.scale)}"
                )
        return self


class CardItems(_Strict):
    """The catalogue's columns: title, genres, list columns and what the judge is told about an item."""

    title: str | None = Field(None, description="title column")
    genres: str | None = Field(None, description="genres/categories column (a list column)")
    lists: list[str] | None = Field(None, description="columns holding lists (default: the genres column)")
    list_separator: str = Field("|", min_length=1, description="separator of list columns in CSV/TSV files")
    describe: list[str] | None = Field(None, description="item columns the judge sees, in order")
    max_chars: int = Field(200, ge=20, description="cap on the item text the judge sees")


class CardUsers(_Strict):
    """User columns that form a profile."""

    profile: list[str] = Field(default_factory=list, description="user columns the judge sees, in order")


class DatasetCard(_Strict):
    """A folder dataset's card (``recjudge.yaml``); see the module docstring for every key."""

    name: str | None = Field(None, description="dataset name (default: the folder's name)")
    label: str | None = Field(None, description="title of tables and figures")
    source: str | None = Field(None, description="provenance and terms")
    columns: CardColumns = Field(default_factory=CardColumns)
    time_unit: TimeUnit | None = Field(None, description="s | ms | iso (default: inferred from the values)")
    ratings: CardRatings = Field(default_factory=CardRatings)
    items: CardItems = Field(default_factory=CardItems)
    users: CardUsers = Field(default_factory=CardUsers)
    domain: DomainWords | None = Field(None, description="the prompts' words (default: neutral words)")

    @property
    def domain_words(self) -> DomainWords:
        """The card's domain words, or the neutral ones ("item", "items", "interacted with")."""
        return self.domain if self.domain is not None else NEUTRAL_DOMAIN


_SECTIONS: dict[tuple[str, ...], type[BaseModel]] = {
    (): DatasetCard,
    ("columns",): CardColumns,
    ("ratings",): CardRatings,
    ("items",): CardItems,
    ("users",): CardUsers,
    ("domain",): DomainWords,
}


def card_line(node: yaml.Node | None, loc: Sequence[str | int]) -> int | None:
    """1-based line of the key (or list entry) at ``loc`` in a composed YAML document, or the deepest found."""
    line = None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if getattr(k, "value", None) == part), None)
            if match is None:
                break
            line, node = match[0].start_mark.line + 1, match[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _where(path: Path, node: yaml.Node | None, loc: Sequence[str | int]) -> str:
    line = card_line(node, loc)
    return f"{path}: line {line}" if line is not None else f"{path}"


def _message(path: Path, node: yaml.Node | None, error: Mapping[str, Any]) -> str:
    loc = [p for p in error["loc"] if isinstance(p, str | int)]
    key = ".".join(str(p) for p in loc) or "(top level)"
    if error["type"] == "extra_forbidden":
        parent = tuple(p for p in loc[:-1] if isinstance(p, str))
        model = _SECTIONS.get(parent)
        known = list(model.model_fields) if model is not None else []
        hint = suggestion(str(loc[-1]), known)
        return (
            f"{_where(path, node, loc)}: unknown key {key!r}{hint}; the keys here are "
            f"{', '.join(known) if known else '(none)'}"
        )
    if error["type"] == "missing":
        return f"{_where(path, node, loc[:-1])}: {key} is required ({error['msg']})"
    msg = str(error["msg"]).removeprefix("Value error, ")
    return f"{_where(path, node, loc)}: {key}: {msg} (got {error.get('input')!r})"


def read_card(path: Path) -> tuple[DatasetCard, yaml.Node | None]:
    """The card at ``path`` and its composed YAML (for line numbers); a bad card is a :class:`DataFormatError`."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataFormatError(f"{path}: not valid UTF-8 ({exc.reason})") from exc
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "somewhere"
        raise DataFormatError(f"{path}: {where}: not valid YAML ({getattr(exc, 'problem', exc)})") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise DataFormatError(f"{path}: line 1: a card is a mapping of keys (name, columns, ...), got {data!r}")
    try:
        card = DatasetCard.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        lines = [_message(path, node, e) for e in errors]
        raise DataFormatError("\n".join(lines)) from None
    return card, node


@functools.cache
def named_card(name: str) -> DatasetCard:
    """The shipped card of a dataset the package knows by name (``data/cards/<name>.yaml``): its label (with
    ``{option}`` fields its loader fills in), which item columns the judge sees and its domain words. The loaders
    of the original file layouts take these from here, as a folder dataset takes them from its ``recjudge.yaml``."""
    path = NAMED_CARDS / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in NAMED_CARDS.glob("*.yaml"))
        raise KeyError(f"no shipped card for dataset {name!r}{suggestion(name, known)}; cards: {', '.join(known)}")
    return read_card(path)[0]
