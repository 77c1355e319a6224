"""A dataset is a folder: RecBole atomic files or plain tables, plus an optional card, read into a ``Dataset``.

The folder holds one of two layouts:

* RecBole atomic files (as RecBole documents them): ``<name>.inter`` and, optionally, ``<name>.item`` and
  ``<name>.user``; tab-separated, UTF-8, a header of typed fields ``name:type`` with type ``token`` (one discrete
  value, kept as text), ``token_seq`` (space-separated tokens), ``float`` or ``float_seq`` (space-separated numbers).
  A ``token_seq`` column is a list only where the card (or the default, the genres column) says it is one: RecBole
  also stores titles and names as ``token_seq``, which are read as the text they are.
* ``interactions.csv|tsv|parquet`` and, optionally, ``items.csv|tsv|parquet`` and ``users.csv|tsv|parquet``, each
  with a header (CSV: comma-separated with ``"`` quoting; TSV: tab-separated, no quoting). A list column is split on
  ``items.list_separator`` (default ``|``); in Parquet it may be a list column.

and optionally the card ``recjudge.yaml`` (:mod:`recjudge_utils.data.card`). What the card leaves out is inferred,
and :func:`load_folder_dataset` says what it assumed (``Dataset.extra["assumptions"]``, printed in one block when
verbose). Everything is checked before the dataset is returned; a problem is a :class:`DataFormatError` naming the
file, the line (Parquet: the row; the card: the key's line) and what is wrong.

The result has the shape of the named datasets' loaders: ``interactions`` user, item (int64), rating (float64; 1.0
for implicit feedback), timestamp (int64 unix seconds; the row's position when there is no time column), sorted by
(user, timestamp, item); ``items`` item, title, genres (list of str) and the catalogue's other columns under their own
names; ``users`` user and the users file's columns, or None. Ids that are all integers are kept as they are (as the
MovieLens loaders keep theirs); otherwise they are mapped to 0..n-1 in order of first appearance (interactions first,
then the catalogue's other entries), as the Goodreads and Amazon loaders do, with the mappings in
``extra["user_ids"]`` / ``extra["item_ids"]`` and the original ids in ``original_user_id`` / ``original_item_id``.
``extra["card"]`` is the card with every inferred key filled in; :func:`item_texts` gives the text the judge sees for
an item.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import yaml

from ..paths import shown_path
from ..registry import suggestion
from ._common import DataFormatError, Dataset, unix_seconds
from .card import CARD_FILE, CardColumns, CardItems, CardRatings, DatasetCard, card_line, read_card
from .stats import dataset_statistics

__all__ = [
    "RECBOLE_TYPES",
    "TABLE_SUFFIXES",
    "FolderFiles",
    "card_describes",
    "check_report",
    "find_folder_files",
    "is_folder_dataset",
    "item_texts",
    "judge_item_texts",
    "load_folder_dataset",
]

RECBOLE_TYPES = ("token", "token_seq", "float", "float_seq")
TABLE_SUFFIXES = (".csv", ".tsv", ".parquet")
Format = Literal["recbole", "csv", "tsv", "parquet"]

_RECBOLE_DEFAULTS = {"user": "user_id", "item": "item_id", "rating": "rating", "time": "timestamp"}
_TABLE_DEFAULTS = {"user": "user", "item": "item", "rating": "rating", "time": "timestamp"}
_GENRE_NAMES = ("genres", "genre", "class", "categories", "category")
_INT_ID = r"^-?(0|[1-9][0-9]{0,17})$"  # canonical integers only: "007" stays a string id
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_MS_ABOVE = 1e11  # epoch seconds this large are after the year 5000: such values are milliseconds


@dataclass(frozen=True)
class FolderFiles:
    """The files of a folder dataset: the layout and which files it has."""

    folder: Path
    layout: Literal["recbole", "table"]
    interactions: Path
    items: Path | None
    users: Path | None
    card: Path | None

    def describe(self) -> str:
        """One line: the layout and the file names."""
        names = ", ".join(p.name for p in (self.interactions, self.items, self.users) if p is not None)
        kind = "RecBole atomic files" if self.layout == "recbole" else "tables"
        card = f"; card {self.card.name}" if self.card is not None else "; no card"
        return f"{kind} {names}{card}"


def is_folder_dataset(path: Path | str) -> bool:
    """Whether ``path`` is a folder holding a ``*.inter`` file or an ``interactions.*`` table."""
    folder = Path(path)
    if not folder.is_dir():
        return False
    return any(folder.glob("*.inter")) or any((folder / f"interactions{s}").is_file() for s in TABLE_SUFFIXES)


def _one_table(folder: Path, stem: str) -> Path | None:
    found = [folder / f"{stem}{s}" for s in TABLE_SUFFIXES if (folder / f"{stem}{s}").is_file()]
    if len(found) > 1:
        raise DataFormatError(
            f"{folder}: {len(found)} {stem} files ({', '.join(p.name for p in found)}); keep exactly one"
        )
    return found[0] if found else None


def find_folder_files(path: Path | str) -> FolderFiles:
    """The layout and files of the folder ``path``; no interactions file (or two layouts at once) is refused."""
    folder = Path(path)
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise DataFormatError(f"{folder}: {what}; a dataset is a folder of RecBole atomic files or tables")
    card = folder / CARD_FILE if (folder / CARD_FILE).is_file() else None
    inters = sorted(folder.glob("*.inter"))
    tables = [folder / f"interactions{s}" for s in TABLE_SUFFIXES if (folder / f"interactions{s}").is_file()]
    if not inters and not tables:
        held = sorted(p.name for p in folder.iterdir())
        raise DataFormatError(
            f"{folder}: missing file: no interactions file. Expected RecBole atomic files (<name>.inter, optionally "
            f"<name>.item and <name>.user) or interactions.csv|tsv|parquet (optionally items.* and users.*); "
            f"the folder holds: {', '.join(held[:20]) if held else 'nothing'}"
        )
    if len(inters) + len(tables) > 1:
        names = ", ".join(p.name for p in [*inters, *tables])
        raise DataFormatError(f"{folder}: more than one interactions file ({names}); keep exactly one")
    if inters:
        stem = inters[0].stem
        for suffix in ("item", "user"):
            other = [p.name for p in folder.glob(f"*.{suffix}") if p.stem != stem]
            if other:
                raise DataFormatError(
                    f"{folder}: {other[0]} does not belong to {inters[0].name}: RecBole atomic files share one name "
                    f"(expected {stem}.{suffix})"
                )
        item, user = folder / f"{stem}.item", folder / f"{stem}.user"
        return FolderFiles(
            folder,
            "recbole",
            inters[0],
            item if item.is_file() else None,
            user if user.is_file() else None,
            card,
        )
    return FolderFiles(folder, "table", tables[0], _one_table(folder, "items"), _one_table(folder, "users"), card)


# --------------------------------------------------------------------------------------------------- reading tables


@dataclass
class _Table:
    """One file read as an Arrow table (text formats: every column as text), with where each row came from."""

    path: Path
    fmt: Format
    data: pa.Table
    types: dict[str, str] = field(default_factory=dict)  # RecBole's declared type per (bare) column name
    _lines: list[int] | None = None

    @property
    def columns(self) -> list[str]:
        return list(self.data.column_names)

    def column(self, name: str) -> pa.Array:
        return self.data.column(name).combine_chunks()

    def place(self, row: int) -> str:
        """``line N`` (text files; lines count from 1 and the header is line 1) or ``row N`` (Parquet)."""
        return f"row {row + 1}" if self.fmt == "parquet" else f"line {self._line_of(row)}"

    def where(self, row: int) -> str:
        """``<file>: line N`` or ``<file>: row N``: where the data row ``row`` (0-based) is."""
        return f"{self.path}: {self.place(row)}"

    def _line_of(self, row: int) -> int:
        if self._lines is None:  # only on the way to an error: the file is scanned once, as csv reads it
            lines: list[int] = []
            with open(self.path, encoding="utf-8-sig", errors="replace", newline="") as fh:
                reader = csv.reader(fh, **_csv_dialect(self.fmt))
                next(reader, None)
                for record in reader:
                    if record:
                        lines.append(reader.line_num)
            self._lines = lines
        return self._lines[row] if row < len(self._lines) else row + 2


def _csv_dialect(fmt: Format) -> dict[str, Any]:
    if fmt == "csv":
        return {"delimiter": ",", "quotechar": '"', "doublequote": True}
    return {"delimiter": "\t", "quoting": csv.QUOTE_NONE}


def _header(path: Path, fmt: Format) -> list[str]:
    with open(path, "rb") as fh:
        first = fh.readline()
    try:
        line = first.decode("utf-8-sig").rstrip("\r\n")
    except UnicodeDecodeError as exc:
        raise DataFormatError(f"{path}: line 1 (the header) is not valid UTF-8 ({exc.reason})") from exc
    if not line.strip():
        raise DataFormatError(f"{path}: line 1 (the header) is empty; the first line names the columns")
    names = next(csv.reader([line], **_csv_dialect(fmt)))
    return [n.strip() for n in names]


def _recbole_names(path: Path, raw: list[str]) -> tuple[list[str], dict[str, str]]:
    names, types = [], {}
    for i, entry in enumerate(raw, start=1):
        name, sep, ftype = entry.rpartition(":")
        if not sep or not name:
            raise DataFormatError(
                f"{path}: line 1, column {i}: header field {entry!r} has no type; RecBole atomic files name each "
                f"column name:type with type one of {', '.join(RECBOLE_TYPES)} (e.g. user_id:token)"
            )
        if ftype not in RECBOLE_TYPES:
            raise DataFormatError(
                f"{path}: line 1, column {i}: header field {entry!r} has type {ftype!r}"
                f"{suggestion(ftype, RECBOLE_TYPES)}; RecBole's types are {', '.join(RECBOLE_TYPES)}"
            )
        names.append(name)
        types[name] = ftype
    return names, types


def _scan_for_error(path: Path, fmt: Format, n_fields: int, cause: Exception) -> DataFormatError:
    """The first line of a text file that does not have ``n_fields`` fields or is not UTF-8 (the careful path)."""
    lineno = 1
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh, **_csv_dialect(fmt))
            next(reader, None)
            for record in reader:
                lineno = reader.line_num
                if record and len(record) != n_fields:
                    shown = (("," if fmt == "csv" else "\t").join(record))[:120]
                    sep = "comma" if fmt == "csv" else "tab"
                    return DataFormatError(
                        f"{path}: line {lineno} has {len(record)} field(s) but the header (line 1) names {n_fields} "
                        f"({sep}-separated); line reads {shown!r}"
                    )
    except UnicodeDecodeError as exc:
        return DataFormatError(f"{path}: line {lineno + 1} is not valid UTF-8 ({exc.reason})")
    except csv.Error as exc:
        return DataFormatError(f"{path}: line {lineno + 1}: cannot be parsed ({exc})")
    return DataFormatError(f"{path}: cannot be read as a {fmt.upper()} file ({cause})")


def _read_table(path: Path, fmt: Format) -> _Table:
    """Read one file; an empty file, a header without rows or a malformed line is a :class:`DataFormatError`."""
    if path.stat().st_size == 0:
        raise DataFormatError(f"{path}: file is empty (0 bytes): expected a header line and rows")
    if fmt == "parquet":
        try:
            data = pq.read_table(path)
        except (pa.ArrowException, OSError) as exc:
            raise DataFormatError(f"{path}: not a readable Parquet file ({exc})") from exc
        if data.num_rows == 0:
            raise DataFormatError(f"{path}: file is empty: it has columns {data.column_names} but no rows")
        _check_unique_names(path, [str(c) for c in data.column_names])
        return _Table(path, fmt, data)
    raw = _header(path, fmt)
    names, types = _recbole_names(path, raw) if fmt == "recbole" else (raw, {})
    _check_unique_names(path, names)
    parse = pacsv.ParseOptions(
        delimiter="," if fmt == "csv" else "\t",
        quote_char='"' if fmt == "csv" else False,
        double_quote=fmt == "csv",
        newlines_in_values=fmt == "csv",  # a quoted CSV field may hold a line break (a description, a review)
    )
    convert = pacsv.ConvertOptions(
        column_types=dict.fromkeys(names, pa.string()),
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
    )
    read = pacsv.ReadOptions(column_names=names, skip_rows=1)
    try:
        data = pacsv.read_csv(path, read_options=read, parse_options=parse, convert_options=convert)
    except pa.ArrowInvalid as exc:
        raise _scan_for_error(path, fmt, len(names), exc) from None
    if data.num_rows == 0:
        raise DataFormatError(f"{path}: file is empty: it has a header (line 1) but no rows")
    return _Table(path, fmt, data, types)


def _check_unique_names(path: Path, names: list[str]) -> None:
    seen: set[str] = set()
    for i, name in enumerate(names, start=1):
        if name in seen:
            raise DataFormatError(f"{path}: line 1, column {i}: column name {name!r} appears twice in the header")
        seen.add(name)


def _fmt_of(path: Path, layout: str) -> Format:
    if layout == "recbole":
        return "recbole"
    suffix = path.suffix.lstrip(".")
    return "parquet" if suffix == "parquet" else "tsv" if suffix == "tsv" else "csv"


# --------------------------------------------------------------------------------------------------- values


def _blank(arr: pa.Array) -> np.ndarray:
    """True where a value is missing (null, or text that is empty or only spaces)."""
    missing = pc.is_null(arr)
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        missing = pc.or_(missing, pc.equal(pc.utf8_trim_whitespace(arr), ""))
    elif pa.types.is_floating(arr.type):
        missing = pc.or_(missing, pc.is_nan(arr))
    return np.asarray(missing.to_numpy(zero_copy_only=False), dtype=bool)


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _id_values(table: _Table, col: str, role: str) -> pa.Array:
    """The id column as int64 or text, refusing an entirely empty column and any empty value."""
    arr = table.column(col)
    missing = _blank(arr)
    if missing.all():
        raise DataFormatError(f"{table.path}: column {col!r} (the {role} id) is entirely empty")
    if missing.any():
        row = _first(missing)
        raise DataFormatError(f"{table.where(row)}: column {col!r} (the {role} id) is empty")
    if pa.types.is_integer(arr.type):
        return arr.cast(pa.int64())
    if pa.types.is_floating(arr.type):  # e.g. a Parquet column pandas wrote as float
        values = arr.to_numpy(zero_copy_only=False)
        if np.all(values == np.floor(values)):
            return pa.array(values.astype("int64"))
    return arr.cast(pa.string())


def _unify_ids(arrays: list[pa.Array]) -> tuple[list[pa.Array], bool]:
    """All int64 if every id is a (canonical) integer, else all text; returns (arrays, whether ints)."""
    ints = True
    for arr in arrays:
        if pa.types.is_integer(arr.type):
            continue
        if not pc.all(pc.match_substring_regex(arr, _INT_ID)).as_py():
            ints = False
            break
    if ints:
        return [a if pa.types.is_integer(a.type) else a.cast(pa.int64()) for a in arrays], True
    return [a.cast(pa.string()) for a in arrays], False


def _encode(arrays: list[pa.Array], ints: bool, name: str) -> tuple[list[np.ndarray], pd.DataFrame | None]:
    """Codes per array: the ids themselves (ints) or 0..n-1 in order of first appearance over the arrays in turn."""
    if ints:
        return [np.asarray(a.to_numpy(zero_copy_only=False), dtype="int64") for a in arrays], None
    lengths = [len(a) for a in arrays]
    encoded = pc.dictionary_encode(pa.chunked_array(arrays, type=pa.string()).combine_chunks())
    codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype="int64")
    bounds = np.cumsum([0, *lengths])
    parts = [codes[bounds[i] : bounds[i + 1]] for i in range(len(arrays))]
    originals = encoded.dictionary.to_pylist()
    mapping = pd.DataFrame({name: np.arange(len(originals), dtype="int64"), f"original_{name}_id": originals})
    mapping[f"original_{name}_id"] = mapping[f"original_{name}_id"].astype("str")
    return parts, mapping


def _numbers(table: _Table, col: str, what: str) -> np.ndarray:
    """A numeric column as float64; an empty or non-numeric value is refused with its line."""
    arr = table.column(col)
    if pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type) or pa.types.is_decimal(arr.type):
        values = np.asarray(arr.cast(pa.float64()).to_numpy(zero_copy_only=False), dtype="float64")
    elif pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        try:
            values = np.asarray(arr.cast(pa.float64()).to_numpy(zero_copy_only=False), dtype="float64")
        except pa.ArrowInvalid:
            try:
                values = pc.utf8_trim_whitespace(arr).cast(pa.float64()).to_numpy(zero_copy_only=False)
            except pa.ArrowInvalid:
                text = pd.Series(arr.to_numpy(zero_copy_only=False), dtype="object")
                parsed = pd.to_numeric(text.str.strip(), errors="coerce")
                row = _first(parsed.isna().to_numpy())
                shown = text.iloc[row]
                problem = "is empty" if not str(shown).strip() else f"should be a number but is {shown!r}"
                raise DataFormatError(f"{table.where(row)}: column {col!r} ({what}) {problem}") from None
    else:
        raise DataFormatError(f"{table.path}: column {col!r} ({what}) should be numbers but has type {arr.type}")
    bad = ~np.isfinite(values)
    if bad.any():
        row = _first(bad)
        raw = arr[row].as_py()
        problem = "is empty" if raw is None or str(raw).strip() == "" else f"should be a finite number but is {raw!r}"
        raise DataFormatError(f"{table.where(row)}: column {col!r} ({what}) {problem}")
    return values


def _looks_numeric(arr: pa.Array) -> bool:
    if pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type):
        return True
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        return False
    try:
        pc.utf8_trim_whitespace(arr).cast(pa.float64())
    except pa.ArrowInvalid:
        return False
    return True


def _times(table: _Table, col: str, unit: str) -> tuple[np.ndarray, bool]:
    """Unix seconds (int64) of the time column in ``unit``; returns (seconds, whether ISO times had no zone)."""
    arr = table.column(col)
    if unit in ("s", "ms"):
        if pa.types.is_timestamp(arr.type) or pa.types.is_date(arr.type):
            raise DataFormatError(
                f"{table.path}: column {col!r} holds dates ({arr.type}) but time_unit is {unit!r}: set time_unit: iso"
            )
        what = "the time, epoch seconds" if unit == "s" else "the time, epoch milliseconds"
        values = _numbers(table, col, what)
        return np.floor(values / (1000.0 if unit == "ms" else 1.0)).astype("int64"), False
    if pa.types.is_date(arr.type):
        arr = arr.cast(pa.timestamp("s"))
    if pa.types.is_timestamp(arr.type):
        missing = _blank(arr)
        if missing.any():
            raise DataFormatError(f"{table.where(_first(missing))}: column {col!r} (the time) is empty")
        when = pd.Series(arr.to_pandas())
        return unix_seconds(when), getattr(arr.type, "tz", None) is None
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        raise DataFormatError(f"{table.path}: column {col!r} (the time) has type {arr.type}, not ISO 8601 dates")
    naive = False
    try:
        stamps = arr.cast(pa.timestamp("us"))
        naive = True
    except pa.ArrowInvalid:
        try:
            stamps = arr.cast(pa.timestamp("us", tz="UTC"))
        except pa.ArrowInvalid:
            stamps = None
    if stamps is not None:
        return unix_seconds(pd.Series(stamps.to_pandas())), naive
    text = pd.Series(arr.to_numpy(zero_copy_only=False), dtype="object")
    when = pd.to_datetime(text, format="ISO8601", utc=True, errors="coerce")
    if when.isna().any():
        row = _first(when.isna().to_numpy())
        shown = text.iloc[row]
        problem = "is empty" if not str(shown).strip() else f"cannot be read as an ISO 8601 date/time: {shown!r}"
        raise DataFormatError(f"{table.where(row)}: column {col!r} (the time) {problem}")
    return unix_seconds(when), False


def _split(values: Iterable[Any], sep: str | None) -> list[list[str]]:
    out: list[list[str]] = []
    for v in values:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            out.append([])
        elif isinstance(v, list | tuple | np.ndarray):
            out.append([str(x) for x in v if x is not None and str(x).strip()])
        else:
            parts = str(v).split() if sep is None else str(v).split(sep)
            out.append([p.strip() for p in parts if p.strip()])
    return out


def _split_column(table: _Table, col: str, sep: str) -> list[list[str]]:
    """A list column: RecBole token_seq on spaces, CSV/TSV/Parquet text on ``sep``, Parquet lists as they are."""
    return _split(table.column(col).to_pylist(), None if table.fmt == "recbole" else sep)


def _attribute(table: _Table, col: str, as_list: bool, sep: str) -> pd.Series | list[Any]:
    """An item or user column in one form whatever the layout: text, Int64/Float64 numbers, or lists."""
    arr = table.column(col)
    rtype = table.types.get(col)
    if rtype == "float_seq":
        out: list[list[float]] = []
        for row, tokens in enumerate(_split(arr.to_pylist(), None)):
            try:
                out.append([float(t) for t in tokens])
            except ValueError:
                raise DataFormatError(
                    f"{table.where(row)}: column {col!r} (float_seq) should be space-separated numbers: {tokens!r}"
                ) from None
        return out
    if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
        return _split(arr.to_pylist(), None)
    if as_list:
        return _split_column(table, col, sep)
    if rtype in ("token", "token_seq"):
        return _text(arr)
    if rtype == "float":
        return _numeric(_floats_or_blank(table, col))
    if pa.types.is_boolean(arr.type):
        return pd.Series(arr.to_pandas(), dtype="boolean")
    if pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type):
        return _numeric(np.asarray(arr.cast(pa.float64()).to_numpy(zero_copy_only=False), dtype="float64"))
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        text = [None if v is None or not v.strip() else v.strip() for v in arr.to_pylist()]
        present = [v for v in text if v is not None]
        # numbers only if every value is one and none is written with a leading zero (codes such as zip 05201)
        if present and all(_NUMBER.match(v) and not re.match(r"^[+-]?0\d", v) for v in present):
            return _numeric(np.array([np.nan if v is None else float(v) for v in text], dtype="float64"))
        return _text(arr)
    return pd.Series(arr.to_pandas())


def _floats_or_blank(table: _Table, col: str) -> np.ndarray:
    """A RecBole ``float`` attribute: numbers, an empty value is NaN (RecBole fills it later), text is refused."""
    arr = table.column(col)
    blank = _blank(arr)
    text = pd.Series(arr.to_numpy(zero_copy_only=False), dtype="object")
    parsed = pd.to_numeric(text.where(~blank, None).str.strip(), errors="coerce").to_numpy(dtype="float64")
    bad = np.isnan(parsed) & ~blank
    if bad.any():
        row = _first(bad)
        raise DataFormatError(
            f"{table.where(row)}: column {col!r} (float) should be a number but is {text.iloc[row]!r}"
        )
    return parsed


def _numeric(values: np.ndarray) -> pd.Series:
    """Int64 when every present value is a whole number, else Float64; NaN becomes <NA>."""
    nan = np.isnan(values)
    present = values[~nan]
    if len(present) and np.all(present == np.floor(present)) and np.all(np.abs(present) < 2**53):
        return pd.Series(pd.arrays.IntegerArray(np.where(nan, 0, values).astype("int64"), nan))
    return pd.Series(pd.arrays.FloatingArray(np.where(nan, 0.0, values), nan))


def _text(arr: pa.Array) -> pd.Series:
    values = [None if v is None or not str(v).strip() else str(v) for v in arr.to_pylist()]
    return pd.Series(values, dtype="str")


# --------------------------------------------------------------------------------------------------- the card


@dataclass
class _CardRef:
    """The card (or an empty one) and where its keys are, for messages."""

    card: DatasetCard
    path: Path | None
    node: yaml.Node | None

    def at(self, *loc: str | int) -> str:
        if self.path is None:
            return "(no card)"
        line = card_line(self.node, loc)
        return f"{self.path}: line {line}" if line is not None else str(self.path)


def _no_column(ref: _CardRef, loc: tuple[str | int, ...], name: str, table: _Table | None, what: str) -> None:
    key = ".".join(str(p) for p in loc)
    if table is None:
        raise DataFormatError(f"{ref.at(*loc)}: {key} names {name!r} but the folder has no {what} file")
    if name not in table.columns:
        raise DataFormatError(
            f"{ref.at(*loc)}: {key} names {name!r}, which is no column of {table.path.name}"
            f"{suggestion(name, table.columns)}; its columns are {', '.join(table.columns)}"
        )


def _pick(ref: _CardRef, key: str, table: _Table, defaults: Sequence[str]) -> str | None:
    named = getattr(ref.card.columns, key)
    if named is not None:
        _no_column(ref, ("columns", key), named, table, "interactions")
        return str(named)
    for name in defaults:
        if name in table.columns:
            return name
    return None


# --------------------------------------------------------------------------------------------------- the loader


def load_folder_dataset(path: Path | str, verbose: bool = True) -> Dataset:
    """Read, check and return the folder dataset at ``path`` (see the module docstring).

    Every problem is a :class:`DataFormatError` naming the file, the line (or column, or the card's key) and what is
    wrong, raised before the dataset is returned. ``verbose`` prints what was assumed (in one block), then one line of
    sizes and the source.
    """
    files = find_folder_files(path)
    folder = files.folder
    if files.card is not None:
        card, node = read_card(files.card)
        ref = _CardRef(card, files.card, node)
    else:
        ref = _CardRef(DatasetCard(), None, None)
    card = ref.card
    assumptions: list[str] = []
    layout_word = "RecBole's default field name" if files.layout == "recbole" else "the default name"
    defaults = _RECBOLE_DEFAULTS if files.layout == "recbole" else _TABLE_DEFAULTS
    fallback = _TABLE_DEFAULTS if files.layout == "recbole" else _RECBOLE_DEFAULTS

    inter = _read_table(files.interactions, _fmt_of(files.interactions, files.layout))
    items_t = _read_table(files.items, _fmt_of(files.items, files.layout)) if files.items else None
    users_t = _read_table(files.users, _fmt_of(files.users, files.layout)) if files.users else None

    # ---- which columns are the user, item, rating and time
    cols: dict[str, str | None] = {}
    for key in ("user", "item", "rating", "time"):
        cols[key] = _pick(ref, key, inter, (defaults[key], fallback[key]))
    found = [f"{key} {cols[key]!r}" for key in cols if getattr(card.columns, key) is None and cols[key] is not None]
    if found:
        assumptions.append(f"columns: {', '.join(found)} ({layout_word}s)")
    for key in ("user", "item"):
        if cols[key] is None:
            raise DataFormatError(
                f"{inter.path}: line 1 (the header): missing column: no {key} column (expected {defaults[key]!r}); "
                f"name it in {CARD_FILE} under columns.{key}. The columns are {', '.join(inter.columns)}"
            )
    user_col, item_col = str(cols["user"]), str(cols["item"])
    if items_t is not None and item_col not in items_t.columns:
        raise DataFormatError(
            f"{items_t.path}: line 1 (the header): missing column: no item id column {item_col!r} (the interactions' "
            f"item column){suggestion(item_col, items_t.columns)}; its columns are {', '.join(items_t.columns)}"
        )
    if users_t is not None and user_col not in users_t.columns:
        raise DataFormatError(
            f"{users_t.path}: line 1 (the header): missing column: no user id column {user_col!r} (the interactions' "
            f"user column){suggestion(user_col, users_t.columns)}; its columns are {', '.join(users_t.columns)}"
        )

    # ---- the card's item and user columns name real columns
    ci = card.items
    for key in ("title", "genres"):
        named = getattr(ci, key)
        if named is not None:
            _no_column(ref, ("items", key), named, items_t, "items")
    for key in ("lists", "describe"):
        for i, named in enumerate(getattr(ci, key) or []):
            _no_column(ref, ("items", key, i), named, items_t, "items")
    for i, named in enumerate(card.users.profile):
        _no_column(ref, ("users", "profile", i), named, users_t, "users")

    # ---- ids: present, one kind, catalogue unique, every interaction's item in the catalogue
    inter_users = _id_values(inter, user_col, "user")
    inter_items = _id_values(inter, item_col, "item")
    cat_items = _id_values(items_t, item_col, "item") if items_t is not None else None
    file_users = _id_values(users_t, user_col, "user") if users_t is not None else None
    (inter_items, *rest_items), items_int = _unify_ids([inter_items] + ([cat_items] if cat_items is not None else []))
    cat_items = rest_items[0] if rest_items else None
    (inter_users, *rest_users), users_int = _unify_ids([inter_users] + ([file_users] if file_users is not None else []))
    file_users = rest_users[0] if rest_users else None
    if items_t is not None and cat_items is not None:
        _refuse_duplicates(items_t, item_col, cat_items, "item")
        missing = ~np.asarray(pc.is_in(inter_items, value_set=cat_items).to_numpy(zero_copy_only=False), dtype=bool)
        if missing.any():
            rows = np.flatnonzero(missing)
            distinct = pc.count_distinct(inter_items.filter(pa.array(missing))).as_py()
            firsts = "; ".join(f"{inter.place(int(r))}: {inter_items[int(r)].as_py()!r}" for r in rows[:5])
            raise DataFormatError(
                f"{inter.path}: {len(rows)} interaction(s) ({distinct} distinct item(s)) name an item that is not in "
                f"the catalogue {items_t.path.name} (column {item_col!r}); the first {min(5, len(rows))}: {firsts}"
            )
    if users_t is not None and file_users is not None:
        _refuse_duplicates(users_t, user_col, file_users, "user")

    # ---- times
    time_col = cols["time"]
    unit = card.time_unit
    if time_col is None:
        timestamps = np.arange(inter.data.num_rows, dtype="int64")
        assumptions.append(
            f"time column: none, so the rows' order in {inter.path.name} is their time (timestamp = row position)"
        )
    else:
        if unit is None:
            arr = inter.column(time_col)
            if pa.types.is_timestamp(arr.type) or pa.types.is_date(arr.type) or not _looks_numeric(arr):
                unit = "iso"
                assumptions.append(f"time unit: ISO 8601 dates/times (column {time_col!r} holds dates, not numbers)")
            else:
                probe = _numbers(inter, time_col, "the time")
                unit = "ms" if float(np.nanmedian(np.abs(probe))) > _MS_ABOVE else "s"
                word = "milliseconds" if unit == "ms" else "seconds"
                assumptions.append(f"time unit: epoch {word} (column {time_col!r}, median {np.nanmedian(probe):.4g})")
        timestamps, naive = _times(inter, time_col, unit)
        if naive:
            assumptions.append(f"times without a time zone (column {time_col!r}) are read as UTC")

    # ---- ratings
    rating_col = cols["rating"]
    rc = card.ratings
    if rating_col is not None:
        ratings = _numbers(inter, rating_col, "the rating")
    else:
        ratings = np.ones(inter.data.num_rows, dtype="float64")
    low_seen, high_seen = float(ratings.min()), float(ratings.max())
    if rc.scale is not None and rating_col is not None:
        out = (ratings < rc.scale[0]) | (ratings > rc.scale[1])
        if out.any():
            row = _first(out)
            raise DataFormatError(
                f"{inter.where(row)}: column {rating_col!r} (the rating) is {ratings[row]:g}, outside the card's "
                f"scale {list(rc.scale)} ({ref.at('ratings', 'scale')})"
            )
    implicit = rc.implicit or rating_col is None
    threshold: float | None = None
    if rating_col is None and not rc.implicit:
        assumptions.append("rating column: none, so every interaction is a positive (implicit feedback, rating 1.0)")
    if rc.positive_threshold is not None:
        if rating_col is None:
            raise DataFormatError(
                f"{ref.at('ratings', 'positive_threshold')}: ratings.positive_threshold is set but {inter.path.name} "
                "has no rating column (name it under columns.rating, or set ratings.implicit: true)"
            )
        threshold = float(rc.positive_threshold)
        if not low_seen <= threshold <= high_seen:
            raise DataFormatError(
                f"{ref.at('ratings', 'positive_threshold')}: ratings.positive_threshold {threshold:g} lies outside the "
                f"ratings' range in {inter.path.name} (column {rating_col!r}: {low_seen:g}..{high_seen:g}), so "
                f"{'no' if threshold > high_seen else 'every'} interaction would be a positive"
            )
    elif not implicit:
        low, high = rc.scale if rc.scale is not None else (low_seen, high_seen)
        levels = np.unique(ratings)
        threshold = float(levels[levels >= low + 0.75 * (high - low) - 1e-9].min())
        seen = "" if rc.scale is not None else " seen"
        assumptions.append(f"positive threshold: {threshold:g} (3/4 up the ratings{seen}, {low:g}..{high:g})")
    scale = rc.scale if rc.scale is not None else ((low_seen, high_seen) if not implicit or rating_col else None)

    # ---- ids to codes
    (u_inter, *u_rest), user_map = _encode(
        [inter_users] + ([file_users] if file_users is not None else []), users_int, "user"
    )
    (i_inter, *i_rest), item_map = _encode(
        [inter_items] + ([cat_items] if cat_items is not None else []), items_int, "item"
    )
    del inter, inter_users, inter_items  # the file's text is codes and numbers now: free it before the sort
    interactions = _sorted_interactions(u_inter, i_inter, ratings, timestamps)
    del u_inter, i_inter, ratings, timestamps

    # ---- the catalogue
    items_card, items = _items_frame(
        ref, items_t, item_col, i_rest[0] if i_rest else None, interactions["item"].to_numpy(), item_map, assumptions
    )
    users = _users_frame(users_t, user_col, u_rest[0] if u_rest else None, user_map)

    name = card.name or folder.resolve().name
    label = card.label or f"{name} (folder dataset)"
    if card.domain is None:
        assumptions.append(
            "domain words: none in a card, so the prompts say 'item' / 'items' / 'interacted with' (platform 'online')"
        )
    resolved = card.model_copy(
        update={
            "name": name,
            "label": label,
            "columns": CardColumns(user=user_col, item=item_col, rating=rating_col, time=time_col),
            "time_unit": unit,
            "ratings": CardRatings.model_construct(scale=scale, positive_threshold=threshold, implicit=implicit),
            "items": items_card,
        }
    )
    source = f"Folder dataset {shown_path(folder)}: {files.describe()}."
    if card.source:
        source += f" {card.source}"
    extra: dict[str, Any] = {
        "card": resolved,
        "assumptions": assumptions,
        "files": files,
        "positive_threshold": threshold,
    }
    if user_map is not None:
        extra["user_ids"] = user_map
    if item_map is not None:
        extra["item_ids"] = item_map
    ds = Dataset(
        name=name,
        interactions=interactions,
        items=items,
        users=users,
        label=label,
        is_real=True,
        source=source,
        extra=extra,
        domain=resolved.domain_words,
    )
    if verbose:
        print(assumptions_block(ds))
        n_users = len(users) if users is not None else int(interactions["user"].nunique())
        dw = resolved.domain_words
        print(f"Loaded {label}: {len(interactions):,} interactions, {len(items):,} {dw.items}, {n_users:,} users.")
        print(f"Source: {source}")
    return ds


def _sort_order(*keys: np.ndarray) -> np.ndarray:
    """The stable order by ``keys`` (first key first): one packed int64 key when the keys' ranges fit in 62 bits
    (a single stable argsort is several times faster than ``np.lexsort`` on three keys), else ``np.lexsort``."""
    spans = [int(k.max()) - int(k.min()) + 1 if len(k) else 1 for k in keys]
    if math.prod(spans) < 2**62:
        packed = np.zeros(len(keys[0]), dtype="int64")
        for key, span in zip(keys, spans, strict=True):
            packed *= span
            packed += key.astype("int64", copy=False) - int(key.min())
        return np.argsort(packed, kind="stable")
    return np.lexsort(tuple(reversed(keys)))


def _sorted_interactions(user: np.ndarray, item: np.ndarray, rating: np.ndarray, ts: np.ndarray) -> pd.DataFrame:
    """What :func:`~recjudge_utils.data._common.tidy_interactions` returns for these columns (int64, int64, float64,
    int64, sorted stably by user, timestamp, item), made with one ``np.lexsort`` and without its frame copies (a
    10 M-interaction dataset is 320 MB a copy)."""
    order = _sort_order(user, ts, item)
    frame = pd.DataFrame(
        {
            "user": user.astype("int64", copy=False)[order],
            "item": item.astype("int64", copy=False)[order],
            "rating": rating.astype("float64", copy=False)[order],
            "timestamp": ts.astype("int64", copy=False)[order],
        },
        copy=False,
    )
    return frame


def assumptions_block(ds: Dataset) -> str:
    """The assumptions of a folder dataset as one block of text (what the card did not say)."""
    lines = ds.extra.get("assumptions", [])
    files: FolderFiles | None = ds.extra.get("files")
    card = f"{CARD_FILE} does not say" if files is not None and files.card is not None else f"no {CARD_FILE}"
    if not lines:
        return f"{ds.name}: nothing assumed (the card says it all)."
    return f"{ds.name}: assumed ({card}):\n" + "\n".join(f"  - {line}" for line in lines)


def _refuse_duplicates(table: _Table, col: str, values: pa.Array, role: str) -> None:
    ids = pd.Series(values.to_numpy(zero_copy_only=False))
    dup = ids.duplicated(keep="first").to_numpy()
    if dup.any():
        row = _first(dup)
        first = int(np.flatnonzero((ids == ids.iloc[row]).to_numpy())[0])
        place = table.place(first)
        raise DataFormatError(
            f"{table.where(row)}: duplicate {role} id {values[row].as_py()!r} in column {col!r} (first at {place}); "
            f"each {role} appears once in {table.path.name}"
        )


def _title_like(columns: Sequence[str], skip: str) -> str | None:
    if "title" in columns:
        return "title"
    return next((c for c in columns if c != skip and c.lower().endswith("title")), None)


def _items_frame(
    ref: _CardRef,
    table: _Table | None,
    item_col: str,
    cat_codes: np.ndarray | None,
    inter_codes: np.ndarray,
    item_map: pd.DataFrame | None,
    assumptions: list[str],
) -> tuple[CardItems, pd.DataFrame]:
    ci = ref.card.items
    if table is None or cat_codes is None:
        codes = np.unique(inter_codes)
        if item_map is not None:
            originals = item_map.set_index("item").loc[codes, "original_item_id"].astype(str).to_numpy()
        else:
            originals = codes.astype(str)
        items = pd.DataFrame({"item": codes, "title": pd.Series(originals, dtype="str"), "genres": [[] for _ in codes]})
        if item_map is not None:
            items["original_item_id"] = pd.Series(originals, dtype="str")
        assumptions.append("items file: none, so the judge sees only item ids (no titles, no genres)")
        return ci.model_copy(update={"describe": [], "lists": []}), items
    columns = [c for c in table.columns if c != item_col]
    title = ci.title or _title_like(columns, item_col)
    genres = ci.genres or next((c for c in _GENRE_NAMES if c in columns), None)
    if ci.title is None:
        if title is not None:
            assumptions.append(f"item title: column {title!r}")
        else:
            assumptions.append(f"item title: none in {table.path.name}, so an item's title is its id")
    if ci.genres is None and genres is not None:
        assumptions.append(f"item genres: column {genres!r}")
    lists = list(ci.lists) if ci.lists is not None else ([genres] if genres else [])
    if genres is not None and genres not in lists:
        lists.append(genres)
    if ci.lists is None and lists:
        how = {
            "recbole": "space-separated (RecBole token_seq)",
            "parquet": f"Parquet lists (or text separated by {ci.list_separator!r})",
        }.get(table.fmt, f"separated by {ci.list_separator!r}")
        assumptions.append(f"list columns: {', '.join(repr(c) for c in lists)}, {how}")
    describe = list(ci.describe) if ci.describe is not None else [c for c in (title, genres) if c]
    if ci.describe is None:
        shown = ", ".join(repr(c) for c in describe) if describe else "the item id only"
        assumptions.append(f"the judge sees: {shown}, at most {ci.max_chars} characters per item")
    items = pd.DataFrame({"item": cat_codes})
    items["title"] = _text(table.column(title if title is not None else item_col).cast(pa.string()))
    items["genres"] = _split_column(table, genres, ci.list_separator) if genres else [[] for _ in cat_codes]
    for col in columns:
        if col not in (title, genres):
            items[col] = _attribute(table, col, col in lists, ci.list_separator)
    if item_map is not None:
        items["original_item_id"] = item_map["original_item_id"].to_numpy()[cat_codes]
    items = items.sort_values("item", kind="stable").reset_index(drop=True)
    resolved = ci.model_copy(update={"title": title, "genres": genres, "lists": lists, "describe": describe})
    return resolved, items


def _users_frame(
    table: _Table | None, user_col: str, codes: np.ndarray | None, user_map: pd.DataFrame | None
) -> pd.DataFrame | None:
    if table is None or codes is None:
        return None
    data: dict[str, Any] = {"user": codes}
    for col in table.columns:
        if col != user_col:
            data[col] = _attribute(table, col, False, "|")
    users = pd.DataFrame(data)
    if user_map is not None:
        users["original_user_id"] = user_map["original_user_id"].to_numpy()[codes]
    return users.sort_values("user", kind="stable").reset_index(drop=True)


# ------------------------------------------------------------------------------------------ what the judge sees


def _value_text(value: Any) -> str:
    if isinstance(value, list | tuple | np.ndarray):
        return ", ".join(_value_text(v) for v in value if _value_text(v))
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:g}" if value != int(value) else str(int(value))
    return " ".join(str(value).split())


def item_texts(ds: Dataset, items: Iterable[int] | None = None) -> dict[int, str]:
    """The text the judge sees for each item (all items by default): the card's ``items.describe`` columns in order,
    the first as it is and the others as ``name: value`` in parentheses (the genres column as ``genres``, lists
    joined with commas), cut to ``items.max_chars``; an item with none of them is ``<item noun> <id>``."""
    card: DatasetCard | None = ds.extra.get("card")
    ci = card.items if card is not None else CardItems(describe=["title", "genres"])
    describe = ci.describe or []
    frame_col = {ci.title: "title", ci.genres: "genres"}
    frame = ds.items.drop_duplicates("item").set_index("item")
    wanted = frame.index if items is None else [int(i) for i in items]
    out: dict[int, str] = {}
    for item in wanted:
        row = frame.loc[item]
        parts: list[str] = []
        for col in describe:
            name = frame_col.get(col, col)
            text = _value_text(row[name]) if name in row.index else ""
            if not text:
                continue
            label = "genres" if name == "genres" else col.replace("_", " ")
            parts.append(text if not parts else f"{label}: {text}")
        if not parts:
            fallback = row["original_item_id"] if "original_item_id" in row.index else item
            parts = [f"{card.domain_words.item if card else 'item'} {fallback}"]
        text = parts[0] + (f" ({'; '.join(parts[1:])})" if len(parts) > 1 else "")
        out[int(item)] = text if len(text) <= ci.max_chars else text[: ci.max_chars - 1].rstrip() + "…"
    return out


def card_describes(ds: Dataset) -> CardItems | None:
    """The card's ``items`` section when it decides the judge's item line (a folder dataset), else None (a dataset
    the package knows by name: each protocol keeps its own line; see :func:`judge_item_texts`)."""
    card: DatasetCard | None = ds.extra.get("card")
    if card is None or not isinstance(ds.extra.get("files"), FolderFiles):
        return None
    return card.items


def judge_item_texts(ds: Dataset) -> dict[int, str] | None:
    """Every item's line in the judge's prompts for a folder dataset: :func:`item_texts`, the card's
    ``items.describe`` in order within ``items.max_chars``, which is what ``data check`` says the judge sees; the
    serendipity, Arena and SAER contexts show this line instead of their own (their ``texts`` argument).

    None for a dataset the package knows by name: each protocol keeps its own item line there, because the card
    road would change every prompt the chapters' MovieLens results were judged with (the named cards describe
    ``[title, genres]``, which :func:`item_texts` writes ``Title (genres: A, B)``, where the papers' prompts show
    ``Title (1995) (categories: A, B)``, ``Title (1995), genres: A, B`` and ``Title (1995) | A, B``);
    tests/prompts/test_named_prompts_unchanged.py pins those renderings."""
    return item_texts(ds) if card_describes(ds) is not None else None


def check_report(ds: Dataset, n_sample: int = 3) -> str:
    """What ``python -m recjudge_utils.data check`` prints: assumptions, sizes, time span, ratings, domain words and
    the text the judge sees for the ``n_sample`` most-interacted items."""
    card: DatasetCard = ds.extra["card"]
    files: FolderFiles = ds.extra["files"]
    stats = dataset_statistics(ds).iloc[0]
    inter = ds.interactions
    lines = [assumptions_block(ds), "", f"{ds.label}", f"  files         {files.describe()}"]
    n_cat = len(ds.items)
    lines.append(f"  users         {int(stats['users']):,}")
    lines.append(f"  items         {int(stats['items']):,} interacted with ({n_cat:,} in the catalogue)")
    lines.append(f"  interactions  {int(stats['interactions']):,}")
    lines.append(f"  categories    {int(stats['categories']):,}")
    lines.append(f"  density       {float(stats['density']):.4%}")
    if card.columns.time is not None:
        first, last = (
            pd.Timestamp(int(t), unit="s", tz="UTC") for t in (inter["timestamp"].min(), inter["timestamp"].max())
        )
        days = (last - first).total_seconds() / 86400
        lines.append(f"  time span     {first:%Y-%m-%d %H:%M} .. {last:%Y-%m-%d %H:%M} UTC ({days:,.0f} days)")
    else:
        lines.append("  time span     none (no time column: the rows' order is time)")
    rc = card.ratings
    if rc.implicit:
        lines.append("  ratings       implicit feedback: every interaction is a positive")
    else:
        positive = int((inter["rating"] >= float(rc.positive_threshold or 0)).sum())
        scale = f"{rc.scale[0]:g}..{rc.scale[1]:g}" if rc.scale else "?"
        lines.append(
            f"  ratings       scale {scale}, positive when >= {rc.positive_threshold:g}: "
            f"{positive:,} of {len(inter):,} interactions ({positive / len(inter):.0%})"
        )
    counts = inter["rating"].value_counts().sort_index()
    if len(counts) <= 21:
        lines.append("  rating histogram")
        top = int(counts.max())
        for value, count in counts.items():
            bar = "#" * max(1, round(30 * int(count) / top))
            lines.append(f"    {float(value):>6g}  {bar:<30} {int(count):,}")
    else:
        edges = np.histogram_bin_edges(inter["rating"].to_numpy(), bins=10)
        hist, _ = np.histogram(inter["rating"].to_numpy(), bins=edges)
        lines.append(f"  rating histogram ({len(counts)} distinct values, 10 bins)")
        top = int(hist.max())
        for lo, hi, count in zip(edges[:-1], edges[1:], hist, strict=True):
            bar = "#" * max(1 if count else 0, round(30 * int(count) / top))
            lines.append(f"    {lo:>8.3g}..{hi:<8.3g} {bar:<30} {int(count):,}")
    dw = card.domain_words
    given = "card" if card.domain is not None else "neutral: no domain in a card"
    lines.append(
        f"  domain words  item {dw.item!r}, items {dw.items!r}, consumed {dw.consumed!r}, platform {dw.platform!r} "
        f"({given})"
    )
    if card.users.profile:
        lines.append(f"  user profile  {', '.join(card.users.profile)}")
    popular = inter["item"].value_counts().sort_index(kind="stable").sort_values(ascending=False, kind="stable")
    sample = [int(i) for i in popular.index[:n_sample]]
    texts = item_texts(ds, sample)
    describe = ", ".join(card.items.describe or []) or "the item id only"
    lines.append(
        f"  what the judge sees of an item ({describe}; at most {card.items.max_chars} characters), "
        f"the {len(sample)} most-interacted {dw.items}:"
    )
    original = ds.extra.get("item_ids")
    for item in sample:
        shown = original.loc[item, "original_item_id"] if original is not None else item
        lines.append(f"    {shown!s:>12}  {texts[item]}")
    return "\n".join(lines)
