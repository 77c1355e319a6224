"""read_lists: every toolkit's format gives the same lists; each refusal names the file, the line and the fix."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from locations import FIXTURES

from recjudge_utils.lists import (
    ListFormatError,
    RecommendationLists,
    lists_frame,
    read_lists,
    write_trec_run,
    write_trec_runs,
)

FIXTURES = FIXTURES / "lists"
TEXT_FORMATS = ["trec", "lenskit", "msrecommenders", "recbole", "elliot"]
USERS = [1, 2, 3, 4]
ITEMS = list(range(10, 20))

# the fixtures' lists as the reader must rank them (score descending, ties by item id ascending)
EXPECTED = {
    "bprmf": {1: [10, 11, 12, 13, 14], 2: [15, 10, 16, 17, 18], 3: [19, 14, 13, 12, 11], 4: [11, 10, 18, 19, 15]},
    "pop": {1: [15, 16, 17, 18, 19], 2: [11, 12, 13, 14, 19], 3: [10, 15, 16, 17, 18], 4: [12, 13, 14, 16, 17]},
}


def expected_frame(top_k: int) -> pd.DataFrame:
    rows = [
        (system, user, rank, item)
        for system, lists in EXPECTED.items()
        for user, items in lists.items()
        for rank, item in enumerate(items[:top_k], start=1)
    ]
    return pd.DataFrame(rows, columns=["system", "user", "rank", "item"]).astype(
        {"user": "int64", "rank": "int64", "item": "int64"}
    )


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def trec_text(system: str = "bprmf") -> str:
    return (FIXTURES / "trec" / f"{system}.trec").read_text()


def parquet_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "parquet"
    folder.mkdir()
    for system in EXPECTED:
        # RecBole-like columns, rows in the file's own (unsorted) order
        table = pd.read_csv(FIXTURES / "recbole" / f"{system}.tsv", sep="\t")
        table.columns = ["user_id", "item_id", "score"]
        table.to_parquet(folder / f"{system}.parquet", index=False)
    return folder


def read(source: object, **options: object) -> RecommendationLists:
    options.setdefault("top_k", 5)
    options.setdefault("users", USERS)
    options.setdefault("items", ITEMS)
    return read_lists(source, **options)  # type: ignore[arg-type]


# --- one data set, every format ------------------------------------------------------------------------------------


@pytest.mark.parametrize("top_k", [5, 3])
def test_every_format_gives_the_same_frame(top_k: int, tmp_path: Path) -> None:
    folders = [FIXTURES / name for name in TEXT_FORMATS]
    folders.append(parquet_folder(tmp_path))
    want = expected_frame(top_k)
    for folder in folders:
        got = read(folder, top_k=top_k)
        pd.testing.assert_frame_equal(got.frame(), want, obj=folder.name)
        assert {name: s.lists for name, s in got.systems.items()} == {
            name: {u: items[:top_k] for u, items in lists.items()} for name, lists in EXPECTED.items()
        }


def test_parquet_reads_like_the_others(tmp_path: Path) -> None:
    got = read(parquet_folder(tmp_path))
    pd.testing.assert_frame_equal(got.frame(), expected_frame(5))
    assert got.report()["format"].tolist() == ["parquet", "parquet"]
    assert got.report()["ties_broken"].tolist() == [1, 2]


def test_the_lists_give_the_one_mapping_every_protocol_takes_cut_once() -> None:
    got = read(FIXTURES / "trec", top_k=3)
    assert got.by_system() == {name: {u: items[:3] for u, items in lists.items()} for name, lists in EXPECTED.items()}
    # chosen systems and users, in the order asked for; no second cut, and copies of what was read
    some = got.by_system(["pop"], [3, 1])
    assert some == {"pop": {3: [10, 15, 16], 1: [15, 16, 17]}} and list(some["pop"]) == [3, 1]
    some["pop"][3].append(99)
    assert got.systems["pop"].lists[3] == [10, 15, 16]
    pd.testing.assert_frame_equal(lists_frame(got.by_system()), got.frame())
    assert lists_frame({}).columns.tolist() == ["system", "user", "rank", "item"]


def test_formats_ranked_by_and_ties_per_format() -> None:
    seen = {}
    for name in TEXT_FORMATS:
        report = read(FIXTURES / name).report()
        seen[name] = (report["format"].tolist(), report["ranked_by"].tolist(), report["ties_broken"].tolist())
    assert seen == {
        "trec": (["trec", "trec"], ["score", "score"], [1, 2]),
        "lenskit": (["csv", "csv"], ["rank", "rank"], [0, 0]),  # LensKit's own rank column orders the lists
        "msrecommenders": (["csv", "csv"], ["prediction", "prediction"], [1, 2]),
        "recbole": (["tsv", "tsv"], ["score", "score"], [1, 2]),
        "elliot": (["tsv-headerless", "tsv-headerless"], ["score", "score"], [1, 2]),
    }


def test_trec_is_ordered_by_score_and_its_rank_column_ignored() -> None:
    # the file ranks item 12 above 11 (tied at 0.8) and 13 above 12 for pop's user 4; the score order with ties by
    # item id puts 11 and 12 first, and says so in the notes
    got = read(FIXTURES / "trec")
    assert "1 Q0 12 2 0.8 bprmf" in trec_text("bprmf")
    assert got.systems["bprmf"].lists[1][:3] == [10, 11, 12]
    assert got.systems["pop"].lists[4][:2] == [12, 13]
    ties, trec = got.notes
    assert "by item id" in ties and re.findall(r"(\d+) ties? in (\w+)", ties) == [("1", "bprmf"), ("2", "pop")]
    assert "rank column ignored" in trec and trec.endswith(": bprmf.trec, pop.trec")


def test_ties_count_only_where_they_decide_the_kept_top_k() -> None:
    # top 1: bprmf's tie (positions 2-3) is below the cut; pop's user 4 tie (positions 1-2) decides the top 1
    assert read(FIXTURES / "elliot", top_k=1).report()["ties_broken"].tolist() == [0, 1]
    # top 2: bprmf's tie straddles the cut (which of 11 and 12 is kept), so it counts
    assert read(FIXTURES / "elliot", top_k=2).report()["ties_broken"].tolist() == [1, 2]


def test_report_and_users() -> None:
    got = read(FIXTURES / "msrecommenders", top_k=4)
    assert got.top_k == 4
    assert got.report().to_dict("records") == [
        {
            "system": "bprmf",
            "file": "bprmf.csv",
            "format": "csv",
            "users": 4,
            "ranked_by": "prediction",
            "ties_broken": 1,
            "short_lists": 0,
            "seen_items": 0,
            "seen": "kept",
        },
        {
            "system": "pop",
            "file": "pop.csv",
            "format": "csv",
            "users": 4,
            "ranked_by": "prediction",
            "ties_broken": 2,
            "short_lists": 0,
            "seen_items": 0,
            "seen": "kept",
        },
    ]
    assert got.users() == {1, 2, 3, 4}
    assert list(got.systems) == ["bprmf", "pop"]
    assert got.systems["pop"].source == (FIXTURES / "msrecommenders" / "pop.csv").resolve()


def test_users_is_the_intersection(tmp_path: Path) -> None:
    write(tmp_path / "a.csv", "user,item,rank\n1,10,1\n2,11,1\n3,12,1\n")
    write(tmp_path / "b.csv", "user,item,rank\n2,10,1\n3,11,1\n4,12,1\n")
    assert read(tmp_path, top_k=1).users() == {2, 3}


# --- refusals ------------------------------------------------------------------------------------------------------


def test_unknown_user_ids(tmp_path: Path) -> None:
    path = write(tmp_path / "bprmf.trec", trec_text())
    with pytest.raises(ListFormatError) as error:
        read(path, users=[1, 2, 3])
    message = str(error.value)
    assert message.startswith(f"{path.resolve()}: line 16: 1 unknown user id")  # file, first line, count, field
    assert "3 users" in message and "on 5 lines" in message and "first five: 4;" in message
    assert "the dataset's own integer ids" in message  # what an id must be


def test_unknown_item_ids_count_and_first_five_in_file_order(tmp_path: Path) -> None:
    path = write(tmp_path / "bprmf.trec", trec_text())
    with pytest.raises(
        ListFormatError,
        match=r"bprmf\.trec: line 4: 7 unknown item ids \(not among the dataset's 3 items; on 12 lines\), "
        r"first five: 13, 14, 15, 16, 17; ids must be the dataset's own",
    ):
        read(path, items=[10, 11, 12])


def test_non_integer_ids_are_unknown(tmp_path: Path) -> None:
    path = write(tmp_path / "s.csv", "user,item,score\n1,10,0.9\nu7,11,0.8\n1,12.5,0.7\n")
    with pytest.raises(ListFormatError, match=r"s\.csv: line 3: 1 unknown user id .*first five: 'u7'; ids must"):
        read(path, top_k=1)
    # even with no users to check against, an id must be an integer
    path = write(tmp_path / "s.csv", "user,item,score\n1,10,0.9\n1,12.5,0.8\n")
    with pytest.raises(ListFormatError, match=r"s\.csv: line 3: 1 unknown item id \(not integers; .*first five: 12\.5"):
        read(path, top_k=1, users=None, items=None)


def test_duplicate_item_names_the_second_line(tmp_path: Path) -> None:
    path = write(tmp_path / "s.tsv", "user\titem\tscore\n1\t10\t0.9\n1\t11\t0.8\n2\t10\t0.7\n1\t10\t0.1\n")
    with pytest.raises(
        ListFormatError, match=r"s\.tsv: line 5: item 10 appears twice in user 1's list \(first at line 2\)"
    ):
        read(path, top_k=1)


def test_duplicate_rank_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "s.csv", "item,score,rank,user\n10,0.9,1,1\n11,0.8,2,1\n12,0.7,2,1\n")
    with pytest.raises(
        ListFormatError, match=r"s\.csv: line 4: rank 2 given twice in user 1's list \(also at line 3\)"
    ):
        read(path, top_k=2)


def test_short_list_refused_unless_allowed(tmp_path: Path) -> None:
    lines = trec_text().splitlines()
    del lines[6]  # user 2's second entry
    path = write(tmp_path / "bprmf.trec", "\n".join(lines) + "\n")
    with pytest.raises(
        ListFormatError,
        match=r"bprmf\.trec: line 9: user 2's list has 4 items, fewer than top_k=5; 1 user with a short list, "
        r"first five: 2 \(4 items\); pass allow_short=True",
    ):
        read(path)
    got = read(path, allow_short=True)
    assert got.systems["bprmf"].short_users == (2,)
    assert got.systems["bprmf"].lists[2] == [15, 16, 17, 18]
    assert got.report()["short_lists"].tolist() == [1]
    (short,) = [note for note in got.notes if "allow_short=True" in note]
    assert "shorter than 5" in short and short.endswith(": 1 in bprmf")
    assert read(path, top_k=4).systems["bprmf"].short_users == ()


@pytest.mark.parametrize(
    ("name", "text", "pattern"),
    [
        (
            "s.trec",
            "1 Q0 10 1 0.9 x\n1 Q0 11 2 high x\n",
            r"s\.trec: line 2: 'high' in the score column is not a number \(1 line like it\)",
        ),
        (
            "s.csv",
            "user,item,rank\n1,10,1\n1,11,\n",
            r"s\.csv: line 3: \(empty or NaN\) in the rank column is not a number",
        ),
        (
            "s.tsv",
            "uid\tiid\trating\n1\t10\tnan\n",
            r"s\.tsv: line 2: \(empty or NaN\) in the rating column is not a number",
        ),
    ],
)
def test_non_numeric_rank_or_score(tmp_path: Path, name: str, text: str, pattern: str) -> None:
    with pytest.raises(ListFormatError, match=pattern):
        read(write(tmp_path / name, text), top_k=1)


def test_missing_column_lists_the_accepted_names(tmp_path: Path) -> None:
    path = write(tmp_path / "s.csv", "user,product,score\n1,10,0.9\n")
    with pytest.raises(ListFormatError) as error:
        read(path, top_k=1)
    message = str(error.value)
    assert message.startswith(f"{path.resolve()}: line 1: ") and "item column" in message
    assert "(one of item, item_id, itemID, iid)" in message  # the names accepted
    assert "the columns are 'user', 'product', 'score'" in message
    path = write(tmp_path / "t.csv", "user,item\n1,10\n")
    with pytest.raises(ListFormatError, match=r"a rank column \(rank\) or a score column \(one of score, prediction"):
        read(path, top_k=1)
    path = write(tmp_path / "u.csv", "1,10,0.9\n1,11,0.8\n")
    with pytest.raises(ListFormatError, match=r"u\.csv: line 1: no header row \(the first row is numbers\); missing"):
        read(path, top_k=1)


@pytest.mark.parametrize(
    ("name", "text", "pattern"),
    [
        ("s.trec", "", r"s\.trec: line 1: empty file"),
        ("s.tsv", "\n\n", r"s\.tsv: line 1: empty file"),
        ("s.csv", "user,item,score\n", r"s\.csv: line 2: empty file \(a header and no recommendation\)"),
    ],
)
def test_empty_file(tmp_path: Path, name: str, text: str, pattern: str) -> None:
    with pytest.raises(ListFormatError, match=pattern):
        read(write(tmp_path / name, text))


def test_two_files_claiming_one_system_name(tmp_path: Path) -> None:
    first = write(tmp_path / "a.trec", trec_text())  # tag bprmf
    second = write(tmp_path / "b.csv", "user,item,rank,system\n1,10,1,bprmf\n")
    with pytest.raises(ListFormatError) as error:
        read([first, second], top_k=1)
    message = str(error.value)
    assert f"{first.resolve()} and {second.resolve()} both name" in message and "'bprmf'" in message
    assert "rename a file" in message  # the way out
    # the same stem in two folders
    with pytest.raises(ListFormatError, match=r"lenskit/bprmf\.csv and .*msrecommenders/bprmf\.csv both name"):
        read([FIXTURES / "lenskit" / "bprmf.csv", FIXTURES / "msrecommenders" / "bprmf.csv"])


@pytest.mark.parametrize(
    ("name", "text", "pattern"),
    [
        ("s.json", '{"1": [10]}', r"s\.json: cannot read a \.json file; the formats known are: trec \(\.trec"),
        (
            "s.txt",
            "1 10 0.9\n",
            r"s\.txt: line 1: 3 columns, not a TREC run .*; the formats known are: .*tsv-headerless",
        ),
        ("s.tsv", "1\t10\n", r"s\.tsv: line 1: a headerless \.tsv with 2 columns \(Elliot's has 3"),
    ],
)
def test_unknown_format_lists_the_known_ones(tmp_path: Path, name: str, text: str, pattern: str) -> None:
    with pytest.raises(ListFormatError, match=pattern) as error:
        read(write(tmp_path / name, text))
    assert "parquet (.parquet" in str(error.value)


def test_binary_file_is_an_unknown_format(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    path.write_bytes(b"user,item,score\n1,10,\xff\xfe\n")
    with pytest.raises(ListFormatError, match=r"s\.csv: not UTF-8 text .*; the formats known are: trec"):
        read(path, top_k=1)


def test_trec_lines_with_too_few_or_too_many_columns(tmp_path: Path) -> None:
    path = write(tmp_path / "s.trec", "1 Q0 10 1 0.9 x\n\n1 Q0 11 2 0.8\n")
    with pytest.raises(ListFormatError, match=r"s\.trec: line 3: fewer than 6 columns"):
        read(path, top_k=1)
    path = write(tmp_path / "s.trec", "1 Q0 10 1 0.9 x\n1 Q0 11 2 0.8 x\n\n1 Q0 12 3 0.7 x extra\n")
    with pytest.raises(ListFormatError, match=r"s\.trec: line 4: more than 6 columns"):
        read(path, top_k=1)


def test_line_numbers_count_blank_lines(tmp_path: Path) -> None:
    path = write(tmp_path / "s.csv", "user,item,score\n1,10,0.9\n\n\n1,99,0.8\n")
    with pytest.raises(ListFormatError, match=r"s\.csv: line 5: 1 unknown item id"):
        read(path, top_k=1)


def test_sources_matching_nothing(tmp_path: Path) -> None:
    with pytest.raises(ListFormatError, match=r"runs/\*\.tsv: the pattern matches no file"):
        read(str(tmp_path / "runs" / "*.tsv"))
    with pytest.raises(ListFormatError, match=r"nothing\.trec: no such file or folder"):
        read(tmp_path / "nothing.trec")
    write(tmp_path / "empty" / "notes.md", "not a list")
    with pytest.raises(ListFormatError, match=r"empty: folder has no recommendation-list file"):
        read(tmp_path / "empty")
    with pytest.raises(ListFormatError, match=r"no source given"):
        read([])


def test_an_error_in_a_later_file_returns_nothing(tmp_path: Path) -> None:
    write(tmp_path / "a.trec", trec_text("bprmf"))
    write(tmp_path / "b.trec", trec_text("pop").replace(" 50.0 pop", " x pop", 1))
    with pytest.raises(ListFormatError, match=r"b\.trec: line 1: 'x' in the score column is not a number"):
        read(tmp_path)


# --- seen items, naming, sources, writing --------------------------------------------------------------------------

TRAIN = pd.DataFrame({"user": [1, 1, 2, 3], "item": [10, 14, 19, 15]})


def test_seen_items_kept_or_dropped() -> None:
    kept = read(FIXTURES / "elliot", top_k=4, train=TRAIN, allow_short=True)
    # in the top 4: bprmf's user 1 has 10 (14 is 5th); pop: user 2's 19 is 5th, user 3's 15 is 2nd
    assert [kept.systems[s].seen_items for s in ("bprmf", "pop")] == [1, 1]
    assert kept.systems["bprmf"].lists[1] == [10, 11, 12, 13]
    assert kept.report()["seen"].tolist() == ["kept", "kept"]
    (seen,) = [note for note in kept.notes if "in train" in note]
    assert "top 4" in seen and "(kept)" in seen and seen.endswith(": 1 in bprmf, 1 in pop")

    dropped = read(FIXTURES / "elliot", top_k=4, train=TRAIN, seen="drop", allow_short=True)
    assert [dropped.systems[s].seen_items for s in ("bprmf", "pop")] == [1, 1]  # same count: it describes the system
    assert dropped.systems["bprmf"].seen_dropped is True
    assert dropped.systems["bprmf"].lists[1] == [11, 12, 13]  # 10 and 14 dropped before the cut: short
    assert dropped.systems["bprmf"].short_users == (1,)
    assert dropped.systems["pop"].lists[3] == [10, 16, 17, 18]  # 15 dropped, 18 moves up into the top 4
    assert dropped.systems["pop"].lists[2] == [11, 12, 13, 14]
    assert dropped.report()["seen"].tolist() == ["dropped", "dropped"]


def test_dropping_seen_items_can_make_a_list_short(tmp_path: Path) -> None:
    with pytest.raises(
        ListFormatError,
        match=r"bprmf\.tsv: line 4: user 1's list has 3 items, fewer than top_k=4 after dropping the items they "
        r"already have in train",
    ):
        read(FIXTURES / "elliot", top_k=4, train=TRAIN, seen="drop")
    with pytest.raises(ValueError, match="seen='drop' needs train"):
        read(FIXTURES / "elliot", seen="drop")


def test_a_list_emptied_by_drop_is_short_with_no_items(tmp_path: Path) -> None:
    path = write(tmp_path / "s.csv", "user,item,score\n1,10,0.9\n1,11,0.8\n2,12,0.9\n")
    train = pd.DataFrame({"user": [2], "item": [12]})
    with pytest.raises(
        ListFormatError, match=r"s\.csv: line 4: user 2's list has 0 items, fewer than top_k=1 after dropping"
    ):
        read(path, top_k=1, train=train, seen="drop")
    got = read(path, top_k=1, train=train, seen="drop", allow_short=True)
    assert got.systems["s"].lists == {1: [10], 2: []}
    assert got.systems["s"].short_users == (2,)
    assert got.systems["s"].seen_items == 1
    assert got.frame()["user"].tolist() == [1]


def test_system_names(tmp_path: Path) -> None:
    write(tmp_path / "run1.trec", trec_text("bprmf"))  # one tag: named by it
    mixed = trec_text("pop").splitlines()
    mixed[0] = mixed[0].replace(" pop", " pop-v2")
    write(tmp_path / "run2.trec", "\n".join(mixed) + "\n")  # two tags: named after the file
    write(tmp_path / "lk.csv", "item,score,rank,user,system\n10,0.9,1,1,lenskit-itemknn\n")
    write(tmp_path / "m.tsv", "user_id:token\titem_id:token\tscore:float\tmodel:token\n1\t10\t0.5\tBPR\n")
    write(tmp_path / "r.csv", "userID,itemID,prediction,rs\n1,10,0.5,ease\n")
    write(tmp_path / "plain.csv", "userID,itemID,prediction\n1,10,0.5\n")
    got = read(tmp_path, top_k=1)
    assert list(got.systems) == ["lenskit-itemknn", "BPR", "plain", "ease", "bprmf", "run2"]
    (named,) = [note for note in got.notes if "named after the file" in note]
    assert named.endswith(": run2.trec (2 tags)")  # the file, and why


def test_folder_glob_and_sequence_sources(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    write(folder / "a.trec", trec_text("bprmf"))
    write(folder / "b.tsv", (FIXTURES / "elliot" / "pop.tsv").read_text())
    write(folder / ".hidden.trec", "garbage\n")  # hidden: ignored in a folder
    write(folder / "README.md", "not a list")  # unknown extension: ignored in a folder
    write(folder / "sub" / "c.trec", "garbage\n")  # not recursive
    from_folder = read(folder)
    assert list(from_folder.systems) == ["bprmf", "b"]
    assert [s.format for s in from_folder.systems.values()] == ["trec", "tsv-headerless"]
    assert list(read(str(folder / "*.tsv")).systems) == ["b"]
    # a sequence: a file, a glob and a folder, the same file twice read once, in sorted path order
    mixed = read([folder / "b.tsv", str(folder / "a.*"), FIXTURES / "lenskit" / "pop.csv", folder / "a.trec"])
    assert [s.source for s in mixed.systems.values()] == sorted(
        p.resolve() for p in (folder / "a.trec", folder / "b.tsv", FIXTURES / "lenskit" / "pop.csv")
    )
    assert sorted(mixed.systems) == ["b", "bprmf", "pop"]


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="top_k must be a positive integer"):
        read(FIXTURES / "trec", top_k=0)
    with pytest.raises(ValueError, match="users must be integer ids"):
        read(FIXTURES / "trec", users=["a", "b"])


def test_write_trec_run_round_trip(tmp_path: Path) -> None:
    lists = {3: [19, 14, 13], 1: [10, 11, 12]}
    path = write_trec_run(lists, tmp_path / "out" / "mine.trec", "mine")
    assert path.read_text().splitlines() == [
        "1 Q0 10 1 3 mine",
        "1 Q0 11 2 2 mine",
        "1 Q0 12 3 1 mine",
        "3 Q0 19 1 3 mine",
        "3 Q0 14 2 2 mine",
        "3 Q0 13 3 1 mine",
    ]
    got = read(path, top_k=3, users=None)
    assert got.systems["mine"].lists == {1: [10, 11, 12], 3: [19, 14, 13]}
    assert got.systems["mine"].ties_broken == 0
    with pytest.raises(ValueError, match="system name 'my run' cannot be a TREC tag"):
        write_trec_run(lists, tmp_path / "x.trec", "my run")
    with pytest.raises(ValueError, match="item 10 appears twice in user 1's list"):
        write_trec_run({1: [10, 10]}, tmp_path / "x.trec", "x")


def test_write_trec_runs_one_file_per_system(tmp_path: Path) -> None:
    frame = expected_frame(5).rename(columns={"system": "rs"}).sample(frac=1.0, random_state=0)
    paths = write_trec_runs(frame, tmp_path / "runs")
    assert sorted(p.name for p in paths) == ["bprmf.trec", "pop.trec"]
    got = read(tmp_path / "runs")
    pd.testing.assert_frame_equal(got.frame(), expected_frame(5))
    assert got.report()["ties_broken"].tolist() == [0, 0]
    with pytest.raises(ValueError, match="needs a system column"):
        write_trec_runs(frame.drop(columns="rs"), tmp_path / "runs")


def test_messages_are_single_line_and_name_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "odd name.csv", "user,item,score\n1,10,oops\n")
    with pytest.raises(ListFormatError) as error:
        read(path, top_k=1)
    assert "\n" not in str(error.value)
    assert re.match(re.escape(str(path.resolve())) + r": line 2: ", str(error.value))


def test_huge_ids_take_the_general_path_with_the_same_order(tmp_path: Path) -> None:
    # ids so far apart that (user, score rank, item) no longer fits one int64 key: lexsort and two-column hashing
    big = 2**40
    path = write(
        tmp_path / "s.csv",
        f"user,item,score\n{big},{big},0.5\n{big},7,0.5\n{big},{big + 1},0.9\n1,7,0.1\n1,{big},0.2\n",
    )
    train = pd.DataFrame({"user": [big], "item": [7]})
    got = read(path, top_k=2, users=None, items=None, train=train)
    assert got.systems["s"].lists == {1: [big, 7], big: [big + 1, 7]}
    assert got.systems["s"].ties_broken == 1  # 7 and big tie at 0.5 and decide the second place
    assert got.systems["s"].seen_items == 1
    path = write(tmp_path / "s.csv", f"user,item,score\n{big},{big},0.5\n1,7,0.1\n{big},{big},0.2\n")
    with pytest.raises(ListFormatError, match=rf"s\.csv: line 4: item {big} appears twice in user {big}'s list"):
        read(path, top_k=1, users=None, items=None)


@pytest.mark.parametrize("suffix", [".run", ".txt"])
def test_trec_extensions(tmp_path: Path, suffix: str) -> None:
    path = write(tmp_path / f"x{suffix}", trec_text("pop"))
    got = read(path)
    assert got.systems["pop"].format == "trec"
    assert got.systems["pop"].lists == EXPECTED["pop"]


def test_dataset_ids_as_numpy_or_pandas_columns() -> None:
    interactions = pd.DataFrame({"user": pd.array(USERS * 2, dtype="Int64")})
    got = read(FIXTURES / "trec", users=interactions["user"].unique(), items=pd.Index(ITEMS))
    assert got.users() == {1, 2, 3, 4}
    got = read(FIXTURES / "trec", users=np.array(USERS, dtype=np.uint32), items=set(ITEMS))
    assert got.systems["pop"].lists == EXPECTED["pop"]
