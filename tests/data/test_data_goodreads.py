"""Goodreads (UCSD Book Graph) loader on gzip JSON-lines fixtures; truncated gzip and bad records."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from locations import FIXTURES

from recjudge_utils.data import DataFormatError, dataset_statistics, load_dataset
from recjudge_utils.data.goodreads import load_goodreads

FIX = FIXTURES / "data"
INTER = "goodreads_interactions_poetry.json.gz"


def copy(tmp_path: Path) -> Path:
    shutil.copytree(FIX / "goodreads", tmp_path / "goodreads")
    return tmp_path / "goodreads"


def test_loader_maps_ids_and_parses_dates() -> None:
    ds = load_goodreads(FIX / "goodreads", verbose=False)
    raw = [json.loads(x) for x in gzip.decompress((FIX / "goodreads" / INTER).read_bytes()).decode().splitlines()]
    assert len(ds.interactions) == len(raw) == 6
    umap = ds.extra["user_ids"].set_index("user")["original_user_id"]
    imap = ds.extra["item_ids"].set_index("item")["original_item_id"]
    got = {
        (umap[u], imap[i], r, t)
        for u, i, r, t in ds.interactions[["user", "item", "rating", "timestamp"]].itertuples(index=False)
    }
    # "Sun Jul 30 07:44:10 -0700 2017" is 14:44:10 UTC = 1501425850
    expected_ts = {
        "Sun Jul 30 07:44:10 -0700 2017": 1501425850,
        "Tue Oct 17 17:44:13 -0700 2017": 1508287453,
        "Mon Feb 08 19:57:26 -0800 2016": 1454990246,
    }
    assert got == {(r["user_id"], r["book_id"], float(r["rating"]), expected_ts[r["date_added"]]) for r in raw}
    items = ds.items.set_index("book_id")
    assert items.loc["1384", "title"] == "The Iliad/The Odyssey"
    assert items.loc["1384", "genres"] == ["poetry", "fiction", "history, historical fiction, biography"]
    assert items.loc["6066812", "genres"] == []
    assert ds.users is None and ds.is_real
    st = dataset_statistics(ds)
    assert st.loc[0, "categories"] == 3


def test_rated_only_drops_zero_ratings() -> None:
    ds = load_goodreads(FIX / "goodreads", rated_only=True, verbose=False)
    assert (ds.interactions["rating"] > 0).all() and len(ds.interactions) < 6


def test_load_dataset_routes_genre(tmp_path: Path) -> None:
    copy(tmp_path)
    assert load_dataset("goodreads", data_dir=tmp_path, fetch=False, verbose=False, genre="poetry").name == "goodreads"


def test_truncated_gzip(tmp_path: Path) -> None:
    folder = copy(tmp_path)
    p = folder / INTER
    p.write_bytes(p.read_bytes()[:-20])
    with pytest.raises(DataFormatError, match=r"goodreads_interactions_poetry\.json\.gz: truncated or corrupt gzip"):
        load_goodreads(folder, verbose=False)


def test_not_gzip_at_all(tmp_path: Path) -> None:
    folder = copy(tmp_path)
    p = folder / INTER
    p.write_bytes(gzip.decompress(p.read_bytes()))  # plain text under a .gz name
    with pytest.raises(DataFormatError, match="truncated or corrupt gzip"):
        load_goodreads(folder, verbose=False)


def _rewrite(p: Path, edit: callable) -> None:
    lines = gzip.decompress(p.read_bytes()).decode().splitlines()
    p.write_bytes(gzip.compress(("\n".join(edit(lines)) + "\n").encode()))


def test_bad_json_line_is_named(tmp_path: Path) -> None:
    folder = copy(tmp_path)
    _rewrite(folder / INTER, lambda ls: [*ls[:2], ls[2][:-5], *ls[3:]])
    with pytest.raises(DataFormatError, match=r"json\.gz: line 3 is not a valid record"):
        load_goodreads(folder, verbose=False)


def test_missing_field_is_named(tmp_path: Path) -> None:
    folder = copy(tmp_path)

    def drop_date(ls: list[str]) -> list[str]:
        rec = json.loads(ls[1])
        del rec["date_added"]
        return [ls[0], json.dumps(rec), *ls[2:]]

    _rewrite(folder / INTER, drop_date)
    with pytest.raises(DataFormatError, match=r"line 2 lacks field\(s\) \['date_added'\]"):
        load_goodreads(folder, verbose=False)


def test_bad_date_is_named(tmp_path: Path) -> None:
    folder = copy(tmp_path)

    def bad_date(ls: list[str]) -> list[str]:
        rec = json.loads(ls[3])
        rec["date_added"] = "2017-07-30"
        return [*ls[:3], json.dumps(rec), *ls[4:]]

    _rewrite(folder / INTER, bad_date)
    with pytest.raises(DataFormatError, match=r"line 4: date_added '2017-07-30'"):
        load_goodreads(folder, verbose=False)
