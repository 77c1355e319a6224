"""A folder dataset where a dataset name is taken (issue 43): load_dataset, the named datasets' cards, the positive
threshold the split uses, the data command, the book runner's ``-p dataset``, recommenders a dataset cannot train,
and every bad dataset refused before any training or judge call."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from locations import FIXTURES
from test_data_folder import BOOKS, copy, edit

import recjudge_utils.judge.client as judge_client
import recjudge_utils.recommenders.training as training
from recjudge_utils.book.cli import main as book_main
from recjudge_utils.book.execution_cache import notebook_key
from recjudge_utils.book.notebooks import notebook_parameters, resolve_dataset_parameters
from recjudge_utils.data import DataFormatError, load_dataset
from recjudge_utils.data.__main__ import main as data_main
from recjudge_utils.data.card import NAMED_CARDS, named_card
from recjudge_utils.data.domain import NEUTRAL_DOMAIN
from recjudge_utils.data.examples import write_books
from recjudge_utils.data.fetch import REGISTRY
from recjudge_utils.judge.loading import load_profile
from recjudge_utils.paths import dataset_folder_path, project_root
from recjudge_utils.recommenders.data_needs import keep_usable, usable_recommenders
from recjudge_utils.splitting.export import temporal_fold

ROOT = project_root()


# --------------------------------------------------------------------------------------------- load_dataset


def test_load_dataset_takes_a_folder_and_carries_its_cards_words(capsys: pytest.CaptureFixture[str]) -> None:
    ds = load_dataset(BOOKS / "csv")
    out = capsys.readouterr().out
    assert out.startswith("tiny-books: assumed")  # the assumptions block comes first
    assert (ds.domain.item, ds.domain.items, ds.domain.consumed) == ("book", "books", "read")
    assert ds.extra["card"].name == "tiny-books" and ds.extra["card"].domain_words == ds.domain
    assert load_dataset(str(BOOKS / "recbole"), verbose=False).domain == ds.domain  # a path as text


def test_a_folder_without_domain_words_gets_the_neutral_ones(tmp_path: Path) -> None:
    folder = tmp_path / "clicks"
    folder.mkdir()
    (folder / "interactions.csv").write_text("user,item\nu1,a\nu1,b\nu2,a\n")
    ds = load_dataset(folder, verbose=False)
    assert ds.domain == NEUTRAL_DOMAIN
    assert ds.positive_threshold == -math.inf  # no rating column: every interaction is a positive


def test_an_unknown_name_that_is_no_folder_names_both() -> None:
    with pytest.raises(KeyError) as info:
        load_dataset("ml-10k", verbose=False)
    msg = str(info.value)
    assert "'ml-10k'" in msg and "ml-100k" in msg and "no folder" in msg


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("ml-100k", ("movie", "movies", "watched", "movie")),
        ("ml-1m", ("movie", "movies", "watched", "movie")),
        ("goodreads", ("book", "books", "read", "book")),
        ("amazon-beauty", ("product", "products", "bought", "online shop")),
        ("mind", ("news article", "news articles", "read", "news")),
    ],
)
def test_every_named_dataset_is_a_shipped_card(name: str, words: tuple[str, ...]) -> None:
    assert name in REGISTRY and (NAMED_CARDS / f"{name}.yaml").is_file()
    card = named_card(name)
    dw = card.domain_words
    assert (dw.item, dw.items, dw.consumed, dw.platform) == words
    assert card.items.describe and card.items.describe[0] == "title"


def test_the_movielens_loader_takes_its_label_words_and_item_columns_from_its_card() -> None:
    from recjudge_utils.data.folder import item_texts
    from recjudge_utils.data.movielens import load_ml100k

    ds = load_ml100k(FIXTURES / "data" / "ml-100k-recbole", verbose=False)
    card = named_card("ml-100k")
    assert ds.label == card.label and ds.domain == card.domain_words and ds.extra["card"] == card
    assert ds.positive_threshold == 4
    first = ds.items.iloc[0]
    assert item_texts(ds, [int(first["item"])])[int(first["item"])].startswith(str(first["title"]))


def test_the_split_takes_positives_as_the_card_defines_them(tmp_path: Path) -> None:
    folder = write_books(tmp_path / "shelf")
    ds = load_dataset(folder, verbose=False)
    assert ds.positive_threshold == 4
    fold = temporal_fold(ds, 0)
    assert (fold.train["rating"] >= 4).all() and len(fold.train)
    # the same dataset, implicit: every interaction is a positive, whatever its stars
    edit(folder / "recjudge.yaml", lambda t: t.replace("  positive_threshold: 4\n", "  implicit: true\n"))
    implicit = load_dataset(folder, verbose=False)
    assert math.isinf(implicit.positive_threshold)
    assert len(temporal_fold(implicit, 0).train) > len(fold.train)
    assert (temporal_fold(implicit, 0).train["rating"] < 4).any()


# --------------------------------------------------------------------------------------------- data command


def test_export_split_and_info_take_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = write_books(tmp_path / "shelf")
    assert data_main(["export-split", str(folder), "--out", str(tmp_path / "split")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("shelf-reads: assumed")  # before anything else
    readme = (tmp_path / "split" / "README.md").read_text()
    assert f"-p dataset {folder.resolve()}" in readme and "rating >= 4" in readme
    train = pd.read_csv(tmp_path / "split" / "train.csv")
    expected = temporal_fold(load_dataset(folder, verbose=False), 0).train.reset_index(drop=True)
    pd.testing.assert_frame_equal(train, expected[list(train.columns)], check_dtype=False)
    assert data_main(["info", str(folder)]) == 0
    assert "Shelf reads (synthetic books)" in capsys.readouterr().out


def test_export_split_refuses_a_bad_folder_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = copy(tmp_path, "csv")
    edit(folder / "interactions.csv", lambda t: t.replace("r-ana,0441172717,4,", "r-ana,0441172717,four,"))
    assert data_main(["export-split", str(folder), "--out", str(tmp_path / "split")]) == 3
    err = capsys.readouterr().err
    assert "interactions.csv: line 3: column 'stars'" in err and "'four'" in err
    assert not (tmp_path / "split").exists()


# --------------------------------------------------------------------------------------------- the runner


def test_runner_names_a_folder_from_the_repository_and_refuses_what_is_neither(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(BOOKS)
    resolved = resolve_dataset_parameters({"02:dataset": "csv", "dataset": "ml-100k", "n_users": 3})
    # inside the checkout: relative to it (no machine path in the executed notebook), found from notebooks/ too
    inside = (BOOKS / "csv").resolve()
    root = project_root()
    expected = str(inside.relative_to(root)) if root and inside.is_relative_to(root) else str(inside)
    assert resolved == {"02:dataset": expected, "dataset": "ml-100k", "n_users": 3}
    monkeypatch.chdir(root / "notebooks" if root else tmp_path)
    assert dataset_folder_path(expected).resolve() == inside
    outside = write_books(tmp_path / "shelf", layout="csv")  # outside the checkout: its absolute path
    assert resolve_dataset_parameters({"dataset": str(outside)}) == {"dataset": str(outside.resolve())}
    with pytest.raises(ValueError, match=r"-p dataset ml-10k: neither a dataset name .*did you mean 'ml-100k'"):
        resolve_dataset_parameters({"dataset": "ml-10k"})


@pytest.mark.skipif(ROOT is None, reason="needs a checkout with notebooks/")
def test_paper_scale_keeps_the_folder_dataset_and_its_files_are_in_the_execution_key(tmp_path: Path) -> None:
    assert ROOT is not None
    folder = write_books(tmp_path / "shelf", layout="csv")
    notebook = ROOT / "notebooks" / "02_rs_reevaluation.ipynb"
    params = notebook_parameters(
        notebook, {"judge", "dataset", "n_users"}, load_profile("sim"), "paper", {"dataset": str(folder)}
    )
    assert params["dataset"] == str(folder)
    key = notebook_key(notebook, params, "paper", False)
    assert notebook_key(notebook, params, "paper", False) == key
    with open(folder / "interactions.csv", "a", encoding="utf-8") as fh:
        fh.write("rdr-000,0003141592,5,2023-01-02\n")
    assert notebook_key(notebook, params, "paper", False) != key  # the data changed: execute again


# --------------------------------------------------------------------------------------------- left out


def test_a_recommender_the_data_cannot_train_is_left_out_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from recjudge_utils.experiments.reevaluation import ReevaluationConfig

    folder = tmp_path / "clicks"
    folder.mkdir()
    (folder / "interactions.csv").write_text(
        "user,item,timestamp\n" + "".join(f"u{i % 7},i{i % 11},{i}\n" for i in range(80))
    )
    ds = load_dataset(folder, verbose=False)  # implicit feedback, no catalogue
    kept, said = usable_recommenders(("pop", "kfn", "uaum", "bprmf", "minilm-content"), ds)
    assert kept == ("pop", "bprmf")
    assert len(said) == 3 and all(line.count("\n") == 0 for line in said)
    assert said[0].startswith("KFN is left out: it needs explicit ratings (its interactions are implicit feedback)")
    assert "MiniLM-content is left out: it needs item text" in said[2]
    config = keep_usable(ReevaluationConfig(recommenders=("pop", "kfn"), n_trials=0), ds)
    assert config.recommenders == ("pop",) and capsys.readouterr().out.count("left out") == 1
    books = load_dataset(BOOKS / "recbole", verbose=False)
    assert usable_recommenders(("pop", "kfn", "minilm-content"), books) == (("pop", "kfn", "minilm-content"), [])


# --------------------------------------------------------------------------------------------- refusals
# Every bad dataset of issue 43 item 4, refused by the book runner's command line before any notebook runs: the
# message names the file, the line (or column, or card key) and what is wrong, and nothing was trained or judged.


def _no_column(folder: Path) -> None:
    (folder / "recjudge.yaml").unlink()


def _card_names_no_column(folder: Path) -> None:
    edit(folder / "recjudge.yaml", lambda t: t.replace("user: reader", "user: readr"))


def _unknown_card_key(folder: Path) -> None:
    edit(folder / "recjudge.yaml", lambda t: t.replace("ratings:", "ratngs:"))


def _non_numeric_rating(folder: Path) -> None:
    edit(folder / "interactions.csv", lambda t: t.replace("r-ana,0441172717,4,", "r-ana,0441172717,four,"))


def _unparseable_time(folder: Path) -> None:
    edit(
        folder / "interactions.csv",
        lambda t: t.replace("r-chen,0553293354,5,2022-03-28", "r-chen,0553293354,5,28/03/22"),
    )


def _duplicate_item(folder: Path) -> None:
    edit(folder / "items.csv", lambda t: t.replace("0143039431,The Grapes", "0441172717,The Grapes"))


def _item_not_in_catalogue(folder: Path) -> None:
    lines = (folder / "items.csv").read_text().splitlines()
    (folder / "items.csv").write_text("\n".join(x for x in lines if not x.startswith("0261103342")) + "\n")


def _empty_file(folder: Path) -> None:
    (folder / "items.csv").write_text("")


def _missing_file(folder: Path) -> None:
    (folder / "interactions.csv").rename(folder / "interaction.csv")


def _empty_user_column(folder: Path) -> None:
    (folder / "interactions.csv").write_text(
        "reader,isbn,stars,read_on\n,0261103342,5,2021-01-03\n,0441172717,4,2021-01-04\n"
    )


def _empty_item_column(folder: Path) -> None:
    (folder / "interactions.csv").write_text("reader,isbn,stars,read_on\nr-ana,,5,2021-01-03\nr-ben,,4,2021-01-04\n")


def _threshold_outside(folder: Path) -> None:
    edit(
        folder / "recjudge.yaml",
        lambda t: t.replace("scale: [1, 5]", "scale: [1, 10]").replace("threshold: 4", "threshold: 8"),
    )


#: case -> (the change, what the message must name: the file, the place and the problem)
BAD: dict[str, tuple[Callable[[Path], None], tuple[str, ...]]] = {
    "missing file": (_missing_file, ("missing file", "no interactions file", "interaction.csv")),
    "missing column": (_no_column, ("interactions.csv: line 1 (the header): missing column: no user column",)),
    "card field names no column": (
        _card_names_no_column,
        ("recjudge.yaml: line 6", "'readr'", "did you mean 'reader'"),
    ),
    "unknown card key": (_unknown_card_key, ("recjudge.yaml: line 11: unknown key 'ratngs'", "did you mean 'ratings'")),
    "non-numeric rating": (_non_numeric_rating, ("interactions.csv: line 3: column 'stars'", "'four'")),
    "unparseable time": (_unparseable_time, ("interactions.csv: line 12: column 'read_on'", "'28/03/22'")),
    "duplicate item id": (_duplicate_item, ("items.csv: line 10: duplicate item id '0441172717'", "first at line 4")),
    "item not in catalogue": (
        _item_not_in_catalogue,
        ("interactions.csv: 4 interaction(s) (1 distinct", "not in the catalogue", "line 2"),
    ),
    "empty file": (_empty_file, ("items.csv: file is empty",)),
    "empty user column": (_empty_user_column, ("interactions.csv: column 'reader' (the user id) is entirely empty",)),
    "empty item column": (_empty_item_column, ("interactions.csv: column 'isbn' (the item id) is entirely empty",)),
    "threshold outside the ratings": (_threshold_outside, ("recjudge.yaml: line 13", "positive_threshold 8", "1..5")),
}


@pytest.fixture
def spies(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counters of training steps (every fit goes through the one training loop) and judge calls (every request
    goes through JudgeClient.judge_many / judge)."""
    counts = {"trained": 0, "judged": 0}

    def count(key: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def spy(*args: Any, **kwargs: Any) -> Any:
            counts[key] += 1
            return original(*args, **kwargs)

        return spy

    monkeypatch.setattr(training, "train_each", count("trained", training.train_each))
    monkeypatch.setattr(training, "fit_recommender", count("trained", training.fit_recommender))
    monkeypatch.setattr(judge_client.JudgeClient, "judge", count("judged", judge_client.JudgeClient.judge))
    monkeypatch.setattr(judge_client.JudgeClient, "judge_many", count("judged", judge_client.JudgeClient.judge_many))
    return counts


@pytest.mark.skipif(ROOT is None, reason="needs a checkout with notebooks/")
@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_dataset_is_refused_before_any_training_or_judge_call(
    case: str, tmp_path: Path, isolated_runs: Path, spies: dict[str, int], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = copy(tmp_path, "csv")
    change, named = BAD[case]
    change(folder)
    argv = ["run", "--run", "bad", "--judge", "sim", "--only", "02", "07", "-p", "dataset", str(folder), "--no-build"]
    assert book_main(argv) == 2
    err = capsys.readouterr().err
    for part in named:
        assert part in err, (case, part, err)
    assert spies == {"trained": 0, "judged": 0}
    assert not (isolated_runs / "bad").exists()  # no notebook ran: no run folder, no manifest
    assert not (isolated_runs / "artifacts").exists() and not (isolated_runs / "cache.sqlite").exists()
    with pytest.raises(DataFormatError):  # and the notebooks' own road refuses it the same way
        load_dataset(folder, verbose=False)
