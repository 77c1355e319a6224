"""Reading recommendation lists in the formats recommender-system toolkits write, into one checked shape.

:func:`read_lists` takes files, folders, glob patterns or a sequence of them, one system per file, and returns
:class:`~recjudge_utils.lists.types.RecommendationLists`, the one list shape (:mod:`.types`): per system, each
user's ranked items cut to ``top_k``, plus what was done on the way (ranks derived from scores, ties broken, lists
kept short, items the user already has) in :meth:`~.types.RecommendationLists.report` and
:attr:`~.types.RecommendationLists.notes`. Anything it cannot take as it is, it refuses with :class:`ListFormatError`
before returning anything; the message names the file, the line, what is wrong and
what to do.

Formats (by extension, then by content):

``trec`` (``.trec``, ``.run``, ``.txt``)
    Six whitespace-separated columns ``user Q0 item rank score tag``, as ranx, ir_measures and trec_eval read them.
    Like trec_eval (whose documentation says the other fields "are ignored": it reads query, docno and sim, and sorts
    each query's documents by sim) and ranx (which keeps ``{doc: score}`` per query and sorts by score), the list is
    ordered by the **score** column, descending, and the rank column is not used. One difference on ties:
    trec_eval breaks them by docno in *descending* string order (``comp_sim_docno``) and ranx leaves them to an
    unstable sort; here they are broken by item id *ascending* (numerically), like every other score-ranked format,
    and counted in :attr:`~.types.SystemLists.ties_broken`. The second column and the rank column are read but not
    checked.
``csv`` / ``tsv`` / ``parquet`` (``.csv``, ``.tsv``, ``.parquet``) with a header
    A user column (``user``, ``user_id``, ``userID``, ``uid``), an item column (``item``, ``item_id``, ``itemID``,
    ``iid``) and either ``rank`` (1 = best; used when present) or a score column (the first of ``score``,
    ``prediction``, ``predict``, ``rating``). Names match without regard to case, after dropping RecBole's ``:type``
    suffix (``user_id:token``). The shapes of LensKit's ``recommend`` (``item, score, rank`` plus ``user`` when
    batched), Microsoft Recommenders (``userID, itemID, prediction``), RecBole exports and the RecSys Arena
    authors' prediction files. Other columns are ignored.
``tsv-headerless`` (``.tsv`` whose first row is numbers)
    Elliot's recommendation files: three tab-separated columns ``user item score``, no header.

Ranks derived from scores are descending, ties broken by item id ascending; then each list is cut to ``top_k``.
Ids must be integers; with ``users``/``items`` given they must be the dataset's own ids. A system is named after
its file's stem unless the file names it: the TREC tag when every row has the same one, or a ``system``/``model``/
``rs`` column holding one value.

Reading is vectorised (one parse per file with pandas' C reader, numpy for checks and ordering); the only Python
loop over the data is the one that slices the ranked items into per-user lists. ``benchmarks/bench_read_lists.py``
measures it on a million lines.
"""

from __future__ import annotations

import glob
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pandas.api.types import is_bool_dtype, is_integer_dtype, is_numeric_dtype

from recjudge_utils.lists.types import RecommendationLists, SystemLists

__all__ = ["KNOWN_FORMATS", "ListFormatError", "read_lists"]

USER_COLUMNS = ("user", "user_id", "userID", "uid")
ITEM_COLUMNS = ("item", "item_id", "itemID", "iid")
_RANK_COLUMNS = ("rank",)
SCORE_COLUMNS = ("score", "prediction", "predict", "rating")
_SYSTEM_COLUMNS = ("system", "model", "rs")

#: extension -> format tried first (a ``.tsv`` may turn out headerless)
_EXTENSIONS = {".trec": "trec", ".run": "trec", ".txt": "trec", ".csv": "csv", ".tsv": "tsv", ".parquet": "parquet"}

#: what a refusal of an unknown format lists
KNOWN_FORMATS = (
    "trec (.trec, .run, .txt: 6 whitespace-separated columns `user Q0 item rank score tag`)",
    "csv (.csv with a header: user, item, and rank or score columns)",
    "tsv (.tsv with a header, the same columns; RecBole's `name:type` headers too)",
    "tsv-headerless (.tsv, Elliot's 3 tab-separated columns `user item score`, no header)",
    "parquet (.parquet, the same columns as csv)",
)

