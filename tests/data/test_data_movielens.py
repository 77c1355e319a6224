"""MovieLens loaders on fixtures in the published formats, plus malformed-file errors, load_dataset routing, and the
loads from the data folder (a synthetic ML-100K there, the real one too where the data command has extracted it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SYNTHETIC_ML100K
from locations import FIXTURES

from recjudge_utils.data import (
    DataFormatError,
    DatasetNotAvailableError,
    dataset_statistics,
    load_dataset,
    load_serendipity_pairs,
)
from recjudge_utils.data.movielens import ML100K_GENRES, load_ml1m, load_ml100k
from recjudge_utils.data.standins import PROXY_LABEL, level_targets
from recjudge_utils.paths import data_dir, project_root, shown_path

FIX = FIXTURES / "data"


def copy_fixture(name: str, tmp_path: Path, as_name: str | None = None) -> Path:
    target = tmp_path / (as_name or name)
    shutil.copytree(FIX / name, target)
    return target


def test_ml100k_original_files() -> None:
    ds = load_ml100k(FIX / "ml-100k", verbose=False)
    assert list(ds.interactions.columns[:4]) == ["user", "item", "rating", "timestamp"]
    assert str(ds.interactions["user"].dtype) == "int64" and str(ds.interactions["timestamp"].dtype) == "int64"
    assert str(ds.interactions["rating"].dtype) == "float64"
    assert len(ds.interactions) == 20 and ds.interactions["user"].nunique() == 3
    items = ds.items.set_index("item")
    assert items.loc[6, "title"] == "Misérables, Les (1995)"  # latin-1 decoded
    assert items.loc[1, "genres"] == ["Animation", "Children's", "Comedy"]
    assert items.loc[12, "genres"] == ["unknown"] and pd.isna(items.loc[12, "year"])
    assert items.loc[10, "year"] == 1996
    users = ds.users.set_index("user")
    assert users.loc[3, "zip_code"] == "05201"  # leading zero kept
    assert users.loc[2, "gender"] == "F" and users.loc[2, "age"] == 53
    assert ds.is_real and "Harper" in ds.source and "u.data" in ds.source


def test_a_datasets_provenance_never_prints_the_machines_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The loader's provenance (printed by every chapter that loads data, and kept in ``Dataset.source``) names the
    folder relative to the repository, the data folder's variable or the home folder: chapter outputs are read on
    other machines, and the book is shared."""
    repo = project_root()
    assert repo is not None  # the tests run from a checkout
    ds = load_ml100k(FIX / "ml-100k-recbole")
    printed = capsys.readouterr().out
    assert "into tests/fixtures/data/ml-100k-recbole. " in ds.source and f"Source: {ds.source}" in printed
    assert str(repo) not in ds.source + printed
    monkeypatch.setenv("RECJUDGE_DATA_DIR", str(tmp_path / "data"))
    moved = copy_fixture("ml-100k", tmp_path / "data")
    assert "files (u.data, u.item, u.user) in $RECJUDGE_DATA_DIR/ml-100k. " in load_ml100k(moved, verbose=False).source
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RECJUDGE_DATA_DIR")
    assert shown_path(tmp_path / "home" / ".cache" / "recjudge" / "data") == "~/.cache/recjudge/data"
    assert shown_path(tmp_path / "elsewhere" / "ml-1m") == ".../ml-1m"
    assert shown_path(repo / "data" / "ml-100k") == "data/ml-100k"
    for shown in (shown_path(p) for p in (tmp_path, repo / "data", Path.home())):
        assert not shown.startswith("/"), shown


def test_ml100k_recbole_atomic_files_match_original() -> None:
    orig = load_ml100k(FIX / "ml-100k", verbose=False)
    rb = load_ml100k(FIX / "ml-100k-recbole", verbose=False)
    pd.testing.assert_frame_equal(orig.interactions, rb.interactions)
    merged = orig.items.merge(rb.items, on="item", suffixes=("_o", "_r"))
    assert (merged["genres_o"] == merged["genres_r"]).all()
    assert rb.items.set_index("item").loc[1, "title"] == "Toy Story"  # RecBole drops the year from the title
    assert rb.items.set_index("item").loc[1, "year"] == 1995
    assert "recbole 1.2.1 wheel" in rb.source
    pd.testing.assert_frame_equal(orig.users[["user", "age", "gender", "occupation", "zip_code"]], rb.users)


def test_ml100k_load_prints_source_and_terms(capsys: pytest.CaptureFixture[str]) -> None:
    load_ml100k(FIX / "ml-100k-recbole")
    out = capsys.readouterr().out
    assert "Source:" in out and "research use" in out and "Harper" in out and "Konstan" in out


