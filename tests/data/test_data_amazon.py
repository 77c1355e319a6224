"""Amazon Beauty loader: 2014 (strict JSON reviews + python-literal metadata) and 2018 (strict JSON) formats."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pandas as pd
import pytest
from locations import FIXTURES

from recjudge_utils.data import DataFormatError, DatasetNotAvailableError, dataset_statistics, load_dataset
from recjudge_utils.data.amazon import load_amazon_beauty, parse_meta_line

FIX = FIXTURES / "data"


def test_2014_files() -> None:
    ds = load_amazon_beauty(FIX / "amazon-beauty", verbose=False)
    assert "2014" in ds.label and len(ds.interactions) == 8
    items = ds.items.set_index("asin")
    assert items.loc["7806397051", "title"].startswith("Bio-Active Anti-Aging Serum")
    assert items.loc["7806397051", "genres"] == ["Creams & Moisturizers", "Face"]
    assert items.loc["7806397051", "price"] == 12.99 and items.loc["7806397051", "brand"] == "Bio-Active"
    assert pd.isna(items.loc["B00004TMFE", "title"]) and items.loc["B00004TMFE", "brand"] == "OPI"
    assert items.loc["9759091062", "categories"] == [["Beauty", "Hair Care", "Styling Products"]]
    umap = ds.extra["user_ids"]
    assert set(umap["original_user_id"]) == {"A1YJEY40YUW4SE", "A60XNB876KYML", "A3G6XNM240RMWA"}
    reviews = ds.extra["reviews"]
    assert len(reviews) == 8 and reviews["summary"].iloc[0] == "Don't waste your money"
    first = ds.interactions.iloc[0]
    assert (first["rating"], first["timestamp"]) == (1.0, 1391040000)
    assert dataset_statistics(ds).loc[0, "categories"] == 4


def test_meta_lines_are_python_literals_not_json() -> None:
    line = gzip.decompress((FIX / "amazon-beauty" / "meta_Beauty.json.gz").read_bytes()).decode().splitlines()[0]
    assert line.startswith("{'asin': ")
    assert parse_meta_line(line)["description"] == "Women's serum — it's \"firming\"."


def test_2018_files(tmp_path: Path) -> None:
    shutil.copytree(FIX / "amazon-beauty-2018", tmp_path / "amazon-beauty")
    ds = load_dataset("amazon-beauty", data_dir=tmp_path, fetch=False, verbose=False)
    assert "2018" in ds.label and len(ds.interactions) == 3
    items = ds.items.set_index("asin")
    assert items.loc["B0000530HU", "price"] == 5.99 and items.loc["B0000530HU", "genres"] == []
    assert items.loc["B00006L9LC", "genres"] == ["Skin Care"] and pd.isna(items.loc["B00006L9LC", "price"])


def test_no_complete_file_set(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    shutil.copy(FIX / "amazon-beauty" / "reviews_Beauty_5.json.gz", tmp_path / "x")
    with pytest.raises(DatasetNotAvailableError, match="meta_Beauty"):
        load_amazon_beauty(tmp_path / "x", verbose=False)


def test_truncated_metadata_gzip(tmp_path: Path) -> None:
    folder = tmp_path / "a"
    shutil.copytree(FIX / "amazon-beauty", folder)
    p = folder / "meta_Beauty.json.gz"
    p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2])
    with pytest.raises(DataFormatError, match=r"meta_Beauty\.json\.gz: truncated or corrupt gzip"):
        load_amazon_beauty(folder, verbose=False)


def test_review_missing_rating(tmp_path: Path) -> None:
    folder = tmp_path / "a"
    shutil.copytree(FIX / "amazon-beauty", folder)
    p = folder / "reviews_Beauty_5.json.gz"
    lines = gzip.decompress(p.read_bytes()).decode().splitlines()
    lines[4] = lines[4].replace('"overall"', '"stars"')
    p.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    with pytest.raises(DataFormatError, match=r"reviews_Beauty_5\.json\.gz: line 5 lacks field\(s\) \['overall'\]"):
        load_amazon_beauty(folder, verbose=False)


def test_garbled_metadata_line(tmp_path: Path) -> None:
    folder = tmp_path / "a"
    shutil.copytree(FIX / "amazon-beauty", folder)
    p = folder / "meta_Beauty.json.gz"
    lines = gzip.decompress(p.read_bytes()).decode().splitlines()
    lines[1] = lines[1][:-10]
    p.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    with pytest.raises(DataFormatError, match=r"meta_Beauty\.json\.gz: line 2: not a JSON object or Python dict"):
        load_amazon_beauty(folder, verbose=False)
