"""Each chapter's "What the judge saw" note (issue 43, item 2): the prompt templates used, the domain words and the
item fields shown, from one function (reporting/judge_saw.py) that chapter 4's context note shares."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from domain_words import MOVIE_WORD
from locations import FIXTURES, ROOT

from recjudge_utils.data import Dataset
from recjudge_utils.data.examples import write_books
from recjudge_utils.data.folder import load_folder_dataset
from recjudge_utils.data.movielens import load_ml100k
from recjudge_utils.reporting import arena, prompt_selection, reevaluation, your_recommenders
from recjudge_utils.reporting.judge_saw import arena_use, judge_saw, judge_saw_lines, saer_use, serendipity_use

FIX = FIXTURES / "data"


@pytest.fixture(scope="module")
def movies() -> Dataset:
    return load_ml100k(FIX / "ml-100k", verbose=False)


@pytest.fixture(scope="module")
def books(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return load_folder_dataset(write_books(tmp_path_factory.mktemp("books") / "shelf"), verbose=False)


def _bullets(text: str) -> list[str]:
    return [line.removeprefix("- ") for line in text.splitlines() if line.startswith("- ")]


def _line(lines: list[str], start: str) -> str:
    (found,) = [line for line in lines if line.startswith(start)]
    return found


def test_a_named_dataset_note_names_prompts_words_and_each_protocols_own_fields(movies: Dataset) -> None:
    uses = [
        serendipity_use(["ltm"], movies.items, movies),
        arena_use(movies.items, movies, absolute=True),
        saer_use("movies", {"pointwise": ["v3"], "pairwise": ["v1", "v3"]}, movies.items, movies),
    ]
    note = judge_saw(uses, movies.domain).text
    assert note.startswith("```{admonition} What the judge saw")
    lines = _bullets(note)
    words = _line(lines, "Words:")
    assert all(f'"{w}"' in words for w in ("movie", "movies", "watched"))
    ser = _line(lines, "serendipity:")
    assert all(f"`serendipity/ltm/{s}`" in ser for s in ("relevance", "unexpectedness", "serendipity"))
    assert "title" in ser and "categories" in ser
    are = _line(lines, "Arena:")
    assert "`arena/pairwise`" in are and "`arena/absolute`" in are and "genres" in are
    saer = _line(lines, "SAER:")
    assert all(f"`saer/movies/{p}`" in saer for p in ("pointwise_v3", "pairwise_v1", "pairwise_v3"))
    assert "pointwise_v1" not in saer and "categories" in saer
    assert "items.describe" not in note  # a named dataset's fields are the protocols' own, not its card's


def test_a_folder_datasets_note_names_its_cards_fields_and_words(books: Dataset) -> None:
    card = books.extra["card"]
    uses = [serendipity_use(["cot"], books.items, books), arena_use(books.items, books)]
    uses.append(saer_use("ecommerce", {"pointwise": ["v3"]}, books.items, books))
    lines = judge_saw_lines(uses, books.domain)
    assert not any(MOVIE_WORD.search(line) for line in lines)
    words = _line(lines, "Words:")
    assert '"book"' in words and '"read"' in words and "card" in words
    for start in ("serendipity:", "Arena:", "SAER:"):
        line = _line(lines, start)
        assert ", ".join(card.items.describe) in line and str(card.items.max_chars) in line
    assert "`saer/ecommerce/pointwise_v3`" in _line(lines, "SAER:")


def test_neutral_words_are_said_to_be_neutral(tmp_path: Path) -> None:
    folder = write_books(tmp_path / "shelf", layout="csv")
    card = folder / "recjudge.yaml"
    card.write_text(card.read_text(encoding="utf-8").split("domain:")[0], encoding="utf-8")
    ds = load_folder_dataset(folder, verbose=False)
    words = _line(judge_saw_lines([], ds.domain), "Words:")
    assert '"item"' in words and '"interacted with"' in words and "neutral" in words


def test_every_chapters_note_comes_from_its_run(movies: Dataset, books: Dataset) -> None:
    """Chapters 1, 2, 3 and 7 each name the prompts their run used; a stand-in run object carries just the fields
    the notes read."""
    run1 = SimpleNamespace(config=SimpleNamespace(templates=("base", "cot")), data=movies)
    one = prompt_selection.judge_saw_note(cast(Any, run1)).text
    assert "`serendipity/base`" in one and "`serendipity/cot`" in one and "`serendipity/ls`" not in one
    two = reevaluation.judge_saw_note(cast(Any, SimpleNamespace(config=SimpleNamespace(template="ls"))), books).text
    assert "`serendipity/ls`" in two and "author" in two and '"book"' in two
    run3 = SimpleNamespace(config=SimpleNamespace(absolute=False))
    three = arena.judge_saw_note(cast(Any, run3), movies).text
    assert "`arena/pairwise`" in three and "arena/absolute" not in three and '"watched"' in three
    run7 = SimpleNamespace(config=SimpleNamespace(protocols=("serendipity", "saer"), template="cot"))
    seven = your_recommenders.judge_saw_note(cast(Any, run7), books).text
    assert "`serendipity/cot`" in seven and "`saer/ecommerce/pointwise_v3`" in seven and "Arena:" not in seven
    assert not MOVIE_WORD.search(seven) and seven.count("author") == 2  # both protocols show the card's fields


NOTEBOOKS = ROOT / "notebooks"


@pytest.mark.parametrize("chapter", ["01", "02", "03", "07"])
def test_chapters_1_2_3_and_7_show_the_note_once_after_their_run(chapter: str) -> None:
    (path,) = NOTEBOOKS.glob(f"{chapter}_*.ipynb")
    code = [
        "".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"
    ]
    shown = [k for k, src in enumerate(code) if "report.judge_saw_note(" in src]
    ran = [k for k, src in enumerate(code) if re.search(r"^run = ", src, re.M)]
    assert len(shown) == 1 and len(ran) == 1 and shown[0] > ran[0], (shown, ran)
