"""``python -m recjudge_utils.data export-split``: chapter 2's split written to a folder for outside recommenders.

The frames must be exactly chapter 2's (``prepare_folds``), computed without importing the experiments; the folder
appears complete or not at all.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from claims import about, markdown_table, numbers_in, sentences
from locations import FIXTURES
from test_tune_workers import write_tiny_ml100k

from recjudge_utils.data import Dataset, load_dataset
from recjudge_utils.data.__main__ import main as cli
from recjudge_utils.experiments.reevaluation import prepare_folds
from recjudge_utils.splitting import export
from recjudge_utils.splitting.export import ExportError, export_split

FIX = FIXTURES / "data"
COLUMNS = ["user", "item", "rating", "timestamp"]
FILES = [
    "train.csv",
    "valid.csv",
    "test.csv",
    "{name}.train.inter",
    "{name}.valid.inter",
    "{name}.test.inter",
    "items.csv",
    "eval_users.txt",
    "README.md",
]


def write_late_arrivals_ml100k(folder: Path) -> None:
    """The tiny ML-100K with what the tiny one lacks: users 81-90 and items 61-70 that first appear in the last
    third of the time (unseen in early folds' training) and timestamps in groups of seven equal ones (ties that
    straddle slice boundaries, so the user/item tie-break matters)."""
    write_tiny_ml100k(folder, n_users=90, n_items=70, seed=3)
    data = pd.read_csv(folder / "u.data", sep="\t", header=None, names=COLUMNS)
    late = (data["user"] > 80) | (data["item"] > 60)
    data = pd.concat([data.loc[~late], data.loc[late]], ignore_index=True)  # late rows get the last timestamps
    data["timestamp"] = 880_000_000 + 700 * (np.arange(len(data)) // 7)
    data.sample(frac=1.0, random_state=0).to_csv(folder / "u.data", sep="\t", header=False, index=False)


def write_published_fixture(folder: Path) -> None:
    """The 20-rating ML-100K fixture in GroupLens' own format (tests/fixtures/data/ml-100k)."""
    shutil.copytree(FIX / "ml-100k", folder)


DATASETS = {
    "tiny": write_tiny_ml100k,
    "late-arrivals": write_late_arrivals_ml100k,
    "published-fixture": write_published_fixture,
}


def make_data(tmp_path: Path, kind: str = "tiny") -> Path:
    """A data folder holding ``ml-100k`` of the given kind; returns the folder (``--data-dir``)."""
    data = tmp_path / "data"
    DATASETS[kind](data / "ml-100k")
    return data


def load(tmp_path: Path, kind: str = "tiny") -> Dataset:
    return load_dataset("ml-100k", make_data(tmp_path, kind), fetch=False, verbose=False)


# ------------------------------------------------------------------------------------------- chapter 2's frames


# per dataset and fold: rows of train, valid, test and the number of evaluation users. The unseen rules bite in the
# late-arrivals data (fold 1's test slice holds only late users or items: nothing is left) and in the published
# fixture's folds 0 and 1 (their one test user has no training positive).
EXPECTED = {
    "tiny": [(668, 111, 111, 61), (668, 111, 112, 62), (667, 112, 111, 60)],
    "late-arrivals": [(747, 125, 83, 52), (748, 83, 0, 0), (747, 104, 110, 51)],
    "published-fixture": [(7, 0, 0, 0), (7, 0, 0, 0), (7, 0, 1, 1)],
}


@pytest.mark.parametrize("kind", list(DATASETS))
@pytest.mark.parametrize("fold", [0, 1, 2])
def test_frames_and_evaluation_users_are_chapter_2s(tmp_path: Path, kind: str, fold: int) -> None:
    ds = load(tmp_path, kind)
    split = export_split(ds, fold, tmp_path / "out")
    chapter2 = prepare_folds(ds.interactions, folds=3, n_users=0)[fold]
    pd.testing.assert_frame_equal(split.train, chapter2.train[COLUMNS])
    pd.testing.assert_frame_equal(split.valid, chapter2.valid[COLUMNS])
    pd.testing.assert_frame_equal(split.test, chapter2.test[COLUMNS])
    np.testing.assert_array_equal(split.eval_users, chapter2.eval_users)
    assert split.eval_users.dtype == np.int64
    sizes = (len(split.train), len(split.valid), len(split.test), len(split.eval_users))
    assert sizes == EXPECTED[kind][fold]
    assert (split.dataset, split.fold, split.folder) == ("ml-100k", fold, (tmp_path / "out").resolve())