_ID_HINT = "ids must be the dataset's own integer ids, as in the exported split"
_GLOB_CHARS = re.compile(r"[*?\[]")


class ListFormatError(ValueError):
    """A recommendation-list file that cannot be read as it is: the message names the file, the line and the fix."""


def read_lists(
    source: str | Path | Sequence[str | Path],
    *,
    top_k: int,
    users: Collection[int] | None = None,
    items: Collection[int] | None = None,
    train: pd.DataFrame | None = None,
    seen: Literal["keep", "drop"] = "keep",
    allow_short: bool = False,
) -> RecommendationLists:
    """Read every system's lists from ``source`` and check them against the dataset; refuse what is wrong.

    ``source`` is a file, a folder (each non-hidden file in it with a known extension, not recursive), a glob
    pattern (``"runs/*.tsv"``) or a sequence of these; each file is one system, read in sorted path order, a file
    reached twice read once. A file named or matched by a pattern is read whatever its extension: an unknown one is
    refused, where a folder's other files are passed over.
    ``users``/``items`` are the dataset's ids (None: not checked, but ids must still be integers). ``train`` holds
    the training interactions (columns ``user``, ``item``): list entries the user already has there are counted
    per system, and with ``seen="drop"`` dropped before the cut to ``top_k``. A list shorter than ``top_k`` (after
    that drop) is refused unless ``allow_short``; kept short lists are named in ``short_users`` and ``report()``.

    Raises :class:`ListFormatError` for: a source matching no file, an unknown format, an empty file, a missing
    column, a non-numeric rank or score, unknown or non-integer user or item ids, an item twice in one user's list,
    a rank twice in one user's list, a short list (unless ``allow_short``), two files naming the same system.
    """
    if isinstance(top_k, bool) or not isinstance(top_k, int | np.integer) or top_k < 1:
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
    if seen not in ("keep", "drop"):
        raise ValueError(f"seen must be 'keep' or 'drop', got {seen!r}")
    if seen == "drop" and train is None:
        raise ValueError("seen='drop' needs train (the interactions whose items are dropped from the lists)")
    top_k = int(top_k)
    known_users = _id_array(users, "users") if users is not None else None
    known_items = _id_array(items, "items") if items is not None else None
    train_pairs = _train_pairs(train) if train is not None else None

    systems: dict[str, SystemLists] = {}
    score_ties: list[str] = []
    trec_files: list[str] = []
    mixed_names: list[str] = []
    for path in _resolve(source):
        table = _parse(path)
        system = _rank_and_check(
            table, top_k, known_users, known_items, train_pairs, drop_seen=seen == "drop", allow_short=allow_short
        )
        if system.name in systems:
            other = systems[system.name].source
            raise ListFormatError(
                f"{other} and {path} both name the system {system.name!r} (a file is named by its TREC tag or its "
                "system/model/rs column when that holds one value, else by its file name): each system needs its "
                "own name; rename a file or change its tag / system value"
            )
        systems[system.name] = system
        if system.ranked_by != "rank":
            score_ties.append(f"{system.ties_broken} tie{'' if system.ties_broken == 1 else 's'} in {system.name}")
        if system.format == "trec":
            trec_files.append(path.name)
        if table.mixed_names:
            mixed_names.append(f"{path.name} ({table.mixed_names})")

    notes: list[str] = []
    if score_ties:
        notes.append("ranks derived from scores (descending; ties broken by item id): " + ", ".join(score_ties))
    if trec_files:
        notes.append(
            "TREC runs ordered by their score column, their rank column ignored (as trec_eval and ranx do): "
            + ", ".join(trec_files)
        )
    if mixed_names:
        notes.append("several system names inside one file, so named after the file: " + ", ".join(mixed_names))
    if train_pairs is not None:
        counts = ", ".join(f"{s.seen_items} in {s.name}" for s in systems.values())
        done = "dropped before the cut" if seen == "drop" else "kept"
        notes.append(f"list entries in the top {top_k} that the user already has in train ({done}): {counts}")
    shorts = [f"{len(s.short_users)} in {s.name}" for s in systems.values() if s.short_users]
    if shorts:
        notes.append(f"lists shorter than {top_k} kept (allow_short=True): " + ", ".join(shorts))
    return RecommendationLists(systems=systems, top_k=top_k, notes=tuple(notes))


