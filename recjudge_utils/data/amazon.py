"""Amazon Beauty reviews + product metadata (McAuley et al. SIGIR 2015 / He & McAuley WWW 2016; 2018: Ni et al.).

Accepted file sets in ``data_dir()/amazon-beauty/`` (first complete one wins):

* 2014 "5-core": ``reviews_Beauty_5.json.gz`` (strict JSON lines: reviewerID, asin, reviewerName, helpful,
  reviewText, overall, summary, unixReviewTime, reviewTime) + ``meta_Beauty.json.gz`` (one *Python literal* dict
  per line, single-quoted, parsed with ``ast.literal_eval``: asin, title, price, imUrl, related, salesRank,
  categories = list of category paths, brand, description; title/brand/price are often absent).
* 2018: ``All_Beauty.json.gz`` (or ``Beauty.json.gz``) + ``meta_All_Beauty.json.gz`` (strict JSON lines; metadata
  has ``category`` = one path, ``price`` as a string like "$5.99").

User (reviewerID) and item (asin) strings are mapped to contiguous ints (mappings in ``extra["user_ids"]`` /
``["item_ids"]``); review text and summaries are in ``extra["reviews"]``. An item's ``genres`` are the leaf
categories of its category paths (e.g. "Creams & Moisturizers"); the full paths are in ``categories``.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pandas as pd

from ..paths import shown_path
from ._common import (
    DataFormatError,
    Dataset,
    DatasetNotAvailableError,
    encode_ids,
    iter_json_lines,
    iter_lines,
    require_keys,
    tidy_interactions,
)
from .card import named_card
from .fetch import DatasetSpec, Download, register_dataset

FILE_SETS = (
    ("reviews_Beauty_5.json.gz", "meta_Beauty.json.gz", "2014"),
    ("All_Beauty.json.gz", "meta_All_Beauty.json.gz", "2018"),
    ("Beauty.json.gz", "meta_All_Beauty.json.gz", "2018"),
)
TERMS = (
    "Amazon review data (UCSD, J. McAuley): research use; cite He & McAuley (WWW 2016) / Ni, Li & McAuley (EMNLP 2019)."
)
_ASIN = re.compile(r"""["']asin["']\s*:\s*["']([^"']+)["']""")


def parse_meta_line(line: str) -> dict:
    """One metadata record: strict JSON first, else a Python literal (the 2014 files are ``repr``'d dicts)."""
    try:
        rec = json.loads(line)
    except ValueError:
        rec = ast.literal_eval(line)
    return rec


def _leaf_categories(rec: dict) -> tuple[list[str], list[list[str]]]:
    if "categories" in rec:  # 2014: list of paths
        paths = [list(map(str, p)) for p in rec["categories"] or [] if isinstance(p, list | tuple)]
    else:  # 2018: one path
        cat = rec.get("category") or []
        paths = [list(map(str, cat))] if cat else []
    leaves: list[str] = []
    for p in paths:
        if p and p[-1] not in leaves:
            leaves.append(p[-1])
    return leaves, paths


def _price(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        m = re.search(r"\d+(?:\.\d+)?", value.replace(",", ""))
        return float(m.group()) if m and value.strip().startswith("$") else None
    return None


def load_amazon_beauty(folder: Path, verbose: bool = True) -> Dataset:
    """Amazon Beauty reviews and product metadata from ``folder`` (the first complete file set of :data:`FILE_SETS`)."""
    folder = Path(folder)
    chosen = next(((r, m, v) for r, m, v in FILE_SETS if (folder / r).is_file() and (folder / m).is_file()), None)
    if chosen is None:
        raise DatasetNotAvailableError(
            f"amazon-beauty: none of the file sets {[(r, m) for r, m, _ in FILE_SETS]} is complete in {folder}; "
            "run `python -m recjudge_utils.data info amazon-beauty` for download instructions."
        )
    review_name, meta_name, version = chosen
    rpath, mpath = folder / review_name, folder / meta_name
    rows = []
    for lineno, rec in iter_json_lines(rpath):
        require_keys(rec, ("reviewerID", "asin", "overall", "unixReviewTime"), rpath, lineno)
        try:
            rating, ts = float(rec["overall"]), int(rec["unixReviewTime"])
        except (TypeError, ValueError) as exc:
            raise DataFormatError(f"{rpath}: line {lineno}: overall/unixReviewTime not numeric ({exc})") from exc
        rows.append((rec["reviewerID"], rec["asin"], rating, ts, rec.get("summary", ""), rec.get("reviewText", "")))
    if not rows:
        raise DataFormatError(f"{rpath}: no reviews found")
    raw = pd.DataFrame(rows, columns=["reviewer", "asin", "rating", "timestamp", "summary", "review_text"])
    user_codes, user_map = encode_ids(raw["reviewer"], "user")
    item_codes, item_map = encode_ids(raw["asin"], "item")
    interactions = tidy_interactions(
        pd.DataFrame({"user": user_codes, "item": item_codes, "rating": raw["rating"], "timestamp": raw["timestamp"]})
    )
    reviews = pd.DataFrame(
        {"user": user_codes, "item": item_codes, "summary": raw["summary"], "review_text": raw["review_text"]}
    )
    code_of = dict(zip(item_map["original_item_id"], item_map["item"], strict=True))

    meta: dict[int, dict] = {}
    for lineno, line in iter_lines(mpath):
        if not line.strip():
            continue
        m = _ASIN.search(line)
        if m is None:
            raise DataFormatError(f"{mpath}: line {lineno}: no 'asin' field found")
        if m.group(1) not in code_of:  # skip parsing products nobody reviewed (most of the 2014 file)
            continue
        try:
            rec = parse_meta_line(line)
        except (ValueError, SyntaxError) as exc:
            raise DataFormatError(f"{mpath}: line {lineno}: not a JSON object or Python dict literal ({exc})") from exc
        if not isinstance(rec, dict):
            raise DataFormatError(f"{mpath}: line {lineno}: record is not a dict")
        meta[code_of[str(rec["asin"])]] = rec
    codes = item_map["item"].to_numpy()
    recs = [meta.get(c, {}) for c in codes]
    cats = [_leaf_categories(r) for r in recs]
    items = pd.DataFrame(
        {
            "item": codes,
            "title": pd.array([r.get("title") or None for r in recs], dtype="string"),
            "genres": [c[0] for c in cats],
            "asin": item_map["original_item_id"].to_numpy(),
            "brand": pd.array([r.get("brand") or None for r in recs], dtype="string"),
            "price": pd.array([_price(r.get("price")) for r in recs], dtype="Float64"),
            "categories": [c[1] for c in cats],
        }
    )
    source = f"Amazon Beauty {version} files ({review_name}, {meta_name}) in {shown_path(folder)}. {TERMS}"
    card = named_card("amazon-beauty")
    ds = Dataset(
        name="amazon-beauty",
        interactions=interactions,
        items=items,
        users=None,
        label=str(card.label).format(version=version),
        is_real=True,
        source=source,
        domain=card.domain_words,
        extra={
            "card": card,
            "user_ids": user_map,
            "item_ids": item_map,
            "reviews": reviews,
            "items_without_metadata": len(codes) - len(meta),
        },
    )
    if verbose:
        print(
            f"Loaded {ds.label}: {len(interactions):,} reviews, {len(items):,} products "
            f"({len(codes) - len(meta)} without metadata), {len(user_map):,} users."
        )
        print(f"Source: {source}")
    return ds


register_dataset(
    DatasetSpec(
        name="amazon-beauty",
        title="Amazon Beauty (McAuley et al. 2015 / He & McAuley 2016; 2018 version: Ni et al. 2019)",
        homepage="https://cseweb.ucsd.edu/~jmcauley/datasets/amazon/links.html",
        terms="Amazon review data (UCSD): research use; cite He & McAuley WWW 2016 (2014 data) or Ni et al. 2019",
        file_sets=(
            ("reviews_Beauty_5.json.gz", "meta_Beauty.json.gz"),
            ("All_Beauty.json.gz", "meta_All_Beauty.json.gz"),
            ("Beauty.json.gz", "meta_All_Beauty.json.gz"),
        ),
        downloads=(
            Download(
                "http://snap.stanford.edu/data/amazon/productGraph/categoryFiles/reviews_Beauty_5.json.gz",
                "reviews_Beauty_5.json.gz",
            ),
            Download(
                "http://snap.stanford.edu/data/amazon/productGraph/categoryFiles/meta_Beauty.json.gz",
                "meta_Beauty.json.gz",
            ),
        ),
        notes=(
            "2018 alternative: All_Beauty.json.gz and meta_All_Beauty.json.gz from "
            "https://nijianmo.github.io/amazon/index.html (strict JSON lines)."
        ),
        loader=load_amazon_beauty,
    )
)
