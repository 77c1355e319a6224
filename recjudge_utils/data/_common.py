"""Shared pieces of the dataset loaders: the ``Dataset`` record, errors and careful file readers.

Every reader here reports problems as :class:`DataFormatError` naming the file and the line (or data row),
so a truncated download or a file in the wrong format fails with a message a person can act on.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import warnings
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .domain import NEUTRAL_DOMAIN, DomainWords

_INTERACTION_COLUMNS = ("user", "item", "rating", "timestamp")
ITEM_COLUMNS = ("item", "title", "genres")


class DataFormatError(ValueError):
    """A data file exists but does not have the published format (message names the file and line)."""


class DatasetNotAvailableError(FileNotFoundError):
    """The dataset's files are not on disk and could not be downloaded (message says what to get from where)."""


@dataclass
class Dataset:
    """A loaded dataset in tidy form (see ``docs`` in ``recjudge_utils.data``).

    ``interactions``: user (int), item (int), rating (float), timestamp (int, unix seconds).
    ``items``: item (int), title (str), genres (list[str]) plus dataset-specific extras.
    ``users``: user plus demographics where the data has them, else None.
    ``extra``: dataset-specific frames, e.g. ``extra["behaviors"]`` for MIND, ``extra["user_ids"]`` /
    ``extra["item_ids"]`` (int id -> original string id) where the source uses string ids.
    """

    name: str
    interactions: pd.DataFrame
    items: pd.DataFrame
    users: pd.DataFrame | None
    label: str
    is_real: bool
    source: str
    extra: dict[str, Any] = field(default_factory=dict)
    # the words every prompt uses for this dataset's items (from its card; neutral words when there is none)
    domain: DomainWords = NEUTRAL_DOMAIN

    @property
    def display_label(self) -> str:
        """The label for titles, marked ``[STAND-IN]`` when this is not the paper's real data."""
        return self.label if self.is_real else f"{self.label} [STAND-IN]"

    @property
    def positive_threshold(self) -> float:
        """The rating at or above which an interaction is a positive, from the dataset's card (``ratings``):
        ``-inf`` for implicit feedback (every interaction is one); 4, the papers' threshold, for a dataset built
        without a card."""
        card = self.extra.get("card")
        if card is None:
            return 4.0
        if card.ratings.implicit:
            return -math.inf
        threshold = card.ratings.positive_threshold
        return 4.0 if threshold is None else float(threshold)

    def __repr__(self) -> str:
        n_users = self.interactions["user"].nunique() if len(self.interactions) else 0
        return (
            f"Dataset(name={self.name!r}, label={self.label!r}, is_real={self.is_real}, "
            f"interactions={len(self.interactions)}, users={n_users}, items={len(self.items)})"
        )


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """The hex sha256 of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def require_file(path: Path, dataset: str) -> Path:
    """``path`` if it is a file, else a :class:`DatasetNotAvailableError` saying how to get the dataset."""
    if not path.is_file():
        raise DatasetNotAvailableError(
            f"{dataset}: expected file {path} is missing. Run `python -m recjudge_utils.data fetch {dataset}` "
            f"or see data/README.md for where to download it and where to put it."
        )
    return path


def _read_bytes_checked(path: Path) -> bytes:
    """Whole file as bytes, transparently gunzipped for ``.gz``; a truncated/corrupt gzip is a DataFormatError."""
    raw = path.read_bytes()
    if path.suffix != ".gz":
        return raw
    try:
        return gzip.decompress(raw)
    except (EOFError, OSError, zlib.error) as exc:
        raise DataFormatError(f"{path}: truncated or corrupt gzip file ({exc}); download it again") from exc


def iter_lines(path: Path, encoding: str = "utf-8") -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, line without newline), streaming; gzip by suffix; clear errors."""
    opener: Callable[..., Any] = gzip.open if path.suffix == ".gz" else open
    lineno = 0
    try:
        with opener(path, "rt", encoding=encoding, newline="") as fh:
            for lineno, line in enumerate(fh, start=1):
                yield lineno, line.rstrip("\r\n")
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise DataFormatError(
            f"{path}: truncated or corrupt gzip file after line {lineno} ({exc}); download it again"
        ) from exc
    except UnicodeDecodeError as exc:
        raise DataFormatError(f"{path}: line {lineno + 1} is not valid {encoding} ({exc})") from exc


def iter_json_lines(path: Path, parser: Callable[[str], Any] | None = None) -> Iterator[tuple[int, dict]]:
    """Yield (line number, record) for a JSON-lines file (gzip by suffix); blank lines are skipped."""
    parse = parser or json.loads
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        try:
            rec = parse(line)
        except (ValueError, SyntaxError) as exc:
            raise DataFormatError(f"{path}: line {lineno} is not a valid record ({type(exc).__name__}: {exc})") from exc
        if not isinstance(rec, dict):
            raise DataFormatError(f"{path}: line {lineno} is not an object/dict record")
        yield lineno, rec


