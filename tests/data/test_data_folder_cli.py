"""``python -m recjudge_utils.data check FOLDER``: the statistics of a good folder dataset, exit 2 on a bad one."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from locations import FIXTURES

from recjudge_utils.data.__main__ import main

BOOKS = FIXTURES / "folder_books"


def test_check_prints_assumptions_statistics_and_item_texts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(BOOKS / "recbole")]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "tiny-books: assumed (recjudge.yaml does not say):"
    assert "  - times without a time zone (column 'read_on') are read as UTC" in lines
    for expected in (
        "  files         RecBole atomic files books.inter, books.item, books.user; card recjudge.yaml",
        "  users         5",
        "  items         8 interacted with (9 in the catalogue)",
        "  interactions  22",
        "  density       55.0000%",
        "  time span     2020-11-30 00:00 .. 2023-06-30 00:00 UTC (942 days)",
        "  ratings       scale 1..5, positive when >= 4: 15 of 22 interactions (68%)",
        "         5  ############################## 8",
        "         1  ####                           1",
        "  domain words  item 'book', items 'books', consumed 'read', platform 'book' (card)",
        "      0261103342  The Hobbit (author: J. R. R. Tolkien; genres: fantasy, classics; year: 1937)",
    ):
        assert expected in lines, expected
    assert "the 3 most-interacted books:" in out
    assert not any(w in out.lower() for w in ("movie", "film", "watched", "viewing"))


def test_check_csv_layout_says_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(BOOKS / "recbole")]) == 0
    recbole = capsys.readouterr().out.splitlines()
    assert main(["check", str(BOOKS / "csv")]) == 0
    table = capsys.readouterr().out.splitlines()
    differ = [(a, b) for a, b in zip(recbole, table, strict=True) if a != b]
    assert [b for _, b in differ] == [
        "  - list columns: 'shelves', separated by '|'",
        "  files         tables interactions.csv, items.csv, users.csv; card recjudge.yaml",
    ]


def test_check_refuses_a_bad_dataset_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "books"
    shutil.copytree(BOOKS / "csv", folder)
    text = (folder / "interactions.csv").read_text()
    (folder / "interactions.csv").write_text(text.replace("r-ana,0553293354,4,", "r-ana,0553293354,four,"))
    assert main(["check", str(folder)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip().endswith(
        "interactions.csv: line 4: column 'stars' (the rating) should be a number but is 'four'"
    )
    assert captured.err.startswith(f"{folder}: refused: ")


def test_check_as_a_module_exits_2_on_a_missing_folder(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "recjudge_utils.data", "check", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "nowhere: does not exist" in done.stderr