# --- sources -------------------------------------------------------------------------------------------------------


def _resolve(source: str | Path | Sequence[str | Path]) -> list[Path]:
    """Every file ``source`` names, deduplicated, in sorted path order."""
    entries: Sequence[str | Path] = [source] if isinstance(source, str | Path) else list(source)
    if not entries:
        raise ListFormatError("no source given: pass a file, a folder, a glob pattern, or a sequence of them")
    found: dict[Path, None] = {}
    for entry in entries:
        path = Path(entry)
        if path.is_dir():
            files = [
                p
                for p in path.iterdir()
                if p.is_file() and not p.name.startswith(".") and p.suffix.lower() in _EXTENSIONS
            ]
            if not files:
                raise ListFormatError(
                    f"{path}: folder has no recommendation-list file (extensions read: {', '.join(_EXTENSIONS)})"
                )
        elif path.is_file():
            files = [path]
        elif _GLOB_CHARS.search(str(entry)):
            files = [Path(p) for p in glob.glob(str(entry)) if Path(p).is_file()]
            if not files:
                raise ListFormatError(f"{entry}: the pattern matches no file")
        else:
            raise ListFormatError(f"{entry}: no such file or folder")
        for file in files:
            found.setdefault(file.resolve(), None)
    return sorted(found)


# --- parsing: one table per file -----------------------------------------------------------------------------------


@dataclass
class _Table:
    """One file parsed: the raw columns (not yet checked), their line numbers, and how to name and rank it."""

    path: Path
    format: str
    user: pd.Series
    item: pd.Series
    key: pd.Series  # the rank or score column, raw
    line: np.ndarray  # 1-based line in the file (header counted); the row number for parquet
    ranked_by: str  # "rank" or the score column's name
    name: str
    mixed_names: str  # "" or what made the file's own name unusable
    where: str = "line"  # "line", or "row" for parquet


def _unknown_format(path: Path, why: str) -> ListFormatError:
    return ListFormatError(f"{path}: {why}; the formats known are: " + "; ".join(KNOWN_FORMATS))


def _first_line(path: Path) -> tuple[int, str] | None:
    """(1-based number, text) of the first non-blank line, or None for an empty file."""
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        for number, text in enumerate(handle, start=1):
            if text.strip():
                return number, text.rstrip("\r\n")
    return None


def _parse(path: Path) -> _Table:
    try:
        return _parse_kind(path)
    except UnicodeDecodeError as error:
        raise _unknown_format(path, f"not UTF-8 text ({error.reason} at byte {error.start})") from None


def _parse_kind(path: Path) -> _Table:
    kind = _EXTENSIONS.get(path.suffix.lower())
    if kind is None:
        raise _unknown_format(path, f"cannot read a {path.suffix or 'extension-less'} file")
    if kind == "parquet":
        return _parse_parquet(path)
    first = _first_line(path)
    if first is None:
        raise ListFormatError(f"{path}: line 1: empty file (no recommendation in it)")
    if kind == "trec":
        return _parse_trec(path, first)
    if kind == "tsv" and _is_number_row(first[1].split("\t")):
        return _parse_headerless(path, first)
    return _parse_headed(path, kind)


def _is_number_row(fields: list[str]) -> bool:
    try:
        [float(f) for f in fields]
    except ValueError:
        return False
    return True


def _parse_error_line(error: Exception) -> int | None:
    found = re.search(r"line (\d+)", str(error))
    return int(found.group(1)) if found else None


def _parse_trec(path: Path, first: tuple[int, str]) -> _Table:
    number, text = first
    fields = text.split()
    if len(fields) != 6:
        raise _unknown_format(
            path, f"line {number}: {len(fields)} columns, not a TREC run (6 columns `user Q0 item rank score tag`)"
        )
    names = ["user", "q0", "item", "rank", "score", "tag"]
    try:
        # skip_blank_lines=False keeps the frame's index = line - 1, so every message can name its line
        frame = pd.read_csv(
            path,
            sep=r"\s+",
            header=None,
            names=names,
            # all six read (no usecols): pandas then refuses a line with a seventh field instead of dropping it
            dtype={"q0": "category", "tag": "category"},
            skip_blank_lines=False,
            engine="c",
        )
    except pd.errors.ParserError as error:
        line = _parse_error_line(error)
        raise ListFormatError(
            f"{path}: line {line}: more than 6 columns (a TREC run line is `user Q0 item rank score tag`)"
        ) from None
    frame = _drop_blank(frame)
    line = frame.index.to_numpy(dtype=np.int64) + 1
    short = frame["tag"].isna().to_numpy()
    if short.any():
        at = int(line[np.argmax(short)])
        raise ListFormatError(
            f"{path}: line {at}: fewer than 6 columns (a TREC run line is `user Q0 item rank score tag`)"
        )
    tags = frame["tag"].cat.remove_unused_categories().cat.categories
    name, mixed = path.stem, ""
    if len(tags) == 1:
        name = str(tags[0])
    elif len(tags) > 1:
        mixed = f"{len(tags)} tags"
    return _Table(path, "trec", frame["user"], frame["item"], frame["score"], line, "score", name, mixed)


