"""Goodreads (UCSD Book Graph; Wan & McAuley RecSys 2018, Wan et al. ACL 2019).

Files (gzip JSON lines, one object per line, as published): ``goodreads_interactions_<genre>.json.gz``
(user_id, book_id, review_id, is_read, rating 0-5 with 0 = shelved without a rating, date_added like
"Sun Jul 30 07:44:10 -0700 2017", ...), ``goodreads_books_<genre>.json.gz`` (book_id, title, authors,
publication_year, ... all values strings) and ``goodreads_book_genres_initial.json.gz`` (book_id, genres: a dict
of fuzzy genre name -> count, e.g. {"poetry": 120, "fiction": 40}).

User ids (hex strings) and book ids (digit strings) are mapped to contiguous ints in order of first appearance;
the mappings are kept in ``Dataset.extra["user_ids"]`` / ``["item_ids"]``. ``rating`` keeps Goodreads' 0 for
"no rating" unless ``rated_only=True`` drops those rows. ``timestamp`` is ``date_added`` in unix seconds.
An item's ``genres`` are the genre names with a positive count, most frequent first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from ..paths import shown_path
from ._common import (
    DataFormatError,
    Dataset,
    encode_ids,
    iter_json_lines,
    iter_lines,
    require_file,
    require_keys,
    tidy_interactions,
    unix_seconds,
)
from .card import named_card
from .fetch import DatasetSpec, Download, register_dataset

_DATE_FORMAT = "%a %b %d %H:%M:%S %z %Y"
TERMS = "UCSD Book Graph: academic use only; cite Wan & McAuley (RecSys 2018) and Wan et al. (ACL 2019)."


_BOOK_ID = re.compile(r'"book_id":\s*"([^"]*)"')


def _records_for(path: Path, wanted: dict[str, int]) -> Iterator[tuple[int, dict]]:
    """JSON records of the books in ``wanted``; other lines are skipped before parsing (the genre file has 2.4M)."""
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        m = _BOOK_ID.search(line)
        if m is not None and m.group(1) not in wanted:
            continue
        try:
            rec = json.loads(line)
        except ValueError as exc:
            raise DataFormatError(f"{path}: line {lineno} is not a valid record ({type(exc).__name__}: {exc})") from exc
        if not isinstance(rec, dict):
            raise DataFormatError(f"{path}: line {lineno} is not an object/dict record")
        yield lineno, rec


def load_goodreads(folder: Path, genre: str = "poetry", rated_only: bool = False, verbose: bool = True) -> Dataset:
    """One Goodreads genre subset from ``folder``; ``rated_only`` drops shelvings without a rating (rating 0)."""
    folder = Path(folder)
    ipath = require_file(folder / f"goodreads_interactions_{genre}.json.gz", "goodreads")
    users, books, ratings, dates, lines = [], [], [], [], []
    for lineno, rec in iter_json_lines(ipath):
        require_keys(rec, ("user_id", "book_id", "rating", "date_added"), ipath, lineno)
        r = rec["rating"]
        if isinstance(r, bool) or not isinstance(r, int | float) or not 0 <= r <= 5:
            raise DataFormatError(f"{ipath}: line {lineno}: rating must be a number 0..5, got {r!r}")
        if rated_only and r == 0:
            continue
        users.append(str(rec["user_id"]))
        books.append(str(rec["book_id"]))
        ratings.append(float(r))
        dates.append(rec["date_added"])
        lines.append(lineno)
    when = pd.to_datetime(pd.Series(dates, dtype="object"), format=_DATE_FORMAT, errors="coerce", utc=True)
    if when.isna().any():
        pos = int(np.flatnonzero(when.isna().to_numpy())[0])
        raise DataFormatError(
            f"{ipath}: line {lines[pos]}: date_added {dates[pos]!r} is not like 'Sun Jul 30 07:44:10 -0700 2017'"
        )
    user_codes, user_map = encode_ids(pd.Series(users, dtype="object"), "user")
    item_codes, item_map = encode_ids(pd.Series(books, dtype="object"), "item")
    ts = unix_seconds(when)
    interactions = tidy_interactions(
        pd.DataFrame({"user": user_codes, "item": item_codes, "rating": ratings, "timestamp": ts})
    )
    code_of_book = dict(zip(item_map["original_item_id"], item_map["item"], strict=True))

    bpath = require_file(folder / f"goodreads_books_{genre}.json.gz", "goodreads")
    titles: dict[int, str] = {}
    years: dict[int, str] = {}
    for lineno, rec in _records_for(bpath, code_of_book):
        require_keys(rec, ("book_id", "title"), bpath, lineno)
        code = code_of_book.get(str(rec["book_id"]))
        if code is not None:
            titles[code] = str(rec["title"])
            years[code] = str(rec.get("publication_year", ""))

    gpath = require_file(folder / "goodreads_book_genres_initial.json.gz", "goodreads")
    genres: dict[int, list[str]] = {}
    for lineno, rec in _records_for(gpath, code_of_book):
        require_keys(rec, ("book_id", "genres"), gpath, lineno)
        code = code_of_book.get(str(rec["book_id"]))
        if code is None:
            continue
        if not isinstance(rec["genres"], dict):
            raise DataFormatError(f"{gpath}: line {lineno}: genres must be an object of name -> count")
        counts = {str(k): v for k, v in rec["genres"].items() if isinstance(v, int | float) and v > 0}
        genres[code] = sorted(counts, key=lambda k: (-counts[k], k))

    codes = item_map["item"].to_numpy()
    items = pd.DataFrame(
        {
            "item": codes,
            "title": pd.array([titles.get(c) for c in codes], dtype="string"),
            "genres": [genres.get(c, []) for c in codes],
            "book_id": item_map["original_item_id"].to_numpy(),
            "year": pd.to_numeric(pd.Series([years.get(c, "") for c in codes]), errors="coerce").astype("Int64"),
        }
    )
    missing_titles = int(items["title"].isna().sum())
    source = (
        f"UCSD Book Graph Goodreads '{genre}' subset (goodreads_interactions_{genre}.json.gz, "
        f"goodreads_books_{genre}.json.gz, goodreads_book_genres_initial.json.gz) in {shown_path(folder)}. {TERMS}"
    )
    card = named_card("goodreads")
    ds = Dataset(
        name="goodreads",
        interactions=interactions,
        items=items,
        users=None,
        label=str(card.label).format(genre=genre),
        is_real=True,
        source=source,
        extra={"card": card, "user_ids": user_map, "item_ids": item_map, "books_without_metadata": missing_titles},
        domain=card.domain_words,
    )
    if verbose:
        print(
            f"Loaded {ds.label}: {len(interactions):,} interactions, {len(items):,} books "
            f"({missing_titles} without a books-file record), {len(user_map):,} users."
        )
        print(f"Source: {source}")
    return ds


def _genre_present(folder: Path, options: Mapping[str, object]) -> bool:
    """Whether the ``genre`` option names another genre whose interactions file is in ``folder``."""
    return "genre" in options and (folder / f"goodreads_interactions_{options['genre']}.json.gz").is_file()


register_dataset(
    DatasetSpec(
        name="goodreads",
        title="Goodreads (UCSD Book Graph; Wan & McAuley 2018, Wan et al. 2019)",
        homepage="https://mengtingwan.github.io/data/goodreads.html",
        terms="UCSD Book Graph: academic use only; cite Wan & McAuley RecSys 2018 and Wan et al. ACL 2019",
        file_sets=(
            (
                "goodreads_interactions_poetry.json.gz",
                "goodreads_books_poetry.json.gz",
                "goodreads_book_genres_initial.json.gz",
            ),
        ),
        downloads=(
            Download(
                "https://datarepo.eng.ucsd.edu/mcauley_group/gdrive/goodreads/byGenre/goodreads_interactions_poetry.json.gz",
                "goodreads_interactions_poetry.json.gz",
            ),
            Download(
                "https://datarepo.eng.ucsd.edu/mcauley_group/gdrive/goodreads/byGenre/goodreads_books_poetry.json.gz",
                "goodreads_books_poetry.json.gz",
            ),
            Download(
                "https://datarepo.eng.ucsd.edu/mcauley_group/gdrive/goodreads/goodreads_book_genres_initial.json.gz",
                "goodreads_book_genres_initial.json.gz",
            ),
        ),
        notes=(
            "The paper does not say which genre subset it used; we default to 'poetry'. Other genres: put "
            "goodreads_interactions_<genre>.json.gz and goodreads_books_<genre>.json.gz in the same folder and "
            "pass genre=... to load_dataset."
        ),
        loader=load_goodreads,
        other_files=_genre_present,
    )
)
