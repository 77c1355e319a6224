"""SAER (Liu et al., SIGIR '26): the customer context the judge reads (Section 3.1) and the numbered list.

**Customer context and honest substitutes.** The paper compiles six months of purchase history
(titles, brands, categories, ratings) plus recent searches, recent clicks and browsed categories.
Public data has no searches or clicks, so each missing field is either replaced by the closest
substitute the data *does* have, named as such, or shown as "not available" (``SUBSTITUTIONS``):

=====================  ================================================  =============================================
SAER field             Amazon Beauty (``ecommerce``)                      MovieLens stand-in (``movies``)
=====================  ================================================  =============================================
purchase history       reviewed products, 3-5 stars, 180-day window      movies rated 3-5 stars, 180-day window
recent searches        not available (no search logs published)          not available (no search logs)
recent clicks          products reviewed 1-2 stars ("bought, disliked")   movies rated 1-2 stars ("watched, disliked")
browsed categories     categories of the 5 latest reviews                 genres of the 5 latest ratings
=====================  ================================================  =============================================

The prompt set follows the dataset's words (:func:`saer_variant`): movie words take the MovieLens stand-in's
``movies`` set, any other words SAER's ``ecommerce`` set, whose files and this context speak the dataset's words
(products keep the paper's text word for word; a book or news dataset reads "Books read and liked", never a movie
word).

The window ends at the customer's last interaction. With ``max_history=None`` the judge sees every item of
the window, as the paper compiles the whole six months; a number keeps only the newest ``max_history`` items of
each list (liked, disliked), a cut for a small model's context that the paper does not make. The browsed
categories are every category of the 5 latest interactions, most frequent first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from recjudge_utils.data.domain import NEUTRAL_DOMAIN, DomainWords

__all__ = [
    "DOMAINS",
    "SUBSTITUTIONS",
    "Catalogue",
    "CustomerContext",
    "build_context",
    "is_product_domain",
    "purchases",
    "render_list",
    "saer_variant",
    "substitutions",
]

DOMAINS = ("ecommerce", "movies")
#: the lowest rating that counts as a purchase (the table above); lower ones stand in for clicks
_PURCHASE_MIN_RATING = 3.0

SUBSTITUTIONS: dict[str, dict[str, str]] = {
    "ecommerce": {
        "purchase history (6 months)": "products the customer reviewed with 3-5 stars in the 180 days before "
        "their last review (a review is the closest public proxy for a purchase)",
        "recent searches": "not available: Amazon's public review data has no search logs",
        "recent clicks": "stand-in: products the customer reviewed with 1-2 stars in the window (bought but disliked)",
        "browsed categories": "stand-in: categories of the customer's 5 most recent reviews",
    },
    "movies": {
        "purchase history (6 months)": "stand-in: movies the customer rated 3-5 stars in the 180 days before "
        "their last rating (ratings used as purchases)",
        "recent searches": "not available: MovieLens has no search logs",
        "recent clicks": "stand-in: movies the customer rated 1-2 stars in the window (viewed but disliked)",
        "browsed categories": "stand-in: genres of the customer's 5 most recent ratings",
    },
}


def purchases(interactions: pd.DataFrame) -> pd.DataFrame:
    """The rows that stand in for purchases: rated at least :data:`PURCHASE_MIN_RATING` (every row of a frame
    without ratings, a purchase log)."""
    if "rating" not in interactions.columns:
        return interactions
    return interactions.loc[interactions["rating"] >= _PURCHASE_MIN_RATING]


#: the item nouns that take the movie prompt set (a card may call its movies films)
_MOVIE_NOUNS = frozenset({"movie", "film"})


def saer_variant(words: DomainWords) -> str:
    """The prompt set for a dataset's words: ``movies`` (the MovieLens stand-in's) for movie words, else
    ``ecommerce`` (SAER's own), which its files fill with the words."""
    return "movies" if words.item.strip().lower() in _MOVIE_NOUNS else "ecommerce"


def is_product_domain(words: DomainWords) -> bool:
    """Whether the words are SAER's own domain, products: the e-commerce files then keep the paper's text and its
    Beauty & Personal Care examples (the files test ``domain.item == "product"`` the same way)."""
    return words.item == "product"


def substitutions(words: DomainWords) -> dict[str, str]:
    """SAER's context fields and what a dataset with these words shows instead (:data:`SUBSTITUTIONS` for the two
    papers' domains; the words' own table for any other)."""
    variant = saer_variant(words)
    if variant == "movies" or is_product_domain(words):
        return SUBSTITUTIONS[variant]
    return {
        "purchase history (6 months)": f"stand-in: {words.items} the customer rated 3-5 stars in the 180 days before "
        "their last rating (ratings used as purchases)",
        "recent searches": "not available: the dataset has no search logs",
        "recent clicks": f"stand-in: {words.items} the customer rated 1-2 stars in the window "
        f"({words.consumed} but disliked)",
        "browsed categories": "stand-in: categories of the customer's 5 most recent ratings",
    }


def _as_list(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, float) and np.isnan(value):
        return []
    if isinstance(value, Sequence | np.ndarray):
        return [str(v) for v in value if v is not None and str(v).strip()]
    return [str(value)]


def _clip(text: str, n: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


@dataclass(frozen=True)
class Catalogue:
    """Item id -> short display text (title, brand, categories) used in prompts; ``lines``: the card's line of each
    item (:func:`recjudge_utils.data.folder.judge_item_texts`), shown instead when given."""

    titles: dict[int, str]
    categories: dict[int, list[str]]
    brands: dict[int, str]
    lines: Mapping[int, str] | None = None

    @classmethod
    def from_items(cls, items: pd.DataFrame, max_title: int = 70, texts: Mapping[int, str] | None = None) -> Catalogue:
        """Titles (missing titles become "untitled product <asin>"), brands, and ``genres`` as categories
        (movie genres; for Amazon the loader's leaf categories); ``texts``: the card's item lines (None: SAER's
        own ``Title | Brand | Categories``)."""
        frame = items.drop_duplicates("item")
        ids = [int(i) for i in frame["item"]]
        fallback = frame["asin"].astype(str).tolist() if "asin" in frame.columns else [str(i) for i in ids]
        years = frame["year"].tolist() if "year" in frame.columns else [None] * len(ids)
        titles = {}
        for i, t, fb, y in zip(ids, frame["title"].tolist(), fallback, years, strict=True):
            ok = isinstance(t, str) and t.strip()
            title = _clip(t, max_title) if ok else f"untitled product {fb}"
            if ok and y is not None and not pd.isna(y) and not re.search(r"\(\d{4}\)\s*$", title):
                title = f"{title} ({int(y)})"  # RecBole's ML-100K titles lack the year the original files carry
            titles[i] = title
        cats = {}
        if "genres" in frame.columns:
            cats = {i: _as_list(c) for i, c in zip(ids, frame["genres"].tolist(), strict=True)}
        brands = {}
        if "brand" in frame.columns:
            brands = {
                i: _clip(b, 30)
                for i, b in zip(ids, frame["brand"].tolist(), strict=True)
                if isinstance(b, str) and b.strip()
            }
        return cls(titles=titles, categories=cats, brands=brands, lines=texts)

    def title(self, item: int) -> str:
        """The item's title (``item N`` when the catalogue has none)."""
        return self.titles.get(int(item), f"item {int(item)}")

    def line(self, item: int, max_categories: int = 3) -> str:
        """ "Title | Brand | Cat1, Cat2" (brand and categories where the catalogue has them), or the card's line."""
        if self.lines is not None and int(item) in self.lines:
            return self.lines[int(item)]
        parts = [self.title(item)]
        if int(item) in self.brands:
            parts.append(self.brands[int(item)])
        cats = self.categories.get(int(item), [])
        if cats:
            parts.append(", ".join(cats[-max_categories:]))
        return " | ".join(parts)


@dataclass(frozen=True)
class CustomerContext:
    """What the judge sees about one customer (see the module docstring for the substitutes)."""

    user: int
    domain: str  # the prompt set, ``movies`` or ``ecommerce`` (:func:`saer_variant`)
    window_start: int
    window_end: int
    history: tuple[tuple[int, float, int], ...]  # (item, rating, timestamp) liked, newest first
    disliked: tuple[tuple[int, float, int], ...]  # rated 1-2 stars in the window, newest first
    recent_categories: tuple[str, ...]
    n_liked: int  # liked items in the window, before any cut to max_history
    n_disliked: int  # disliked items in the window, before any cut to max_history
    words: DomainWords = NEUTRAL_DOMAIN  # the dataset's words, which the prompt files and the headers below use

    def _headings(self) -> tuple[str, str, str]:
        """(liked, disliked, browsed) headings: each paper's own for its domain, else the dataset's words."""
        if self.domain == "movies":
            return "Movies watched and liked (rated 3-5 stars)", "Watched but disliked (rated 1-2 stars)", "genres"
        if is_product_domain(self.words):
            return "Purchase history (reviewed 3-5 stars)", "Bought but disliked (reviewed 1-2 stars)", "categories"
        w = self.words
        liked = f"{w.items.capitalize()} {w.consumed} and liked (rated 3-5 stars)"
        return liked, f"{w.consumed.capitalize()} but disliked (rated 1-2 stars)", "categories"

    def render(self, catalogue: Catalogue, history_only: bool = False) -> str:
        """Prompt text; ``history_only`` keeps just the purchase history (the generic v1 prompt)."""
        what, dis, what_cat = self._headings()
        lines = [f"{what}, last 6 months, newest first:"]
        for item, rating, ts in self.history:
            lines.append(f"- {_date(ts)} | {catalogue.line(item)} | {rating:g} stars")
        if not self.history:
            lines.append("- (none)")
        if history_only:
            return "\n".join(lines)
        lines.append(f"{dis}: " + ("; ".join(catalogue.title(i) for i, _, _ in self.disliked) or "none"))
        lines.append("Recent searches: not available in this data")
        lines.append(
            f"Recently browsed {what_cat} (from the 5 latest): " + (", ".join(self.recent_categories) or "none")
        )
        return "\n".join(lines)


def _date(ts: int) -> str:
    return datetime.fromtimestamp(int(ts), tz=UTC).strftime("%Y-%m-%d")


def build_context(
    interactions: pd.DataFrame,
    catalogue: Catalogue,
    user: int,
    words: DomainWords,
    window_days: int = 180,
    max_history: int | None = None,
    like_threshold: float = _PURCHASE_MIN_RATING,
    n_recent_categories: int = 5,
) -> CustomerContext:
    """The customer's context over the ``window_days`` before their last interaction: every liked and disliked
    item of the window, or the newest ``max_history`` of each, in the prompt set and words of ``words``."""
    if max_history is not None and max_history < 1:
        raise ValueError("max_history must be positive, or None for the whole window")
    rows = interactions.loc[interactions["user"] == user]
    if rows.empty:
        raise ValueError(f"customer {user} has no interactions")
    end = int(rows["timestamp"].max())
    start = end - window_days * 86400
    rows = rows.loc[rows["timestamp"] >= start]
    rows = rows.assign(_pos=np.arange(len(rows))).sort_values(["timestamp", "_pos"], ascending=False, kind="stable")
    triples = [
        (int(i), float(r), int(t)) for i, r, t in zip(rows["item"], rows["rating"], rows["timestamp"], strict=True)
    ]
    liked = [x for x in triples if x[1] >= like_threshold]
    disliked = [x for x in triples if x[1] < like_threshold]
    cats: list[str] = []
    counts: dict[str, int] = {}
    for item, _, _ in triples[:n_recent_categories]:
        for c in catalogue.categories.get(item, []):
            if c not in counts:
                cats.append(c)
            counts[c] = counts.get(c, 0) + 1
    cats.sort(key=lambda c: -counts[c])
    return CustomerContext(
        user=int(user),
        domain=saer_variant(words),
        window_start=start,
        window_end=end,
        history=tuple(liked[:max_history]),
        disliked=tuple(disliked[:max_history]),
        recent_categories=tuple(cats),
        n_liked=len(liked),
        n_disliked=len(disliked),
        words=words,
    )


def render_list(items: Sequence[int], catalogue: Catalogue) -> str:
    """Numbered recommendation list, 1-based (the numbers FLAGGED ITEMS refers to)."""
    return "\n".join(f"{k}. {catalogue.line(i)}" for k, i in enumerate(items, start=1))