def _parse_headerless(path: Path, first: tuple[int, str]) -> _Table:
    number, text = first
    width = len(text.split("\t"))
    if width != 3:
        raise _unknown_format(
            path, f"line {number}: a headerless .tsv with {width} columns (Elliot's has 3: `user item score`)"
        )
    try:
        frame = pd.read_csv(
            path, sep="\t", header=None, names=["user", "item", "score"], skip_blank_lines=False, engine="c"
        )
    except pd.errors.ParserError as error:
        line = _parse_error_line(error)
        raise ListFormatError(f"{path}: line {line}: more than 3 columns (Elliot's `user item score`)") from None
    frame = _drop_blank(frame)
    line = frame.index.to_numpy(dtype=np.int64) + 1
    return _Table(path, "tsv-headerless", frame["user"], frame["item"], frame["score"], line, "score", path.stem, "")


def _drop_blank(frame: pd.DataFrame) -> pd.DataFrame:
    blank = frame.isna().all(axis=1)
    return frame[~blank] if blank.any() else frame


def _match(columns: Sequence[str], wanted: Sequence[str]) -> str | None:
    """The first column (in ``wanted``'s order) whose name, without a ``:type`` suffix, is one of ``wanted``."""
    plain = {c.split(":", 1)[0].strip().lower(): c for c in reversed(list(columns))}
    for name in wanted:
        if name.lower() in plain:
            return plain[name.lower()]
    return None


def _choose(path: Path, columns: Sequence[str]) -> tuple[str, str, str, str, str | None]:
    """(user, item, key, ranked_by, system) column names, or a refusal naming what is missing and what is accepted."""
    user = _match(columns, USER_COLUMNS)
    item = _match(columns, ITEM_COLUMNS)
    rank = _match(columns, _RANK_COLUMNS)
    score = _match(columns, SCORE_COLUMNS)
    missing = []
    if user is None:
        missing.append(f"a user column (one of {', '.join(USER_COLUMNS)})")
    if item is None:
        missing.append(f"an item column (one of {', '.join(ITEM_COLUMNS)})")
    if rank is None and score is None:
        missing.append(f"a rank column (rank) or a score column (one of {', '.join(SCORE_COLUMNS)})")
    if missing:
        shown = ", ".join(repr(str(c)) for c in columns)
        header = "no header row (the first row is numbers); " if _is_number_row([str(c) for c in columns]) else ""
        raise ListFormatError(
            f"{path}: line 1: {header}missing {'; '.join(missing)}; the columns are {shown} "
            "(a `:type` suffix, as in RecBole's `user_id:token`, is ignored)"
        )
    assert user is not None and item is not None
    key = rank if rank is not None else score
    assert key is not None
    ranked_by = "rank" if rank is not None else key.split(":", 1)[0].strip()
    return user, item, key, ranked_by, _match(columns, _SYSTEM_COLUMNS)


def _parse_headed(path: Path, kind: str) -> _Table:
    sep = "," if kind == "csv" else "\t"
    header = pd.read_csv(path, sep=sep, nrows=0, engine="c")
    columns = [str(c) for c in header.columns]
    user, item, key, ranked_by, system = _choose(path, columns)
    wanted = list(dict.fromkeys(c for c in (user, item, key, system) if c is not None))
    try:
        frame = pd.read_csv(
            path,
            sep=sep,
            usecols=wanted,
            dtype={system: "category"} if system is not None else None,
            skip_blank_lines=False,
            engine="c",
        )
    except pd.errors.ParserError as error:
        line = _parse_error_line(error)
        raise ListFormatError(f"{path}: line {line}: more fields than the header has columns") from None
    frame = _drop_blank(frame)
    if frame.empty:
        raise ListFormatError(f"{path}: line 2: empty file (a header and no recommendation)")
    line = frame.index.to_numpy(dtype=np.int64) + 2  # the header is line 1
    name, mixed = _name_from_column(path, frame[system] if system is not None else None)
    return _Table(path, kind, frame[user], frame[item], frame[key], line, ranked_by, name, mixed)


