"""Serendipity-2018 loader: ground truth g from s1..s6, NA handling, histories, malformed answers."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from locations import FIXTURES

from recjudge_utils.data import DataFormatError, load_serendipity_pairs
from recjudge_utils.data.serendipity2018 import (
    G_REVERSE_KEYED,
    PAPER_G_COUNTS,
    SERENDIPITY_STATEMENTS,
    g_rule_check,
    load_serendipity2018,
    serendipity_ground_truth,
)

FIX = FIXTURES / "data"


def test_statements_and_paper_counts() -> None:
    assert SERENDIPITY_STATEMENTS == ("s1", "s2", "s3", "s4", "s5", "s6")
    assert sum(PAPER_G_COUNTS.values()) == 2150


def test_ground_truth_rule_by_hand() -> None:
    answers = pd.DataFrame(
        {
            "s1": [5, 1, 3, np.nan, 2],
            "s2": [4, 1, np.nan, np.nan, 3],
            "s3": [2, 5, 3, np.nan, 2],
            "s4": [4, 1, 2, np.nan, 3],
            "s5": [4, 2, np.nan, np.nan, 2],
            "s6": [5, 1, 2, np.nan, 3],
            "s7": [1, 1, 1, 5, 5],  # never used
        }
    )
    g, mean = serendipity_ground_truth(answers)
    assert mean.iloc[0] == pytest.approx(4.0) and mean.iloc[1] == pytest.approx(11 / 6)
    assert mean.iloc[2] == pytest.approx(2.5) and mean.iloc[4] == pytest.approx(2.5)
    assert g.tolist()[:3] == [4, 2, 3]  # 2.5 rounds half up to 3 (np.round would give 2)
    assert pd.isna(g.iloc[3])  # nothing answered -> no g
    g_rev, _ = serendipity_ground_truth(answers, reverse_keyed=("s3",))
    assert g_rev.iloc[1] == 1  # (1+1+1+1+2+1)/6 = 1.17


def test_loader_on_fixture(capsys: pytest.CaptureFixture[str]) -> None:
    sp = load_serendipity2018(FIX / "serendipity-2018", n_history=3)
    assert sp.is_real and "user-annotated" in sp.label
    pairs = sp.pairs.set_index("item")
    assert pairs["g"].to_dict() == {9: 4, 10: 2, 11: 3, 12: 4}
    assert sp.extra["n_without_answers"] == 1  # the all-NA answer for movie 1 is excluded, and counted
    assert pairs.loc[9, "history"] == [6, 7, 8]  # last three training ratings before the survey answer
    assert pairs.loc[11, "history"] == [8, 9, 10]  # earlier answers are ratings too
    assert pairs.loc[12, "history"] == [5, 6, 7]  # user 102; user 101's later rating of 12 is not involved
    assert str(pairs["g"].dtype) == "int64"
    items = sp.items.set_index("item")
    assert items.loc[1, "genres"] == ["Animation", "Children's", "Comedy"]
    assert items.loc[1, "starring"] == 'Tom Hanks, Tim Allen, Don "The Voice" Rickles'  # doubled quotes undone
    assert items.loc[6, "title"] == "Misérables, Les (1995)"
    assert "g counts" in capsys.readouterr().out


def test_history_is_strictly_before_and_oldest_first(tmp_path: Path) -> None:
    folder = tmp_path / "serendipity-2018"
    shutil.copytree(FIX / "serendipity-2018", folder)
    sp = load_serendipity2018(folder, n_history=20, verbose=False)
    h = sp.pairs.set_index("item").loc[9, "history"]
    assert h == [1, 2, 3, 4, 5, 6, 7, 8] and sp.extra["n_short_history"] == 4


def test_load_serendipity_pairs_prefers_real_data(tmp_path: Path) -> None:
    shutil.copytree(FIX / "serendipity-2018", tmp_path / "serendipity-2018")
    sp = load_serendipity_pairs(tmp_path, n_history=3, verbose=False)
    assert sp.is_real and len(sp.pairs) == 4


def test_out_of_range_statement(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    shutil.copytree(FIX / "serendipity-2018", folder)
    p = folder / "answers.csv"
    lines = p.read_text().splitlines(keepends=True)
    lines[2] = lines[2].replace(",1,1,5,1,2,1,", ",1,1,7,1,2,1,", 1)
    p.write_text("".join(lines))
    with pytest.raises(DataFormatError, match=r"answers\.csv: line 3: statement s3 must be 1\.\.5 or NA"):
        load_serendipity2018(folder, verbose=False)


def test_missing_statement_column(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    shutil.copytree(FIX / "serendipity-2018", folder)
    p = folder / "answers.csv"
    p.write_text(p.read_text().replace(",s4,", ",s4x,", 1))
    with pytest.raises(DataFormatError, match=r"answers\.csv: header.*\['s4'\]"):
        load_serendipity2018(folder, verbose=False)


def test_bad_training_value(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    shutil.copytree(FIX / "serendipity-2018", folder)
    p = folder / "training.csv"
    lines = p.read_text().splitlines(keepends=True)
    lines[3] = "101,3,five,1490003000\n"
    p.write_text("".join(lines))
    with pytest.raises(DataFormatError, match=r"training\.csv: line 4: column 'rating'"):
        load_serendipity2018(folder, verbose=False)


def test_semicolon_separated_answers(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    shutil.copytree(FIX / "serendipity-2018", folder)
    p = folder / "answers.csv"
    p.write_text(p.read_text().replace(",", ";"))
    with pytest.raises(DataFormatError, match=r"answers\.csv: header"):
        load_serendipity2018(folder, verbose=False)


def test_step_scores_come_from_the_data_not_from_g() -> None:
    sp = load_serendipity2018(FIX / "serendipity-2018", n_history=3, verbose=False)
    rows = sp.pairs.set_index(["user", "item"])
    # relevance = the user's rating, half up: 4.5 -> 5, 4.0 -> 4, 3.5 -> 4, 5.0 -> 5
    assert rows.loc[(101, 9), "relevance"] == 5 and rows.loc[(101, 10), "relevance"] == 4
    assert rows.loc[(101, 11), "relevance"] == 4 and rows.loc[(102, 12), "relevance"] == 5
    # unexpectedness = half-up mean of 6 - s3, s4, s5, s6 over the answered ones
    assert rows.loc[(101, 9), "unexpectedness"] == 4  # (4 + 4 + 4 + 5) / 4 = 4.25
    assert rows.loc[(101, 10), "unexpectedness"] == 1  # (1 + 1 + 2 + 1) / 4 = 1.25
    assert rows.loc[(101, 11), "unexpectedness"] == 2  # (3 + 2 + 2) / 3 = 2.33, s5 not answered
    assert rows.loc[(102, 12), "unexpectedness"] == 5  # (5 + 5 + 5 + 5) / 4
    assert (rows["relevance"] != rows["g"]).any()  # not a copy of g


def test_g_follows_the_papers_plain_average_and_the_check_shows_every_rule(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 32, item 9: g = the plain average of s1..s6 (the paper's words), s3 as answered; the check counts g
    under each rule (s3 as given or reversed, .5 up or to even) beside the paper's counts."""
    assert G_REVERSE_KEYED == ()
    sp = load_serendipity2018(FIX / "serendipity-2018", n_history=3)
    check = sp.extra["g_rule_check"]
    levels = [f"g={level}" for level in range(1, 6)]
    # fixture answers (s1..s6): [5,4,2,4,4,5], [1,1,5,1,2,1], [3,NA,3,2,NA,2], [5,5,1,5,5,5]
    expected = {
        "as given, half up (the book's)": [0, 1, 1, 2, 0],  # 4.0, 1.83, 2.5 -> 3, 4.33
        "as given, half to even": [0, 2, 0, 2, 0],  # 2.5 -> 2
        "s3 reversed, half up": [1, 0, 1, 1, 1],  # 4.33, 1.17, 2.5 -> 3, 5.0
        "s3 reversed, half to even": [1, 1, 0, 1, 1],
        "paper (Sec. 4.1)": [321, 1022, 586, 208, 13],
    }
    assert {rule: check.loc[rule, levels].astype(int).tolist() for rule in check.index} == expected
    # the loader's g is the book's rule, and the table printed says so beside the others
    assert sp.g_distribution().tolist() == expected["as given, half up (the book's)"]
    assert "s3 reversed, half up" in capsys.readouterr().out
    assert sp.extra["users_of"] == "serendipity-2018"  # the survey's own ids: no MovieLens user is one of them


def test_g_rule_check_finds_the_rule_that_reproduces_the_papers_counts() -> None:
    """Answers built so that averaging them as given gives exactly the paper's 321 / 1,022 / 586 / 208 / 13; the
    check must single that rule out (no pair off, chi-square p = 1) and put the reversed-s3 rule off."""
    levels = np.repeat(np.arange(1, 6), [PAPER_G_COUNTS[level] for level in range(1, 6)])
    answers = pd.DataFrame({s: levels.astype(float) for s in SERENDIPITY_STATEMENTS})
    check = g_rule_check(answers)
    book = check.loc["as given, half up (the book's)"]
    assert book["n"] == 2150 and book["pairs_off"] == pytest.approx(0.0) and book["chi2_p"] == pytest.approx(1.0)
    reversed_s3 = check.loc["s3 reversed, half up"]
    assert reversed_s3["pairs_off"] > 100 and reversed_s3["chi2_p"] < 1e-6