def test_ml1m_dat_files() -> None:
    ds = load_ml1m(FIX / "ml-1m", verbose=False)
    assert len(ds.interactions) == 20
    items = ds.items.set_index("item")
    assert items.loc[6, "title"] == "Misérables, Les (1995)"
    assert items.loc[7, "genres"] == ["Drama", "Sci-Fi"] and items.loc[7, "year"] == 1995
    users = ds.users.set_index("user")
    assert users.loc[1, "occupation"] == "K-12 student" and users.loc[1, "gender"] == "F"
    assert users.loc[2, "occupation"] == "self-employed" and users.loc[2, "age"] == 56


def test_statistics_table() -> None:
    ds = load_ml100k(FIX / "ml-100k", verbose=False)
    st = dataset_statistics(ds)
    assert st.loc[0, "users"] == 3 and st.loc[0, "items"] == 12 and st.loc[0, "interactions"] == 20
    genres = {g for gs in ds.items["genres"] for g in gs}
    assert st.loc[0, "categories"] == len(genres)
    assert st.loc[0, "density"] == pytest.approx(20 / 36)
    liked = ds.interactions[ds.interactions["rating"] >= 4]
    st4 = dataset_statistics(ds, liked)
    assert st4.loc[0, "interactions"] == len(liked) and st4.loc[0, "items"] == liked["item"].nunique()


# ------------------------------------------------------------------------------------------- malformed input


def test_missing_column_in_recbole_header(tmp_path: Path) -> None:
    folder = copy_fixture("ml-100k-recbole", tmp_path)
    p = folder / "ml-100k.inter"
    p.write_text(p.read_text().replace("rating:float", "score:float"))
    with pytest.raises(DataFormatError, match=r"ml-100k\.inter.*rating:float"):
        load_ml100k(folder, verbose=False)


def test_bad_separator_u_data(tmp_path: Path) -> None:
    folder = copy_fixture("ml-100k", tmp_path)
    p = folder / "u.data"
    p.write_text(p.read_text().replace("\t", ","))
    with pytest.raises(DataFormatError, match=r"u\.data: line 1 has 1 field"):
        load_ml100k(folder, verbose=False)


def test_short_row_is_reported_with_line(tmp_path: Path) -> None:
    folder = copy_fixture("ml-100k", tmp_path)
    p = folder / "u.data"
    lines = p.read_text().splitlines(keepends=True)
    lines[4] = "1\t5\t3\n"  # timestamp missing on line 5
    p.write_text("".join(lines))
    with pytest.raises(DataFormatError, match=r"u\.data: line 5: missing value for column 'timestamp'"):
        load_ml100k(folder, verbose=False)


def test_bad_value_is_reported_with_line(tmp_path: Path) -> None:
    folder = copy_fixture("ml-100k", tmp_path)
    p = folder / "u.data"
    lines = p.read_text().splitlines(keepends=True)
    lines[2] = "1\t3\tfour\t880000300\n"
    p.write_text("".join(lines))
    with pytest.raises(DataFormatError, match=r"u\.data: line 3: column 'rating' should be float but is 'four'"):
        load_ml100k(folder, verbose=False)


def test_extra_field_is_reported(tmp_path: Path) -> None:
    folder = copy_fixture("ml-1m", tmp_path)
    p = folder / "ratings.dat"
    lines = p.read_text(encoding="latin-1").splitlines(keepends=True)
    lines[6] = lines[6].rstrip("\n") + "::99\n"
    p.write_text("".join(lines), encoding="latin-1")
    with pytest.raises(DataFormatError, match=r"ratings\.dat.*line 7"):
        load_ml1m(folder, verbose=False)


def test_genre_flags_must_be_binary(tmp_path: Path) -> None:
    folder = copy_fixture("ml-100k", tmp_path)
    p = folder / "u.item"
    lines = p.read_bytes().split(b"\n")
    lines[1] = lines[1][:-1] + b"2"
    p.write_bytes(b"\n".join(lines))
    with pytest.raises(DataFormatError, match=r"u\.item: line 2: genre flags"):
        load_ml100k(folder, verbose=False)


def test_utf8_file_where_latin1_expected_is_still_read_but_invalid_utf8_is_reported(tmp_path: Path) -> None:
    folder = copy_fixture("ml-100k-recbole", tmp_path)
    p = folder / "ml-100k.item"
    p.write_bytes(p.read_bytes().replace("Misérables".encode(), "Misérables".encode("latin-1")))
    with pytest.raises(DataFormatError, match=r"ml-100k\.item: line 7 is not valid utf-8"):
        load_ml100k(folder, verbose=False)


def test_ml100k_genre_list_is_the_published_one() -> None:
    assert len(ML100K_GENRES) == 19 and ML100K_GENRES[0] == "unknown" and "Film-Noir" in ML100K_GENRES


# ------------------------------------------------------------------------------------------- load_dataset