def _name_from_column(path: Path, column: pd.Series | None) -> tuple[str, str]:
    """(system name, "" or why the column could not name it): its one value, else the file's stem."""
    if column is None:
        return path.stem, ""
    values = column.dropna().unique()
    if len(values) == 1:
        return str(values[0]), ""
    if len(values) > 1:
        return path.stem, f"{len(values)} values in column {column.name}"
    return path.stem, ""


def _parse_parquet(path: Path) -> _Table:
    import pyarrow.parquet as pq  # a base dependency; imported here, so reading text lists never loads it

    if path.stat().st_size == 0:
        raise ListFormatError(f"{path}: row 1: empty file (no recommendation in it)")
    try:
        schema_names = list(pq.read_schema(path).names)
    except Exception as error:  # pyarrow raises its own ArrowInvalid for a damaged or non-Parquet file
        raise _unknown_format(path, f"not a readable Parquet file ({error})") from None
    user, item, key, ranked_by, system = _choose(path, schema_names)
    wanted = list(dict.fromkeys(c for c in (user, item, key, system) if c is not None))
    frame = pd.read_parquet(path, columns=wanted).reset_index(drop=True)
    if frame.empty:
        raise ListFormatError(f"{path}: row 1: empty file (no recommendation in it)")
    line = np.arange(1, len(frame) + 1, dtype=np.int64)
    name, mixed = _name_from_column(path, frame[system] if system is not None else None)
    return _Table(path, "parquet", frame[user], frame[item], frame[key], line, ranked_by, name, mixed, where="row")


# --- checking and ranking ------------------------------------------------------------------------------------------


def _id_array(ids: Collection[int], what: str) -> np.ndarray:
    """The dataset's ids, sorted and unique, as int64 (a column of pandas' nullable Int64 too)."""
    values = ids if isinstance(ids, np.ndarray | pd.Series | pd.Index) else np.asarray(list(ids))
    if len(values) and not (is_integer_dtype(values.dtype) and not is_bool_dtype(values.dtype)):
        raise ValueError(f"{what} must be integer ids (the dataset's own), got dtype {values.dtype}")
    return np.unique(np.asarray(values, dtype=np.int64))


def _train_pairs(train: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in ("user", "item") if c not in train.columns]
    if missing:
        raise ValueError(f"train needs the columns user and item; missing: {', '.join(missing)}")
    return pd.DataFrame(
        {"user": train["user"].to_numpy(dtype=np.int64), "item": train["item"].to_numpy(dtype=np.int64)}
    )


def _integers(column: pd.Series) -> tuple[np.ndarray, np.ndarray | None]:
    """(int64 values, mask of cells that are not integers, or None when all are)."""
    if is_integer_dtype(column.dtype) and not column.hasnans:
        return column.to_numpy(dtype=np.int64), None
    numbers = column if is_numeric_dtype(column.dtype) else pd.to_numeric(column, errors="coerce")
    values = numbers.to_numpy(dtype=np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        good = np.isfinite(values) & (np.floor(values) == values) & (np.abs(values) < 2.0**53)
    return np.where(good, values, 0).astype(np.int64), ~good


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _token(value: Any) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "(empty or NaN)"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _check_ids(table: _Table, what: str, column: pd.Series, known: np.ndarray | None) -> np.ndarray:
    values, not_int = _integers(column)
    bad = not_int if not_int is not None else np.zeros(len(values), dtype=bool)
    if known is not None:
        bad = bad | ~np.isin(values, known)
    if bad.any():
        rows = np.flatnonzero(bad)
        raw = column.iloc[rows]
        # distinct offenders in file order; non-integers shown as written
        tokens = pd.unique(pd.Series([_token(v) for v in raw.iloc[: min(len(raw), 10_000)]], dtype=object))
        distinct = int(raw.astype(str).nunique(dropna=False))
        scope = f"not among the dataset's {len(known)} {what}s" if known is not None else "not integers"
        first_five = ", ".join(tokens[:5])
        raise ListFormatError(
            f"{table.path}: {table.where} {int(table.line[rows[0]])}: {distinct} unknown {what} id"
            f"{'s' if distinct != 1 else ''} ({scope}; on {_count(len(rows), table.where)}), first five: {first_five}; "
            f"{_ID_HINT}"
        )
    return values


def _check_key(table: _Table) -> np.ndarray:
    column = table.key
    if is_numeric_dtype(column.dtype) and not is_bool_dtype(column.dtype):
        values = column.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = np.isnan(values)
    if bad.any():
        row = int(np.argmax(bad))
        raise ListFormatError(
            f"{table.path}: {table.where} {int(table.line[row])}: {_token(column.iloc[row])} in the "
            f"{table.ranked_by} column is not a number ({_count(int(bad.sum()), table.where)} like it)"
        )
    return values


def _group_starts(sorted_users: np.ndarray) -> np.ndarray:
    """Index of the first row of each user's run in an array sorted by user."""
    if len(sorted_users) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.r_[True, sorted_users[1:] != sorted_users[:-1]])