def test_late_arrivals_exercise_the_unseen_rules(tmp_path: Path) -> None:
    ds = load(tmp_path, "late-arrivals")
    fold0 = prepare_folds(ds.interactions, folds=1, n_users=0)[0]
    assert fold0.report.rows_unseen_user > 0 and fold0.report.rows_unseen_item_only > 0
    split = export_split(ds, 0, tmp_path / "out")
    assert not set(split.test["user"]) - set(split.train["user"])
    assert not set(split.test["item"]) - set(split.train["item"])
    readme = (split.folder / "README.md").read_text()
    dropped = [line for line in readme.splitlines() if "no training positive" in line]  # the valid and test slices
    assert any(f"{fold0.report.rows_unseen_user:,} dropped" in line for line in dropped)


# ------------------------------------------------------------------------------------------------- the files


def test_folder_holds_every_file_and_the_cli_lists_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = make_data(tmp_path)
    out = tmp_path / "exports" / "ml100k-fold1"
    assert cli(["--data-dir", str(data), "export-split", "ml-100k", "--fold", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    expected = [out.resolve() / f.format(name="ml100k-fold1") for f in FILES]
    assert printed[: len(FILES)] == [f"wrote {p}" for p in expected]
    summary = printed[len(FILES)]
    assert summary.startswith("ml-100k fold 1:") and numbers_in(summary)[:5] == [1, 668, 111, 112, 62]
    assert re.findall(r"train|valid|test", summary)[:3] == ["train", "valid", "test"]  # rows of each, then users
    assert sorted(p.name for p in out.iterdir()) == sorted([p.name for p in expected] + ["lists"])
    assert not any((out / "lists").iterdir())
    assert [p.name for p in (tmp_path / "exports").iterdir()] == ["ml100k-fold1"]  # no staging folder left


def test_csv_round_trip(tmp_path: Path) -> None:
    split = export_split(load(tmp_path), 0, tmp_path / "out")
    for name in ("train", "valid", "test"):
        path = split.folder / f"{name}.csv"
        assert path.read_text().splitlines()[0] == "user,item,rating,timestamp"
        pd.testing.assert_frame_equal(pd.read_csv(path), getattr(split, name))
    assert pd.read_csv(split.folder / "train.csv").dtypes.astype(str).tolist() == ["int64", "int64", "float64", "int64"]
    users = (split.folder / "eval_users.txt").read_text().splitlines()
    assert users[:3] == ["1", "2", "3"] and len(users) == 61
    np.testing.assert_array_equal(np.array(users, dtype=np.int64), split.eval_users)


def test_recbole_atomic_files(tmp_path: Path) -> None:
    split = export_split(load(tmp_path), 2, tmp_path / "mydata")
    for name, frame in (("train", split.train), ("valid", split.valid), ("test", split.test)):
        lines = (split.folder / f"mydata.{name}.inter").read_text().splitlines()
        assert lines[0] == "user_id:token\titem_id:token\trating:float\ttimestamp:float"
        assert len(lines) - 1 == len(frame) == {"train": 667, "valid": 112, "test": 111}[name]
        back = pd.read_csv(split.folder / f"mydata.{name}.inter", sep="\t")
        pd.testing.assert_frame_equal(back.set_axis(COLUMNS, axis=1), frame)
    readme = (split.folder / "README.md").read_text()
    assert f"data_path: {tmp_path.resolve()}\ndataset: mydata\nbenchmark_filename: [train, valid, test]" in readme


def test_items_catalogue(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(FIX / "ml-100k", data / "ml-100k")
    ds = load_dataset("ml-100k", data, fetch=False, verbose=False)
    split = export_split(ds, 0, tmp_path / "out")
    items = pd.read_csv(split.folder / "items.csv", keep_default_na=False)
    assert items.columns.tolist() == ["item", "title", "genres", "year"]
    assert len(items) == len(ds.items)
    toy = items.loc[items["item"] == 1].iloc[0]
    assert (toy["title"], toy["genres"], toy["year"]) == ("Toy Story (1995)", "Animation|Children's|Comedy", "1995")
    by_item = items.set_index("item")
    assert by_item.at[6, "title"] == "Misérables, Les (1995)"  # a comma inside a title survives the CSV
    assert by_item.at[12, "year"] == ""  # "unknown": no release date, so no year


def test_readme_names_the_fold_the_slices_and_the_evaluation_users(tmp_path: Path) -> None:
    split = export_split(load(tmp_path), 1, tmp_path / "out")
    readme = (split.folder / "README.md").read_text()
    assert readme.startswith("# ml-100k, fold 1: chapter 2's split\n")
    flat = " ".join(readme.split())
    folds = about(sentences(flat), "Fold 1", "slice")  # train, validation and test slices, then the folds there are
    assert re.findall(r"\d+(?:\.\.\d+)?", folds) == ["1", "1..6", "7", "8", "0", "1", "2"]
    assert "**Evaluation users: 62** (`eval_users.txt`)" in readme
    # the tiny data's timestamps: 880,000,000 + 100 s per rating; fold 1's training slices start at 880024600
    table = markdown_table(readme, "split")
    assert list(table["train"].values())[1:] == ["1..6", "1997-11-20", "1997-11-22", "880024600", "880161500", "668",
                                                 "80", "60"]  # fmt: skip
    assert list(table["test"].values())[1:] == ["8", "1997-11-22", "1997-11-22", "880183400", "880202000", "112",
                                                "62", "51"]  # fmt: skip
    assert table["test"]["rows"] == "112" and table["train"]["first timestamp"] == "880024600"  # by header too
    sample = about(sentences(flat), "seeded sample")
    assert "`-p n_users 0`" in sample and numbers_in(sample) == [62, 3, 0, 0]  # of 62: default 3, 0 = all, seed 0
    lists = split.folder / "lists"
    assert "python -m recjudge_utils.book run --run mine --only 07 --judge gpt-4o-mini \\\n" in readme
    assert readme.count(f"    -p lists {lists}/ -p dataset ml-100k -p fold 1\n") == 2
    assert "user Q0 item rank score tag" in readme


# ------------------------------------------------------------------------------------------------- refusals


def test_a_fold_that_does_not_exist_is_refused_before_anything_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    message = "fold 5 needs slices 5..12 but only 10 exist (max fold = 2; valid folds: 0, 1, 2)"
    with pytest.raises(ExportError) as err:
        export_split(load(tmp_path), 5, tmp_path / "out")
    assert str(err.value) == message
    # no dataset at all: the fold is checked first
    assert cli(["--data-dir", str(tmp_path / "none"), "export-split", "ml-100k", "--fold", "5", "--out", "x"]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == message and "Traceback" not in captured.err
    assert cli(["--data-dir", str(tmp_path / "data"), "export-split", "ml-100k", "--fold", "-1", "--out", "x"]) == 2
    assert "fold -1 needs slices -1..6" in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and not Path("x").exists()


def test_a_missing_dataset_says_how_to_get_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["--data-dir", str(tmp_path), "export-split", "ml-1m", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "MovieLens-1M" in err and "is not available" in err and "ratings.dat" in err
    assert not (tmp_path / "out").exists()


def test_serendipity_pairs_have_no_split(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["--data-dir", str(tmp_path), "export-split", "serendipity-2018", "--out", str(tmp_path / "o")]) == 2
    assert "judged pairs, not interactions" in capsys.readouterr().err


def test_a_non_empty_folder_is_refused_unless_forced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = make_data(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    args = ["--data-dir", str(data), "export-split", "ml-100k", "--out", str(out)]
    assert cli(args) == 2
    err = capsys.readouterr().err
    assert f"{out.resolve()} exists and is not empty" in err and "--force" in err
    assert [p.name for p in out.iterdir()] == ["mine.txt"]

    assert cli([*args, "--force"]) == 0
    assert not (out / "mine.txt").exists() and (out / "train.csv").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "out"]  # the replaced copy is gone too


def test_an_empty_existing_folder_is_used(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    split = export_split(load(tmp_path), 0, tmp_path / "out")
    assert (split.folder / "README.md").is_file()


# ------------------------------------------------------------------------------------------------- atomicity


def test_a_failure_midway_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ds = load(tmp_path)
    written: list[str] = []
    real_inter = export._write_inter

    def spy(frame: pd.DataFrame, path: Path) -> None:
        real_inter(frame, path)
        written.append(path.name)

    def disk_full(dataset: Dataset, path: Path) -> None:
        raise OSError("No space left on device")

    monkeypatch.setattr(export, "_write_inter", spy)
    monkeypatch.setattr(export, "_write_items", disk_full)
    parent = tmp_path / "exports"
    parent.mkdir()
    with pytest.raises(OSError, match="No space left"):
        export_split(ds, 0, parent / "out")
    assert written == ["out.train.inter", "out.valid.inter", "out.test.inter"]  # it did fail midway
    assert not (parent / "out").exists()
    assert list(parent.iterdir()) == []  # nor a staging folder


def test_a_failed_forced_export_keeps_the_old_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ds = load(tmp_path)
    first = export_split(ds, 0, tmp_path / "exports" / "out")
    before = {p.name: p.read_bytes() for p in first.files}

    def disk_full(*args: object) -> None:
        raise OSError("No space left on device")

    monkeypatch.setattr(export, "_write_readme", disk_full)
    with pytest.raises(OSError):
        export_split(ds, 1, first.folder, force=True)
    assert {p.name: p.read_bytes() for p in first.files} == before
    assert [p.name for p in (tmp_path / "exports").iterdir()] == ["out"]


# ------------------------------------------------------------------------------------------------- layering


def test_the_export_does_not_import_the_experiments() -> None:
    code = (
        "import sys, recjudge_utils.splitting.export, recjudge_utils.data.__main__\n"
        "above = ('recjudge_utils.experiments', 'recjudge_utils.recommenders')\n"
        "bad = sorted(m for m in sys.modules if m.startswith(above))\n"
        "print(bad)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