def test_load_dataset_reads_from_data_dir(tmp_path: Path) -> None:
    copy_fixture("ml-100k-recbole", tmp_path, as_name="ml-100k")
    copy_fixture("ml-1m", tmp_path)
    assert len(load_dataset("ml-100k", data_dir=tmp_path, fetch=False, verbose=False).interactions) == 20
    assert load_dataset("ml-1m", data_dir=tmp_path, fetch=False, verbose=False).name == "ml-1m"


def test_load_dataset_missing_without_fetch_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotAvailableError) as err:
        load_dataset("ml-1m", data_dir=tmp_path, fetch=False)
    msg = str(err.value)
    assert "https://files.grouplens.org/datasets/movielens/ml-1m.zip" in msg
    assert str(tmp_path / "ml-1m") in msg and "ratings.dat" in msg


def test_load_dataset_unknown_name(tmp_path: Path) -> None:
    with pytest.raises(KeyError, match="unknown dataset"):
        load_dataset("netflix", data_dir=tmp_path, fetch=False)


REAL = data_dir() / "ml-100k"


def test_load_dataset_reads_ml100k_from_the_data_folder(movielens_100k: Path) -> None:
    ds = load_dataset("ml-100k", fetch=False, verbose=False)  # from RECJUDGE_DATA_DIR, as the chapters load it
    st = dataset_statistics(ds)
    users, items, per_user = (SYNTHETIC_ML100K[k] for k in ("users", "items", "per_user"))
    assert (st.loc[0, "users"], st.loc[0, "items"], st.loc[0, "interactions"]) == (users, items, users * per_user)
    assert st.loc[0, "density"] == pytest.approx(per_user / items)
    assert ds.users is not None and len(ds.users) == users
    assert set(ds.interactions["rating"].unique()) == {1.0, 2.0, 3.0, 4.0, 5.0}
    assert ds.items["genres"].map(len).between(1, 3).all() and set(ds.items["genres"].explode()) <= set(ML100K_GENRES)
    assert "recbole" in ds.source


@pytest.mark.skipif(not (REAL / "ml-100k.inter").is_file(), reason="real ML-100K not extracted (run the data command)")
def test_real_ml100k_if_present() -> None:
    """The real file's published counts, where the data command has extracted it (the run above covers the path)."""
    ds = load_dataset("ml-100k", fetch=False, verbose=False)
    st = dataset_statistics(ds)
    assert (st.loc[0, "users"], st.loc[0, "items"], st.loc[0, "interactions"]) == (943, 1682, 100_000)
    assert ds.users is not None and len(ds.users) == 943
    assert set(ds.interactions["rating"].unique()) == {1.0, 2.0, 3.0, 4.0, 5.0}


def test_the_serendipity_proxy_from_the_data_folder_fills_every_level(movielens_100k: Path) -> None:
    """The stand-in for Serendipity-2018 built from the ML-100K in the data folder: the requested g mix exactly, the
    per-user cap, 10-movie histories before the judged rating, g = min(relevance, unexpectedness)."""
    assert not (movielens_100k / "serendipity-2018").exists()  # so the stand-in is what loads
    pairs = load_serendipity_pairs(n_pairs=200, min_per_level=10, max_per_user=5, verbose=False)
    assert not pairs.is_real and pairs.label == PROXY_LABEL
    frame = pairs.pairs
    assert len(frame) == 200
    assert pairs.g_distribution().to_dict() == level_targets(200, 10) == {1: 30, 2: 86, 3: 55, 4: 19, 5: 10}
    assert frame.groupby("user").size().max() <= 5
    assert all(len(h) == 10 for h in frame["history"])
    assert (frame["g"] == np.minimum(frame["relevance"], frame["unexpectedness"])).all()
    ratings = load_dataset("ml-100k", fetch=False, verbose=False).interactions.set_index(["user", "item"])
    for row in frame.head(20).itertuples():
        judged = ratings.loc[(row.user, row.item)]
        assert row.rating == judged["rating"]
        earlier = ratings.loc[row.user]
        assert set(row.history) <= set(earlier.index[earlier["timestamp"] < judged["timestamp"]])


@pytest.mark.parametrize("folder", ["ml-100k", "ml-100k-recbole", "ml-1m"])
def test_fast_and_careful_parsing_paths_agree(folder: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import recjudge_utils.data._common as common

    loader = load_ml1m if folder == "ml-1m" else load_ml100k
    fast = loader(FIX / folder, verbose=False)
    calls: list[int] = []

    def no_fast_path(*args: object, **kwargs: object) -> None:
        calls.append(1)
        return None

    monkeypatch.setattr(common, "_fast_read", no_fast_path)
    careful = loader(FIX / folder, verbose=False)
    assert calls, "careful path was not exercised"
    pd.testing.assert_frame_equal(fast.interactions, careful.interactions)
    pd.testing.assert_frame_equal(fast.items, careful.items)
    pd.testing.assert_frame_equal(fast.users, careful.users)
