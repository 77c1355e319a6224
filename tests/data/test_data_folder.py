"""Folder datasets (recjudge_utils.data.folder): the two layouts read to the same Dataset, what is inferred without a
card, and every refusal of a bad dataset, each naming the file, the line (or column, or card key) and the problem."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from locations import FIXTURES

from recjudge_utils.data import DataFormatError
from recjudge_utils.data.card import NEUTRAL_DOMAIN, DatasetCard, read_card
from recjudge_utils.data.folder import find_folder_files, is_folder_dataset, item_texts, load_folder_dataset
from recjudge_utils.data.movielens import load_ml100k

BOOKS = FIXTURES / "folder_books"
MOVIE_WORDS = re.compile(r"movie|film|watched|viewing", re.IGNORECASE)


def copy(tmp_path: Path, layout: str = "recbole") -> Path:
    target = tmp_path / f"books-{layout}"
    shutil.copytree(BOOKS / layout, target)
    return target


def edit(path: Path, change: Callable[[str], str]) -> None:
    text = path.read_text(encoding="utf-8")
    changed = change(text)
    assert changed != text, f"the edit changed nothing in {path}"
    path.write_text(changed, encoding="utf-8")


def refused(folder: Path) -> str:
    with pytest.raises(DataFormatError) as info:
        load_folder_dataset(folder, verbose=False)
    return str(info.value)


def csv_to_parquet(src: Path, dst: Path) -> None:
    """The CSV layout as Parquet with Parquet's own types: shelves a list column, read_on a timestamp column, years
    and ages integers, stars floats (written with pandas/pyarrow, not with the reader under test)."""
    dst.mkdir()
    inter = pd.read_csv(src / "interactions.csv", dtype={"reader": str, "isbn": str})
    inter["read_on"] = pd.to_datetime(inter["read_on"], format="ISO8601")
    inter["stars"] = inter["stars"].astype("float64")
    pq.write_table(pa.Table.from_pandas(inter, preserve_index=False), dst / "interactions.parquet")
    items = pd.read_csv(src / "items.csv", dtype={"isbn": str})
    items["shelves"] = items["shelves"].str.split("|")
    pq.write_table(pa.Table.from_pandas(items, preserve_index=False), dst / "items.parquet")
    users = pd.read_csv(src / "users.csv")
    pq.write_table(pa.Table.from_pandas(users, preserve_index=False), dst / "users.parquet")
    shutil.copy(src / "recjudge.yaml", dst / "recjudge.yaml")
    assert pq.read_schema(dst / "items.parquet").field("shelves").type == pa.list_(pa.string())
    assert pa.types.is_timestamp(pq.read_schema(dst / "interactions.parquet").field("read_on").type)


def csv_to_tsv(src: Path, dst: Path) -> None:
    dst.mkdir()
    for name in ("interactions", "items", "users"):
        frame = pd.read_csv(src / f"{name}.csv", dtype=str, keep_default_na=False)
        frame.to_csv(dst / f"{name}.tsv", sep="\t", index=False)
    shutil.copy(src / "recjudge.yaml", dst / "recjudge.yaml")


# --------------------------------------------------------------------------------------------------- equivalence


def test_books_recbole_csv_tsv_parquet_load_to_identical_frames(tmp_path: Path) -> None:
    assert (BOOKS / "recbole" / "recjudge.yaml").read_text() == (BOOKS / "csv" / "recjudge.yaml").read_text()
    csv_to_parquet(BOOKS / "csv", tmp_path / "parquet")
    csv_to_tsv(BOOKS / "csv", tmp_path / "tsv")
    loaded = {
        "recbole": load_folder_dataset(BOOKS / "recbole", verbose=False),
        "csv": load_folder_dataset(BOOKS / "csv", verbose=False),
        "tsv": load_folder_dataset(tmp_path / "tsv", verbose=False),
        "parquet": load_folder_dataset(tmp_path / "parquet", verbose=False),
    }
    ref = loaded["recbole"]
    for layout, ds in loaded.items():
        for part in ("interactions", "items", "users"):
            pd.testing.assert_frame_equal(getattr(ds, part), getattr(ref, part), obj=f"{layout} {part}")
        for mapping in ("user_ids", "item_ids"):
            pd.testing.assert_frame_equal(ds.extra[mapping], ref.extra[mapping], obj=f"{layout} {mapping}")
        assert ds.extra["card"] == ref.extra["card"], layout
        assert item_texts(ds) == item_texts(ref), layout
        assert (ds.name, ds.label, ds.is_real) == ("tiny-books", "Tiny books (synthetic, for the tests)", True)


def test_books_dataset_shape_ids_times_and_words() -> None:
    ds = load_folder_dataset(BOOKS / "recbole", verbose=False)
    inter = ds.interactions
    assert list(inter.columns) == ["user", "item", "rating", "timestamp"]
    assert [str(inter[c].dtype) for c in inter.columns] == ["int64", "int64", "float64", "int64"]
    assert inter.equals(inter.sort_values(["user", "timestamp", "item"], kind="stable").reset_index(drop=True))
    assert len(inter) == 22 and inter["user"].nunique() == 5
    # string ids kept as they are, mapped to 0..n-1 in order of first appearance (as the Goodreads loader does);
    # the catalogue-only book comes last
    items_map = ds.extra["item_ids"].set_index("item")["original_item_id"]
    assert items_map[0] == "0261103342" and items_map[8] == "0143039431"  # leading zeros kept
    assert ds.extra["user_ids"]["original_user_id"].tolist() == ["r-ana", "r-ben", "r-chen", "r-dara", "r-eli"]
    items = ds.items.set_index("original_item_id")
    assert list(ds.items.columns[:3]) == ["item", "title", "genres"]
    assert items.loc["0441172717", "title"] == "Dune"
    assert items.loc["0451524934", "genres"] == ["dystopia", "classics", "science-fiction"]
    assert items.loc["0007136587", "title"] == "The Lion, the Witch and the Wardrobe"
    assert items.loc["0261103342", "author"] == "J. R. R. Tolkien"  # a token_seq that is not a list stays text
    assert items.loc["0141439513", "year"] == 1813 and str(ds.items["year"].dtype) == "Int64"
    assert ds.users is not None and ds.users.set_index("original_user_id").loc["r-chen", "age"] == 45
    # ISO dates and date-times, read as UTC
    ana = ds.interactions[ds.interactions["user"] == 0]
    assert ana["timestamp"].iloc[0] == pd.Timestamp("2021-01-03", tz="UTC").timestamp()
    assert ana["timestamp"].iloc[1] == pd.Timestamp("2021-02-14T20:15:00", tz="UTC").timestamp()
    card: DatasetCard = ds.extra["card"]
    assert card.domain_words.item == "book" and card.domain_words.consumed == "read"
    assert card.ratings.positive_threshold == 4 and ds.extra["positive_threshold"] == 4
    text = item_texts(ds, [0])[0]
    assert text == "The Hobbit (author: J. R. R. Tolkien; genres: fantasy, classics; year: 1937)"
    assert not any(MOVIE_WORDS.search(t) for t in item_texts(ds).values())
    assert "Folder dataset" in ds.source and "books.inter" in ds.source and "CC0" in ds.source


def test_ml100k_recbole_files_without_a_card_read_as_the_movielens_loader_reads_them() -> None:
    folder = FIXTURES / "data" / "ml-100k-recbole"
    ds = load_folder_dataset(folder, verbose=False)
    ml = load_ml100k(folder, verbose=False)
    pd.testing.assert_frame_equal(ds.interactions, ml.interactions)
    pd.testing.assert_frame_equal(ds.items[["item", "title", "genres"]], ml.items[["item", "title", "genres"]])
    assert ds.users is not None and ds.users["user"].tolist() == ml.users["user"].tolist()
    assert ds.users.set_index("user").loc[3, "zip_code"] == "05201"  # RecBole token: text, leading zero kept
    assert "user_ids" not in ds.extra and "item_ids" not in ds.extra  # integer ids are kept as they are
    said = "\n".join(ds.extra["assumptions"])
    for word in ("'user_id'", "'item_id'", "'timestamp'", "epoch seconds", "'movie_title'", "'class'", "threshold: 4"):
        assert word in said, word
    assert ds.extra["card"].domain_words == NEUTRAL_DOMAIN


def test_table_layout_without_card_uses_default_names_and_neutral_words(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "shop"
    folder.mkdir()
    (folder / "interactions.csv").write_text("user,item,rating,timestamp\n1,10,1,1600000000000\n2,11,0,1600000500000\n")
    (folder / "items.csv").write_text("item,name,category\n10,Kettle,kitchen|small appliances\n11,Mug,kitchen\n")
    ds = load_folder_dataset(folder, verbose=True)
    out = capsys.readouterr().out
    block, loaded = out.split("Loaded ", 1)
    assert block.startswith("shop: assumed (no recjudge.yaml):")
    for word in ("epoch milliseconds", "'category'", "name", "interacted with", "threshold: 1"):
        assert word in block, word
    assert "items" in loaded and not MOVIE_WORDS.search(out)
    assert ds.interactions["timestamp"].tolist() == [1600000000, 1600000500]
    assert ds.items.set_index("item").loc[10, "genres"] == ["kitchen", "small appliances"]
    assert ds.items.set_index("item").loc[10, "title"] == "10"  # no title column: the id
    assert ds.extra["card"].items.describe == ["category"]
    assert item_texts(ds, [11]) == {11: "kitchen"}


def test_implicit_feedback_without_time_column(tmp_path: Path) -> None:
    folder = tmp_path / "clicks"
    folder.mkdir()
    (folder / "interactions.tsv").write_text("user\titem\nu1\ta\nu1\tb\nu2\ta\n")
    ds = load_folder_dataset(folder, verbose=False)
    assert ds.interactions["rating"].tolist() == [1.0, 1.0, 1.0]
    assert ds.interactions["timestamp"].tolist() == [0, 1, 2]  # the rows' order
    card = ds.extra["card"]
    assert card.ratings.implicit and card.ratings.positive_threshold is None
    said = "\n".join(ds.extra["assumptions"])
    assert "implicit feedback" in said and "rows' order" in said and "only item ids" in said
    assert item_texts(ds) == {0: "item a", 1: "item b"}


def test_item_text_is_cut_to_max_chars(tmp_path: Path) -> None:
    folder = copy(tmp_path)
    edit(folder / "recjudge.yaml", lambda t: t.replace("max_chars: 120", "max_chars: 40"))
    texts = item_texts(load_folder_dataset(folder, verbose=False))
    assert all(len(t) <= 40 for t in texts.values())
    assert texts[0].endswith("…") and texts[0].startswith("The Hobbit (author: J. R. R. Tolkien")


def test_layout_detection(tmp_path: Path) -> None:
    files = find_folder_files(BOOKS / "recbole")
    assert files.layout == "recbole" and files.items is not None and files.items.name == "books.item"
    assert find_folder_files(BOOKS / "csv").layout == "table"
    assert is_folder_dataset(BOOKS / "csv") and not is_folder_dataset(tmp_path) and not is_folder_dataset("ml-100k")


def test_card_reads_and_platform_defaults_to_the_item_noun(tmp_path: Path) -> None:
    path = tmp_path / "recjudge.yaml"
    path.write_text("domain: {item: track, items: tracks, consumed: listened to}\n")
    card, _ = read_card(path)
    assert card.domain_words.platform == "track"
    assert DatasetCard().domain_words == NEUTRAL_DOMAIN


# --------------------------------------------------------------------------------------------------- refusals


def test_refuses_missing_folder_and_missing_interactions_file(tmp_path: Path) -> None:
    msg = refused(tmp_path / "nowhere")
    assert "nowhere" in msg and "does not exist" in msg
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "items.csv").write_text("item\n1\n")
    msg = refused(tmp_path / "empty")
    assert "missing file" in msg and "interactions.csv|tsv|parquet" in msg and ".inter" in msg and "items.csv" in msg


def test_refuses_missing_column(tmp_path: Path) -> None:
    folder = copy(tmp_path, "csv")
    (folder / "recjudge.yaml").unlink()
    msg = refused(folder)  # no card: the default 'user' is no column of interactions.csv
    assert "interactions.csv: line 1 (the header): missing column: no user column" in msg
    assert "reader, isbn, stars, read_on" in msg and "columns.user" in msg


def test_refuses_catalogue_without_the_item_column(tmp_path: Path) -> None:
    folder = copy(tmp_path)
    edit(folder / "books.item", lambda t: t.replace("isbn:token", "isbn13:token", 1))
    msg = refused(folder)
    assert "books.item: line 1 (the header): missing column: no item id column 'isbn'" in msg
    assert "did you mean 'isbn13'" in msg


def test_refuses_card_field_naming_no_column(tmp_path: Path) -> None:
    folder = copy(tmp_path)
    edit(folder / "recjudge.yaml", lambda t: t.replace("user: reader", "user: readr"))
    msg = refused(folder)
    assert "recjudge.yaml: line 6: columns.user names 'readr', which is no column of books.inter" in msg
    assert "did you mean 'reader'" in msg


def test_refuses_card_item_column_naming_no_column(tmp_path: Path) -> None:
    folder = copy(tmp_path)
    edit(
        folder / "recjudge.yaml",
        lambda t: t.replace("describe: [book_title, author,", "describe: [book_title, writer,"),
    )
    msg = refused(folder)
    assert "recjudge.yaml: line 17: items.describe.1 names 'writer', which is no column of books.item" in msg


def test_refuses_unknown_card_key_with_the_closest_valid_one(tmp_path: Path) -> None:
    folder = copy(tmp_path)
    edit(folder / "recjudge.yaml", lambda t: t.replace("ratings:", "ratngs:"))
    msg = refused(folder)
    assert "recjudge.yaml: line 11: unknown key 'ratngs' (did you mean 'ratings'?)" in msg
    edit(
        folder / "recjudge.yaml", lambda t: t.replace("ratngs:", "ratings:").replace("consumed: read", "consumd: read")
    )
    msg = refused(folder)
    assert "recjudge.yaml: line 24: unknown key 'domain.consumd' (did you mean 'consumed'?)" in msg


def test_refuses_a_bad_card_value(tmp_path: Path) -> None:
    folder = copy(tmp_path)
    edit(folder / "recjudge.yaml", lambda t: t.replace("time_unit: iso", "time_unit: days"))
    msg = refused(folder)
    assert "recjudge.yaml: line 10: time_unit:" in msg and "'days'" in msg


def test_refuses_non_numeric_rating(tmp_path: Path) -> None:
    folder = copy(tmp_path)
    edit(folder / "books.inter", lambda t: t.replace("r-ana\t0553293354\t4", "r-ana\t0553293354\tfour"))
    msg = refused(folder)
    assert msg.endswith("books.inter: line 4: column 'stars' (the rating) should be a number but is 'four'")


def test_refuses_non_numeric_rating_in_parquet_by_row(tmp_path: Path) -> None:
    folder = tmp_path / "pq"
    folder.mkdir()
    table = pa.table({"user": ["a", "b", "c"], "item": ["x", "y", "z"], "rating": ["5", "4", "lots"]})
    pq.write_table(table, folder / "interactions.parquet")
    msg = refused(folder)
    assert msg.endswith("interactions.parquet: row 3: column 'rating' (the rating) should be a number but is 'lots'")


def test_refuses_unparseable_time(tmp_path: Path) -> None:
    folder = copy(tmp_path, "csv")
    edit(
        folder / "interactions.csv",
        lambda t: t.replace("r-chen,0553293354,5,2022-03-28", "r-chen,0553293354,5,28/03/22"),
    )
    msg = refused(folder)
    assert "interactions.csv: line 12: column 'read_on' (the time) cannot be read as an ISO 8601 date/time" in msg
    assert "'28/03/22'" in msg


def test_refuses_unparseable_epoch_time(tmp_path: Path) -> None:
    folder = copy(tmp_path, "csv")
    edit(folder / "recjudge.yaml", lambda t: t.replace("time_unit: iso", "time_unit: s"))
    msg = refused(folder)
    assert "interactions.csv: line 2: column 'read_on' (the time, epoch seconds) should be a number" in msg


def test_refuses_duplicate_item_in_catalogue(tmp_path: Path) -> None:
    folder = copy(tmp_path)
    edit(folder / "books.item", lambda t: t.replace("0143039431\tThe Grapes", "0441172717\tThe Grapes"))
    msg = refused(folder)
    assert "books.item: line 10: duplicate item id '0441172717' in column 'isbn' (first at line 4)" in msg


def test_refuses_interactions_whose_item_is_not_in_the_catalogue(tmp_path: Path) -> None:
    folder = copy(tmp_path, "csv")
    lines = (folder / "items.csv").read_text().splitlines()
    kept = [line for line in lines if not line.startswith(("0261103342", "0679783261"))]
    (folder / "items.csv").write_text("\n".join(kept) + "\n")
    msg = refused(folder)
    assert "interactions.csv: 7 interaction(s) (2 distinct item(s)) name an item that is not in the catalogue" in msg
    assert "items.csv" in msg and "(column 'isbn')" in msg
    firsts = (
        "line 2: '0261103342'; line 9: '0679783261'; line 10: '0261103342'; line 15: '0261103342'; "
        "line 17: '0261103342'"
    )
    assert msg.endswith(f"the first 5: {firsts}")


def test_refuses_empty_file(tmp_path: Path) -> None:
    folder = copy(tmp_path)
    (folder / "books.inter").write_text("")
    assert refused(folder).endswith("books.inter: file is empty (0 bytes): expected a header line and rows")
    folder = copy(tmp_path, "csv")
    (folder / "items.csv").write_text("isbn,book_title,author,shelves,year\n")
    assert refused(folder).endswith("items.csv: file is empty: it has a header (line 1) but no rows")


def test_refuses_entirely_empty_user_column(tmp_path: Path) -> None:
    folder = copy(tmp_path, "csv")
    (folder / "interactions.csv").write_text(
        "reader,isbn,stars,read_on\n,0261103342,5,2021-01-03\n,0441172717,4,2021-01-04\n"
    )
    assert refused(folder).endswith("interactions.csv: column 'reader' (the user id) is entirely empty")


def test_refuses_entirely_empty_item_column(tmp_path: Path) -> None:
    folder = copy(tmp_path)
    edit(folder / "books.inter", lambda t: re.sub(r"(?m)^(r-\w+)\t\d+\t", r"\1\t\t", t))
    assert refused(folder).endswith("books.inter: column 'isbn' (the item id) is entirely empty")


def test_refuses_one_empty_id_naming_its_line(tmp_path: Path) -> None:
    folder = copy(tmp_path)
    edit(folder / "books.inter", lambda t: t.replace("r-ben\t0060935464", "\t0060935464"))
    assert refused(folder).endswith("books.inter: line 8: column 'reader' (the user id) is empty")


def test_refuses_positive_threshold_outside_the_ratings_range(tmp_path: Path) -> None:
    folder = copy(tmp_path)
    edit(
        folder / "recjudge.yaml",
        lambda t: t.replace("scale: [1, 5]", "scale: [1, 10]").replace("threshold: 4", "threshold: 8"),
    )
    msg = refused(folder)
    assert "recjudge.yaml: line 13: ratings.positive_threshold 8 lies outside the ratings' range in books.inter" in msg
    assert "(column 'stars': 1..5)" in msg and "no interaction would be a positive" in msg


def test_refuses_threshold_outside_the_cards_own_scale(tmp_path: Path) -> None:
    folder = copy(tmp_path)
    edit(folder / "recjudge.yaml", lambda t: t.replace("threshold: 4", "threshold: 6"))
    msg = refused(folder)
    assert "recjudge.yaml: line 11: ratings: positive_threshold 6 lies outside scale [1.0, 5.0]" in msg


def test_refuses_rating_outside_the_cards_scale(tmp_path: Path) -> None:
    folder = copy(tmp_path)
    edit(folder / "recjudge.yaml", lambda t: t.replace("scale: [1, 5]", "scale: [2, 5]"))
    msg = refused(folder)
    assert "books.inter: line 14: column 'stars' (the rating) is 1, outside the card's scale [2.0, 5.0]" in msg


def test_refuses_a_line_with_the_wrong_number_of_fields(tmp_path: Path) -> None:
    folder = copy(tmp_path)
    edit(folder / "books.inter", lambda t: t.replace("r-ben\t0679783261\t3\t2021-04-18", "r-ben\t0679783261\t3"))
    msg = refused(folder)
    assert "books.inter: line 9 has 3 field(s) but the header (line 1) names 4 (tab-separated)" in msg


def test_refuses_recbole_header_without_types(tmp_path: Path) -> None:
    folder = copy(tmp_path)
    edit(folder / "books.inter", lambda t: t.replace("stars:float", "stars", 1))
    msg = refused(folder)
    assert "books.inter: line 1, column 3: header field 'stars' has no type" in msg
    edit(folder / "books.inter", lambda t: t.replace("\tstars\t", "\tstars:flaot\t", 1))
    assert "type 'flaot' (did you mean 'float'?)" in refused(folder)


def test_refuses_two_layouts_at_once(tmp_path: Path) -> None:
    folder = copy(tmp_path)
    shutil.copy(BOOKS / "csv" / "interactions.csv", folder / "interactions.csv")
    assert "more than one interactions file (books.inter, interactions.csv)" in refused(folder)


def test_a_good_dataset_passes_every_check_in_each_layout(tmp_path: Path) -> None:
    csv_to_parquet(BOOKS / "csv", tmp_path / "parquet")
    for folder in (BOOKS / "recbole", BOOKS / "csv", tmp_path / "parquet"):
        ds = load_folder_dataset(folder, verbose=False)
        assert np.isfinite(ds.interactions["rating"]).all() and ds.extra["assumptions"]


@pytest.mark.parametrize("time_span", [10, 2**45])  # packed into one sort key / too wide for that: np.lexsort
def test_interactions_are_sorted_exactly_as_tidy_interactions_sorts(time_span: int) -> None:
    from recjudge_utils.data._common import tidy_interactions
    from recjudge_utils.data.folder import _sorted_interactions

    rng = np.random.default_rng(7)
    n = 5_000
    user, item = rng.integers(0, 30, n), rng.integers(0, 200, n)
    ts, rating = rng.integers(0, time_span, n) - 3, rng.integers(1, 6, n).astype("float64")  # ties in all keys
    expected = tidy_interactions(pd.DataFrame({"user": user, "item": item, "rating": rating, "timestamp": ts}))
    pd.testing.assert_frame_equal(_sorted_interactions(user, item, rating, ts), expected)


def test_csv_quoted_field_with_a_line_break_and_line_numbers_after_it(tmp_path: Path) -> None:
    folder = tmp_path / "quoted"
    folder.mkdir()
    (folder / "interactions.csv").write_text("user,item,rating\na,1,5\nb,2,4\n")
    (folder / "items.csv").write_text('item,title,genres\n1,"Two\nlines, one title",x\n2,Plain,y\n2,Again,z\n')
    msg = refused(folder)
    assert msg.endswith(
        "items.csv: line 5: duplicate item id 2 in column 'item' (first at line 4); each item appears once in items.csv"
    )
    (folder / "items.csv").write_text('item,title,genres\n1,"Two\nlines, one title",x\n2,Plain,y\n')
    ds = load_folder_dataset(folder, verbose=False)
    assert ds.items.set_index("item").loc[1, "title"] == "Two\nlines, one title"
    assert item_texts(ds, [1]) == {1: "Two lines, one title (genres: x)"}