def require_keys(rec: dict, keys: Sequence[str], path: Path, lineno: int) -> None:
    """Raise :class:`DataFormatError` naming the file and line if ``rec`` lacks any of ``keys``."""
    missing = [k for k in keys if k not in rec]
    if missing:
        raise DataFormatError(f"{path}: line {lineno} lacks field(s) {missing} (has {sorted(rec)[:12]})")


def read_delimited(
    path: Path,
    sep: str,
    names: Sequence[str],
    *,
    encoding: str = "utf-8",
    header: bool = False,
    numeric: dict[str, str] | None = None,
    required: Sequence[str] | None = None,
    quoting_none: bool = True,
    na_values: Sequence[str] = (),
) -> pd.DataFrame:
    """Read a separated text file as strings, check every row has all fields, convert numeric columns.

    ``names``: the expected columns in order (for ``header=True`` the file's header must contain them and the file's
    own column order is used). ``numeric``: column -> "int" or "float"; a value that does not parse is reported with
    its line number. ``required``: columns that may not be empty (default: all of ``names``).
    Lines are counted from 1 including the header line.
    """
    names = list(names)
    numeric = numeric or {}
    required = list(names if required is None else required)
    raw = _read_bytes_checked(path)
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DataFormatError(f"{path}: line {line} is not valid {encoding} ({exc.reason})") from exc
    first_line = 2 if header else 1
    kwargs: dict[str, Any] = {
        "dtype": str,
        "keep_default_na": False,
        "na_values": list(na_values),
        "skip_blank_lines": False,
        "encoding": None,
    }
    if quoting_none:
        kwargs["quoting"] = 3  # csv.QUOTE_NONE: separators never appear quoted in these formats
    if len(sep) > 1 and "\t" not in text:
        # multi-character separators (MovieLens-1M "::") need pandas' slow python engine; a file without tabs
        # can use the fast C engine after swapping the separator for a tab
        text, sep_used = text.replace(sep, "\t"), "\t"
    else:
        sep_used = sep
    engine = "python" if len(sep_used) > 1 else "c"
    fast = _fast_read(text, sep_used, engine, names, header, numeric, required, kwargs)
    if fast is not None:
        return fast
    try:
        df = pd.read_csv(io.StringIO(text), sep=sep_used, engine=engine, header=None, index_col=False, **kwargs)
    except pd.errors.ParserError as exc:
        raise DataFormatError(f"{path}: cannot parse as {sep!r}-separated {names}: {exc}") from exc
    except pd.errors.EmptyDataError as exc:
        raise DataFormatError(f"{path}: file is empty") from exc
    if header:
        file_cols = [str(c).strip() for c in df.iloc[0].tolist()]
        missing = [c for c in names if c not in file_cols]
        if missing:
            raise DataFormatError(
                f"{path}: header (line 1) lacks column(s) {missing}; found {file_cols} "
                f"(expected a {sep!r}-separated file with columns {names})"
            )
        df = df.iloc[1:].reset_index(drop=True)
        df.columns = file_cols
    else:
        if df.shape[1] != len(names):
            raise DataFormatError(
                f"{path}: line 1 has {df.shape[1]} field(s) but this format has {len(names)} "
                f"{sep!r}-separated fields {names}; is this the right file / separator?"
            )
        df.columns = names
    while len(df) and df.iloc[-1].isna().all():  # blank lines at the very end of the file are harmless
        df = df.iloc[:-1]
    df = df.reset_index(drop=True).copy()
    # a row with too few fields (e.g. wrong separator) shows up as missing values in the trailing columns
    for col in required:
        bad = df[col].isna() | (df[col] == "")
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            lines = text.splitlines()
            shown = lines[row + first_line - 1] if row + first_line - 1 < len(lines) else ""
            raise DataFormatError(
                f"{path}: line {row + first_line}: missing value for column {col!r} "
                f"(expected {len(names)} {sep!r}-separated fields {names}); line reads {shown[:120]!r}"
            )
    for col, kind in numeric.items():
        values = pd.to_numeric(df[col], errors="coerce")
        bad = values.isna() & df[col].notna()
        if kind == "int":
            bad = bad | (values.notna() & (values != np.floor(values.fillna(0))))
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataFormatError(
                f"{path}: line {row + first_line}: column {col!r} should be {kind} but is {df[col].iloc[row]!r}"
            )
        df[col] = values.astype("int64") if kind == "int" and not values.isna().any() else values.astype("float64")
    return df.reset_index(drop=True)


