"""MIND loader: behaviors.tsv / news.tsv (tab, no header, unquoted JSON), clicks + history, impressions frame."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from locations import FIXTURES

from recjudge_utils.data import DataFormatError, load_dataset
from recjudge_utils.data.mind import load_mind

FIX = FIXTURES / "data"


def test_loader_on_fixture() -> None:
    ds = load_mind(FIX / "mind", verbose=False)
    news = ds.extra["item_ids"].set_index("original_item_id")["item"]
    users = ds.extra["user_ids"].set_index("original_user_id")["user"]
    beh = ds.extra["behaviors"]
    assert len(beh) == 4 and beh["impression_id"].tolist() == [1, 2, 3, 4]
    first = beh.iloc[0]
    assert first["impressions"] == [news["N55689"], news["N35729"]] and first["labels"] == [1, 0]
    assert first["history"] == [news[n] for n in ["N55189", "N42782", "N34694", "N45794"]]
    assert first["timestamp"] == 1573463158  # 11/11/2019 9:05:58 AM read as UTC
    assert beh.iloc[1]["timestamp"] == 1573582290  # 6:11:30 PM -> 18:11:30
    assert beh.iloc[3]["history"] == []
    inter = ds.interactions
    u1 = inter[inter["user"] == users["U13740"]]
    # history (4 news, deduplicated over two impressions) + clicks N55689 and N20678
    assert sorted(u1["item"]) == sorted(news[n] for n in ["N55189", "N42782", "N34694", "N45794", "N55689", "N20678"])
    clicks = u1[u1["source"] == "click"].set_index("item")["timestamp"]
    assert clicks[news["N55689"]] == 1573463158
    assert (u1.loc[u1["source"] == "history", "timestamp"] == 1573463157).all()
    assert (inter["rating"] == 1.0).all()
    items = ds.items.set_index("news_id")
    assert items.loc["N55189", "title"] == 'Title 0: "quoted" words, commas'
    assert items.loc["N55189", "genres"] == ["tv"] and items.loc["N55189", "subcategory"] == "tvsub"
    assert items.loc["N42782", "abstract"] == ""


def test_test_split_without_labels(tmp_path: Path) -> None:
    shutil.copytree(FIX / "mind" / "train", tmp_path / "mind" / "test")
    p = tmp_path / "mind" / "test" / "behaviors.tsv"
    p.write_text(p.read_text().replace("-1", "").replace("-0", ""))
    ds = load_dataset("mind", data_dir=tmp_path, fetch=False, verbose=False, split="test")
    assert ds.extra["behaviors"]["labels"].isna().all()
    assert set(ds.interactions["source"]) == {"history"}


def test_bad_time(tmp_path: Path) -> None:
    shutil.copytree(FIX / "mind", tmp_path / "mind")
    p = tmp_path / "mind" / "train" / "behaviors.tsv"
    p.write_text(p.read_text().replace("11/12/2019 6:11:30 PM", "2019-11-12 18:11:30"))
    with pytest.raises(DataFormatError, match=r"behaviors\.tsv: line 2: time '2019-11-12 18:11:30'"):
        load_mind(tmp_path / "mind", verbose=False)


def test_bad_impression_token(tmp_path: Path) -> None:
    shutil.copytree(FIX / "mind", tmp_path / "mind")
    p = tmp_path / "mind" / "train" / "behaviors.tsv"
    p.write_text(p.read_text().replace("N20678-1", "N20678-yes"))
    with pytest.raises(DataFormatError, match=r"behaviors\.tsv: line 3: impression 'N20678-yes'"):
        load_mind(tmp_path / "mind", verbose=False)


def test_comma_separated_news_is_rejected(tmp_path: Path) -> None:
    shutil.copytree(FIX / "mind", tmp_path / "mind")
    p = tmp_path / "mind" / "train" / "news.tsv"
    p.write_text(p.read_text().replace("\t", ","))
    with pytest.raises(DataFormatError, match=r"news\.tsv: line 1 has \d+ field"):
        load_mind(tmp_path / "mind", verbose=False)


def test_missing_column_in_behaviors(tmp_path: Path) -> None:
    shutil.copytree(FIX / "mind", tmp_path / "mind")
    p = tmp_path / "mind" / "train" / "behaviors.tsv"
    lines = p.read_text().splitlines(keepends=True)
    lines = [line.rsplit("\t", 1)[0] + "\n" for line in lines]  # impressions column dropped everywhere
    p.write_text("".join(lines))
    with pytest.raises(DataFormatError, match=r"behaviors\.tsv: line 1 has 4 field\(s\) but this format has 5"):
        load_mind(tmp_path / "mind", verbose=False)
