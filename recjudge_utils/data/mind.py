"""MIND (Microsoft News Dataset; Wu et al. ACL 2020).

Files per split folder (``data_dir()/mind/train/``, ``.../dev/``), tab-separated, no header, no quoting:

* ``behaviors.tsv``: impression_id, user_id ("U13740"), time ("11/11/2019 9:05:58 AM", read as UTC), history
  (space-separated news ids clicked before, may be empty), impressions ("N55689-1 N35729-0": news id - clicked;
  the test split has no "-label").
* ``news.tsv``: news_id, category, subcategory, title, abstract, url, title_entities, abstract_entities (the last
  two are JSON lists written without CSV quoting).

``Dataset.interactions``: one row per (user, news) the user clicked (impression label 1, timestamp = the
impression's time, ``source="click"``) or had in a history (``source="history"``; MIND gives no time for those, so
they get the user's first impression time minus 1 s). ``rating`` is 1.0 (implicit feedback). Duplicates keep the
earliest. ``extra["behaviors"]``: the impressions as published (impression_id, user, timestamp, history,
impressions, labels; ids as ints) for AUC-style evaluation. News/user id strings -> ints in ``extra["item_ids"]``
/ ``["user_ids"]``. ``genres`` = [category]; ``subcategory`` and ``abstract`` are extra item columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from ..paths import shown_path
from ._common import DataFormatError, Dataset, read_delimited, require_file, tidy_interactions, unix_seconds
from .card import named_card
from .fetch import DatasetSpec, register_dataset

_TIME_FORMAT = "%m/%d/%Y %I:%M:%S %p"
TERMS = "MIND: Microsoft Research License Terms, non-commercial research use; cite Wu et al. (ACL 2020)."
_NEWS_COLUMNS = [
    "news_id",
    "category",
    "subcategory",
    "title",
    "abstract",
    "url",
    "title_entities",
    "abstract_entities",
]
_BEHAVIOR_COLUMNS = ["impression_id", "user_id", "time", "history", "impressions"]


def load_mind(folder: Path, split: str = "train", verbose: bool = True) -> Dataset:
    """MIND small's ``split`` (``folder/<split>/behaviors.tsv`` and ``news.tsv``) as clicks on news items."""
    folder = Path(folder) / split
    npath = require_file(folder / "news.tsv", "mind")
    news = read_delimited(npath, "\t", _NEWS_COLUMNS, required=["news_id", "category", "subcategory", "title"])
    bpath = require_file(folder / "behaviors.tsv", "mind")
    beh = read_delimited(
        bpath,
        "\t",
        _BEHAVIOR_COLUMNS,
        numeric={"impression_id": "int"},
        required=["impression_id", "user_id", "time", "impressions"],
    )
    when = pd.to_datetime(beh["time"], format=_TIME_FORMAT, errors="coerce")
    if when.isna().any():
        row = int(np.flatnonzero(when.isna().to_numpy())[0])
        raise DataFormatError(
            f"{bpath}: line {row + 1}: time {beh['time'].iloc[row]!r} is not like '11/15/2019 8:55:22 AM'"
        )
    ts = unix_seconds(when)

    news_ids: dict[str, int] = {nid: k for k, nid in enumerate(news["news_id"].astype(str))}
    if len(news_ids) != len(news):
        dup = news["news_id"][news["news_id"].duplicated()].iloc[0]
        raise DataFormatError(f"{npath}: news id {dup!r} appears more than once")

    def code(nid: str) -> int:
        if nid not in news_ids:
            news_ids[nid] = len(news_ids)  # clicked/history news missing from news.tsv still get an id
        return news_ids[nid]

    user_ids: dict[str, int] = {}
    hist_col, imp_col, lab_col, users = [], [], [], []
    for row, (uid, hist, imps) in enumerate(zip(beh["user_id"], beh["history"], beh["impressions"], strict=True)):
        users.append(user_ids.setdefault(str(uid), len(user_ids)))
        hist_col.append([code(n) for n in str(hist).split()] if isinstance(hist, str) else [])
        ids, labels = [], []
        for tok in str(imps).split():
            nid, sep, lab = tok.rpartition("-")
            if not sep:
                nid, lab = tok, ""
            if not nid or lab not in ("", "0", "1"):
                raise DataFormatError(f"{bpath}: line {row + 1}: impression {tok!r} is not like 'N12345-1'")
            ids.append(code(nid))
            labels.append(int(lab) if lab else -1)
        imp_col.append(ids)
        lab_col.append(labels if all(x >= 0 for x in labels) else None)
    behaviors = pd.DataFrame(
        {
            "impression_id": beh["impression_id"].astype("int64"),
            "user": np.asarray(users, dtype="int64"),
            "timestamp": ts,
            "history": hist_col,
            "impressions": imp_col,
            "labels": lab_col,
        }
    )
    first_seen = behaviors.groupby("user")["timestamp"].min()
    hist_rows = (
        behaviors[["user", "history"]].explode("history").dropna().drop_duplicates().rename(columns={"history": "item"})
    )
    hist_rows = hist_rows.assign(
        item=hist_rows["item"].astype("int64"),
        timestamp=first_seen.reindex(hist_rows["user"]).to_numpy() - 1,
        source="history",
    )
    clicks = behaviors[["user", "timestamp", "impressions", "labels"]].dropna(subset=["labels"])
    click_rows = clicks.explode(["impressions", "labels"])
    click_rows = click_rows[click_rows["labels"] == 1]
    click_rows = pd.DataFrame(
        {
            "user": click_rows["user"],
            "item": click_rows["impressions"].astype("int64"),
            "timestamp": click_rows["timestamp"],
            "source": "click",
        }
    )
    both = pd.concat([hist_rows, click_rows], ignore_index=True).sort_values(
        ["user", "item", "timestamp"], kind="stable"
    )
    both = both.drop_duplicates(["user", "item"], keep="first").assign(rating=1.0)
    interactions = tidy_interactions(both[["user", "item", "rating", "timestamp", "source"]])

    inv = sorted(news_ids.items(), key=lambda kv: kv[1])
    meta = news.set_index(news["news_id"].astype(str))
    items = pd.DataFrame({"item": [c for _, c in inv], "news_id": [n for n, _ in inv]})
    known = items["news_id"].isin(meta.index)
    items["title"] = pd.array(
        [meta.at[n, "title"] if k else None for n, k in zip(items["news_id"], known, strict=True)], dtype="string"
    )
    items["genres"] = [[meta.at[n, "category"]] if k else [] for n, k in zip(items["news_id"], known, strict=True)]
    items["subcategory"] = pd.array(
        [meta.at[n, "subcategory"] if k else None for n, k in zip(items["news_id"], known, strict=True)], dtype="string"
    )
    items["abstract"] = pd.array(
        [meta.at[n, "abstract"] if k else None for n, k in zip(items["news_id"], known, strict=True)], dtype="string"
    )
    items = items[["item", "title", "genres", "news_id", "subcategory", "abstract"]]
    user_map = pd.DataFrame({"user": list(user_ids.values()), "original_user_id": list(user_ids.keys())})
    item_map = items[["item", "news_id"]].rename(columns={"news_id": "original_item_id"})
    source = f"MIND {split} split (behaviors.tsv, news.tsv) in {shown_path(folder)}. {TERMS}"
    card = named_card("mind")
    ds = Dataset(
        name="mind",
        interactions=interactions,
        items=items,
        users=None,
        label=str(card.label).format(split=split),
        is_real=True,
        source=source,
        domain=card.domain_words,
        extra={
            "card": card,
            "behaviors": behaviors,
            "user_ids": user_map,
            "item_ids": item_map,
            "news_missing_metadata": int((~known).sum()),
        },
    )
    if verbose:
        print(
            f"Loaded {ds.label}: {len(behaviors):,} impressions, {len(interactions):,} user-news interactions, "
            f"{len(items):,} news, {len(user_ids):,} users."
        )
        print(f"Source: {source}")
    return ds


def _split_present(folder: Path, options: Mapping[str, object]) -> bool:
    """Whether the ``split`` option names another split (e.g. ``dev``) whose behaviours file is in ``folder``."""
    return "split" in options and (folder / str(options["split"]) / "behaviors.tsv").is_file()


register_dataset(
    DatasetSpec(
        name="mind",
        title="MIND small (Microsoft News Dataset; Wu et al. ACL 2020)",
        homepage="https://msnews.github.io/",
        terms="Microsoft Research License Terms for MIND: non-commercial research use; cite Wu et al. 2020",
        file_sets=(("train/behaviors.tsv", "train/news.tsv"),),
        downloads=(),
        notes=(
            "Download MINDsmall_train.zip (and MINDsmall_dev.zip) after accepting the licence at "
            "https://msnews.github.io/ and unzip them into mind/train/ and mind/dev/ (behaviors.tsv, news.tsv)."
        ),
        loader=load_mind,
        other_files=_split_present,
    )
)