def _positions(sorted_users: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(0-based position within each user's run, group starts, group lengths)."""
    starts = _group_starts(sorted_users)
    lengths = np.diff(np.r_[starts, len(sorted_users)])
    return np.arange(len(sorted_users)) - np.repeat(starts, lengths), starts, lengths


def _pairs_frame(users: np.ndarray, items: np.ndarray) -> pd.Series | pd.DataFrame:
    """(user, item) pairs to hash: one int64 key when both id spans fit in 62 bits (4x faster), else two columns."""
    if len(users) == 0:
        return pd.Series(np.zeros(0, dtype=np.int64))
    u_lo, i_lo = int(users.min()), int(items.min())
    span_u, span_i = int(users.max()) - u_lo + 1, int(items.max()) - i_lo + 1
    if span_u * span_i < 2**62:
        return pd.Series((users - u_lo) * span_i + (items - i_lo))
    return pd.DataFrame({"user": users, "item": items})


def _seen_mask(users: np.ndarray, items: np.ndarray, train: pd.DataFrame) -> np.ndarray:
    """Whether each (user, item) is in ``train``: one pair key when ids fit in 62 bits, else a hashed index."""
    if len(train) == 0 or len(users) == 0:
        return np.zeros(len(users), dtype=bool)
    t_users, t_items = train["user"].to_numpy(), train["item"].to_numpy()
    u_lo, u_hi = min(users.min(), t_users.min()), max(users.max(), t_users.max())
    i_lo, i_hi = min(items.min(), t_items.min()), max(items.max(), t_items.max())
    span_u, span_i = int(u_hi) - int(u_lo) + 1, int(i_hi) - int(i_lo) + 1
    if span_u * span_i < 2**62:
        keys = (users - u_lo) * span_i + (items - i_lo)
        return np.isin(keys, (t_users - u_lo) * span_i + (t_items - i_lo))
    return pd.MultiIndex.from_arrays([users, items]).isin(pd.MultiIndex.from_arrays([t_users, t_items]))


def _list_order(users: np.ndarray, key: np.ndarray, items: np.ndarray) -> np.ndarray:
    """Indices sorting by user, then ``key`` ascending, then item; (user, item) pairs are unique here.

    One int64 key (user, dense rank of ``key``, item) sorts in half the time of a three-key lexsort when it fits.
    """
    if len(users) == 0:
        return np.zeros(0, dtype=np.int64)
    distinct, key_rank = np.unique(key, return_inverse=True)
    u_lo, i_lo = int(users.min()), int(items.min())
    span_u, span_i = int(users.max()) - u_lo + 1, int(items.max()) - i_lo + 1
    if span_u * len(distinct) * span_i < 2**63:
        composite = ((users - u_lo) * len(distinct) + key_rank.reshape(-1)) * span_i + (items - i_lo)
        return np.argsort(composite)
    return np.lexsort((items, key, users))


def _rank_and_check(
    table: _Table,
    top_k: int,
    known_users: np.ndarray | None,
    known_items: np.ndarray | None,
    train: pd.DataFrame | None,
    *,
    drop_seen: bool,
    allow_short: bool,
) -> SystemLists:
    key = _check_key(table)
    users = _check_ids(table, "user", table.user, known_users)
    items = _check_ids(table, "item", table.item, known_items)
    by_rank = table.ranked_by == "rank"

    # an item twice in one list: hashed (user, item) pairs in file order, so the first repeat found is the earliest
    repeated = _pairs_frame(users, items).duplicated().to_numpy()
    if repeated.any():
        second = int(np.argmax(repeated))
        first = int(np.argmax((users == users[second]) & (items == items[second])))
        raise ListFormatError(
            f"{table.path}: {table.where} {int(table.line[second])}: item {int(items[second])} appears twice in user "
            f"{int(users[second])}'s list (first at {table.where} {int(table.line[first])}); "
            f"{_count(int(repeated.sum()), 'repeat')} in the file"
        )

    # one sort: user, then rank ascending or score descending, then item id ascending (the tie-break)
    order = _list_order(users, key if by_rank else -key, items)
    users, items, key, line = users[order], items[order], key[order], table.line[order]
    same_user = np.r_[False, users[1:] == users[:-1]]
    if by_rank:
        repeat = same_user & np.r_[False, key[1:] == key[:-1]]
        if repeat.any():
            at = int(np.argmax(repeat))
            later, earlier = max(line[at], line[at - 1]), min(line[at], line[at - 1])
            raise ListFormatError(
                f"{table.path}: {table.where} {int(later)}: rank {_token(float(key[at]))} given twice in user "
                f"{int(users[at])}'s list (also at {table.where} {int(earlier)}); ranks must order each list"
            )

    position, starts, lengths = _positions(users)
    listed = users[starts]  # every user with a list in the file, before any drop
    last_line = line[starts + lengths - 1]
    seen_items = 0
    if train is not None:
        seen = _seen_mask(users, items, train)
        seen_items = int((seen & (position < top_k)).sum())
        if drop_seen and seen.any():
            keep = ~seen
            users, items, key, line = users[keep], items[keep], key[keep], line[keep]
            same_user = np.r_[False, users[1:] == users[:-1]]
            position, _, _ = _positions(users)

    ties = 0
    if not by_rank:
        # an entry tied with the one above it, where the order decides the kept top_k (the pair across the cut too)
        tied = same_user & np.r_[False, key[1:] == key[:-1]] & (position <= top_k)
        ties = int(tied.sum())

    kept = position < top_k
    users, items, line = users[kept], items[kept], line[kept]
    _, starts, lengths = _positions(users)
    kept_users = users[starts]
    # a user whose every entry was dropped (seen="drop") still had a list: it is short, with 0 items
    full_lengths = np.zeros(len(listed), dtype=np.int64)
    full_lengths[np.searchsorted(listed, kept_users)] = lengths
    last_line[np.searchsorted(listed, kept_users)] = line[starts + lengths - 1]
    short = full_lengths < top_k
    short_users = listed[short]
    if short.any() and not allow_short:
        first = int(np.argmax(short))
        examples = ", ".join(
            f"{int(u)} ({_count(int(n), 'item')})"
            for u, n in zip(short_users[:5], full_lengths[short][:5], strict=True)
        )
        after = " after dropping the items they already have in train" if drop_seen and train is not None else ""
        raise ListFormatError(
            f"{table.path}: {table.where} {int(last_line[first])}: user {int(listed[first])}'s list has "
            f"{_count(int(full_lengths[first]), 'item')}, fewer than top_k={top_k}{after}; "
            f"{_count(int(short.sum()), 'user')} with a short list, first five: {examples}; pass allow_short=True to "
            "keep them (reported per system), or a smaller top_k"
        )

    flat = items.tolist()
    bounds = np.r_[starts, len(flat)].tolist()
    lists = {int(u): flat[bounds[g] : bounds[g + 1]] for g, u in enumerate(kept_users.tolist())}
    if len(kept_users) < len(listed):
        lists = {int(u): lists.get(int(u), []) for u in listed.tolist()}
    return SystemLists(
        name=table.name,
        source=table.path,
        format=table.format,
        lists=lists,
        ranked_by=table.ranked_by,
        ties_broken=ties,
        short_users=tuple(int(u) for u in short_users.tolist()),
        seen_items=seen_items,
        seen_dropped=drop_seen,
    )