def _fast_read(
    text: str,
    sep: str,
    engine: str,
    names: list[str],
    header: bool,
    numeric: dict[str, str],
    required: list[str],
    kwargs: dict[str, Any],
) -> pd.DataFrame | None:
    """Parse with typed columns in one pass; None whenever anything is off (the careful path then names the line).

    Parsing numbers as strings and converting them afterwards costs ~1.5 s per column on a million rows, so the
    well-formed case is read directly with the target dtypes; any irregularity falls back to the careful path.
    """
    kinds = {"int": "int64", "float": "float64"}
    opts = {k: v for k, v in kwargs.items() if k != "dtype"}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            if header:
                dtype: defaultdict[str | int, type[str] | str] = defaultdict(
                    lambda: str, {c: kinds[k] for c, k in numeric.items()}
                )
                df = pd.read_csv(
                    io.StringIO(text), sep=sep, engine=engine, header=0, index_col=False, dtype=dtype, **opts
                )
                df.columns = [str(c).strip() for c in df.columns]
                if any(c not in df.columns for c in names):
                    return None
            else:
                dtype = defaultdict(lambda: str, {names.index(c): kinds[k] for c, k in numeric.items()})
                df = pd.read_csv(
                    io.StringIO(text), sep=sep, engine=engine, header=None, index_col=False, dtype=dtype, **opts
                )
                if df.shape[1] != len(names):
                    return None
                df.columns = names
    except (ValueError, TypeError, OverflowError, pd.errors.ParserError, Warning):
        return None
    for col in required:
        if df[col].isna().any() or (col not in numeric and (df[col] == "").any()):
            return None
    for col, kind in numeric.items():
        if str(df[col].dtype) != kinds[kind]:
            return None
    return df


def tidy_interactions(df: pd.DataFrame) -> pd.DataFrame:
    """Columns user, item (int64), rating (float64), timestamp (int64), sorted by (user, timestamp, item)."""
    out = pd.DataFrame(
        {
            "user": df["user"].astype("int64").to_numpy(),
            "item": df["item"].astype("int64").to_numpy(),
            "rating": df["rating"].astype("float64").to_numpy(),
            "timestamp": df["timestamp"].astype("int64").to_numpy(),
        }
    )
    extra = [c for c in df.columns if c not in out.columns]
    for c in extra:
        out[c] = df[c].to_numpy()
    return out.sort_values(["user", "timestamp", "item"], kind="stable").reset_index(drop=True)


def encode_ids(values: pd.Series, name: str) -> tuple[np.ndarray, pd.DataFrame]:
    """Map string ids to 0..n-1 ints in order of first appearance; return codes and the mapping frame."""
    codes, uniques = pd.factorize(values.astype(str), sort=False)
    mapping = pd.DataFrame({name: np.arange(len(uniques), dtype="int64"), f"original_{name}_id": list(uniques)})
    return codes.astype("int64"), mapping


@dataclass
class SerendipityPairs:
    """(user, judged item, history, 5-level serendipity g) pairs for validating a serendipity judge.

    ``pairs``: user, item, g (int 1..5), history (list[int], the user's last n items before the judged one,
    oldest first) plus source-specific columns. ``items``: item, title, genres. ``label`` goes into every table and
    figure title; ``is_real`` is False for the ML-100K proxy stand-in. ``extra["users_of"]`` names the dataset whose
    user ids the pairs carry (the stand-in's are MovieLens-100K's), so a chapter judging that dataset knows when a
    judged user is also a few-shot example's user.
    """

    pairs: pd.DataFrame
    items: pd.DataFrame
    label: str
    is_real: bool
    source: str
    extra: dict[str, Any] = field(default_factory=dict)
    # the words every prompt uses for this dataset's items (from its card; neutral words when there is none)
    domain: DomainWords = NEUTRAL_DOMAIN

    @property
    def display_label(self) -> str:
        """The label for titles, marked ``[STAND-IN]`` when this is not the paper's real data."""
        return self.label if self.is_real else f"{self.label} [STAND-IN]"

    def g_distribution(self) -> pd.Series:
        """Counts of g = 1..5 (all five levels, zeros included)."""
        counts = self.pairs["g"].value_counts().reindex(range(1, 6), fill_value=0).astype("int64")
        return counts.rename("pairs").rename_axis("g")

    def __repr__(self) -> str:
        dist = ", ".join(f"{k}:{v}" for k, v in self.g_distribution().items())
        return f"SerendipityPairs(label={self.label!r}, is_real={self.is_real}, pairs={len(self.pairs)}, g={{{dist}}})"


def round_half_up(x: np.ndarray | float) -> np.ndarray:
    """Round to the nearest integer with .5 going up (``np.round`` would send 2.5 to 2)."""
    return np.floor(np.asarray(x, dtype="float64") + 0.5)


def unix_seconds(when: pd.Series) -> np.ndarray:
    """int64 unix seconds of a tz-aware (or naive = UTC) datetime Series, whatever its resolution."""
    if when.dt.tz is None:
        when = when.dt.tz_localize("UTC")
    return ((when - pd.Timestamp("1970-01-01", tz="UTC")) // pd.Timedelta(seconds=1)).to_numpy().astype("int64")
