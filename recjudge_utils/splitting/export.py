"""Chapter 2's split written to a folder, for training a recommender elsewhere and judging its lists in chapter 7.

``export_split(dataset, fold, out)`` computes exactly the frames chapter 2 trains, tunes and evaluates on
(:func:`recjudge_utils.experiments.reevaluation.prepare_folds`: positives, the temporal global split with its
unseen-user/item rules, the evaluation users) from :mod:`recjudge_utils.splitting.temporal` alone, and writes:

* ``train.csv``, ``valid.csv``, ``test.csv`` (header ``user,item,rating,timestamp``);
* RecBole atomic files ``<name>.train.inter``, ``<name>.valid.inter``, ``<name>.test.inter`` where ``<name>`` is
  the output folder's own name, so that the folder *is* a RecBole dataset (``data_path``: its parent,
  ``dataset``: its name, ``benchmark_filename: [train, valid, test]``);
* ``items.csv`` (the item catalogue), ``eval_users.txt`` (one evaluation user per line), ``README.md`` (what the
  split is and how chapter 7 wants the top-k lists), and an empty ``lists/`` folder for those lists.

Everything is built in a hidden sibling folder and renamed into place at the end, so a failure leaves no
half-written export behind. This module imports nothing above the splitting stage (the experiments import it,
never the reverse); the test checks its frames against ``prepare_folds``.
"""

from __future__ import annotations

import math
import os
import shutil
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from recjudge_utils.data import Dataset, dataset_reference
from recjudge_utils.splitting.temporal import UnseenReport, positive_interactions, split_fold, unseen_report

__all__ = [
    "COLUMNS",
    "INTER_HEADER",
    "ExportError",
    "ExportedSplit",
    "TemporalFold",
    "check_fold",
    "export_split",
    "temporal_fold",
]

COLUMNS = ("user", "item", "rating", "timestamp")
_SPLITS = ("train", "valid", "test")
#: RecBole's typed header: ids as tokens (RecBole remaps them internally), rating and time as floats
INTER_HEADER = "user_id:token\titem_id:token\trating:float\ttimestamp:float"
_LISTS_FOLDER = "lists"


class ExportError(ValueError):
    """The export cannot be made as asked (a fold that does not exist, a non-empty target folder, no positives);
    the message says why and what would work."""


@dataclass(frozen=True)
class ExportedSplit:
    """One exported fold: where it was written, its frames (columns user, item, rating, timestamp) and files."""

    folder: Path
    dataset: str
    fold: int
    train: pd.DataFrame
    valid: pd.DataFrame
    test: pd.DataFrame
    eval_users: np.ndarray
    files: tuple[Path, ...]


@dataclass(frozen=True)
class _Slices:
    """What the README reports about a fold besides the frames: slice numbers, time spans and unseen drops."""

    n_positives: int
    n_ratings: int
    n_slices: int
    train_slices: int
    threshold: float
    spans: dict[str, tuple[int, int] | None]  # split -> (first, last) unix time of its raw slice(s)
    slices: dict[str, tuple[int, int]]  # split -> (first, last) slice number
    raw_rows: dict[str, int]  # valid/test rows before the unseen rules
    unseen: dict[str, UnseenReport]


@dataclass(frozen=True)
class TemporalFold:
    """One fold of chapter 2's split in memory: its frames (user, item, rating, timestamp), its evaluation users (the
    test users, every one with training history) and the last training timestamp (where a judge's view of a user
    must end)."""

    fold: int
    train: pd.DataFrame
    valid: pd.DataFrame
    test: pd.DataFrame
    eval_users: np.ndarray
    train_end: int


def temporal_fold(
    dataset: Dataset, fold: int, *, n_slices: int = 10, train_slices: int = 6, threshold: float | None = None
) -> TemporalFold:
    """Fold ``fold`` of chapter 2's split of ``dataset``, as :func:`export_split` writes it, without writing."""
    check_fold(fold, n_slices, train_slices)
    frames, eval_users, _ = _split(dataset, fold, n_slices, train_slices, _threshold(dataset, threshold))
    train = frames["train"]
    return TemporalFold(
        fold, train, frames["valid"], frames["test"], eval_users, int(train["timestamp"].max()) if len(train) else 0
    )


@dataclass(frozen=True)
class _Export:
    """What the files of one export are written from: the folder's final name and path, the data and the split."""

    name: str
    dataset: Dataset
    fold: int
    frames: dict[str, pd.DataFrame]
    eval_users: np.ndarray
    facts: _Slices
    final: Path


def _valid_folds(n_slices: int = 10, train_slices: int = 6) -> range:
    """The folds the temporal split has: fold ``f`` needs slices ``f .. f + train_slices + 1``."""
    return range(max(0, n_slices - train_slices - 1))


def check_fold(fold: int, n_slices: int = 10, train_slices: int = 6) -> None:
    """Raise :class:`ExportError` naming the valid folds unless ``fold`` exists (checked before any data is read).

    The wording is :func:`~recjudge_utils.splitting.temporal.split_global_time`'s, plus the list of valid folds.
    """
    folds = _valid_folds(n_slices, train_slices)
    if fold not in folds:
        last = fold + train_slices + 1
        listed = ", ".join(map(str, folds)) or "none"
        raise ExportError(
            f"fold {fold} needs slices {fold}..{last} but only {n_slices} exist "
            f"(max fold = {n_slices - train_slices - 2}; valid folds: {listed})"
        )


def export_split(
    dataset: Dataset,
    fold: int,
    out: str | Path,
    *,
    n_slices: int = 10,
    train_slices: int = 6,
    threshold: float | None = None,
    force: bool = False,
) -> ExportedSplit:
    """Write fold ``fold`` of chapter 2's split of ``dataset`` to the folder ``out`` (see the module docstring).

    ``out`` must not exist or be empty; with ``force`` an existing folder is replaced, but only once the new export
    is complete. Raises :class:`ExportError` for a fold that does not exist, a non-empty ``out`` without ``force``
    or a dataset without positives (ratings >= ``threshold``; None: the dataset's own, from its card, as chapter 2
    splits it).
    """
    check_fold(fold, n_slices, train_slices)
    folder = Path(out).expanduser().resolve()
    if folder.exists() and not folder.is_dir():
        raise ExportError(f"{folder} exists and is not a folder")
    if folder.is_dir() and any(folder.iterdir()) and not force:
        raise ExportError(f"{folder} exists and is not empty: choose another folder, or pass --force to replace it")
    frames, eval_users, facts = _split(dataset, fold, n_slices, train_slices, _threshold(dataset, threshold))

    folder.parent.mkdir(parents=True, exist_ok=True)
    # a sibling, so the final rename stays on one file system (an atomic rename(2), never a copy); mkdir rather
    # than mkdtemp, whose mode 0700 the export would keep
    staging = _sibling(folder, "export")
    staging.mkdir()
    try:
        written = _write_all(staging, _Export(folder.name, dataset, fold, frames, eval_users, facts, folder))
        _move_into_place(staging, folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return ExportedSplit(
        folder=folder,
        dataset=dataset.name,
        fold=fold,
        train=frames["train"],
        valid=frames["valid"],
        test=frames["test"],
        eval_users=eval_users,
        files=tuple(folder / p.relative_to(staging) for p in written),
    )


# ------------------------------------------------------------------------------------------------- the split


def _threshold(dataset: Dataset, threshold: float | None) -> float:
    return dataset.positive_threshold if threshold is None else float(threshold)


def _positives_words(threshold: float) -> str:
    """What a positive is, in words: ``rating >= 4``, or every interaction for implicit feedback."""
    return "every interaction: implicit feedback" if math.isinf(threshold) else f"rating >= {threshold:g}"


def _split(
    dataset: Dataset, fold: int, n_slices: int, train_slices: int, threshold: float
) -> tuple[dict[str, pd.DataFrame], np.ndarray, _Slices]:
    """The fold's frames and evaluation users exactly as ``prepare_folds`` makes them, and the README's facts."""
    interactions = dataset.interactions
    pos = positive_interactions(interactions, threshold)
    if pos.empty:
        raise ExportError(
            f"{dataset.name} has no positives ({_positives_words(threshold)}): there is no split to export"
        )
    split = split_fold(pos, fold, n_slices, train_slices)
    # only the four columns the files carry: a loader's extra columns (MIND's "source") are not part of the split
    frames = {name: _tidy(frame) for name, frame in zip(_SPLITS, (split.train, split.valid, split.test), strict=True)}
    slices = {"train": (fold, fold + train_slices - 1), "valid": (fold + train_slices,) * 2}
    slices["test"] = (fold + train_slices + 1,) * 2
    spans = {name: split.span(first, last) for name, (first, last) in slices.items()}
    train, raw_valid, raw_test = split.train, split.raw_valid, split.raw_test
    facts = _Slices(
        n_positives=len(pos),
        n_ratings=len(interactions),
        n_slices=n_slices,
        train_slices=train_slices,
        threshold=threshold,
        spans=spans,
        slices=slices,
        raw_rows={"valid": len(raw_valid), "test": len(raw_test)},
        unseen={"valid": unseen_report(raw_valid, train), "test": unseen_report(raw_test, train)},
    )
    return frames, split.eval_users, facts


def _tidy(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.loc[:, list(COLUMNS)].copy()
    for col in ("user", "item", "timestamp"):
        out[col] = out[col].astype(np.int64)
    return out


# ------------------------------------------------------------------------------------------------- the files


def _write_all(staging: Path, export: _Export) -> list[Path]:
    """Every file of the export, written into ``staging``; returns their paths in the order they were written."""
    frames, name = export.frames, export.name
    paths = [staging / f"{split}.csv" for split in _SPLITS]
    for split, path in zip(_SPLITS, paths, strict=True):
        _write_csv(frames[split], path)
    for split in _SPLITS:
        paths.append(staging / f"{name}.{split}.inter")
        _write_inter(frames[split], paths[-1])
    paths.append(staging / "items.csv")
    _write_items(export.dataset, paths[-1])
    paths.append(staging / "eval_users.txt")
    _write_users(export.eval_users, paths[-1])
    paths.append(staging / "README.md")
    _write_readme(paths[-1], export)
    (staging / _LISTS_FOLDER).mkdir()
    return paths


def _write_csv(frame: pd.DataFrame, path: Path) -> None:
    frame.to_csv(path, index=False, columns=list(COLUMNS), lineterminator="\n")


def _write_inter(frame: pd.DataFrame, path: Path) -> None:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(INTER_HEADER + "\n")
        frame.to_csv(fh, sep="\t", index=False, header=False, columns=list(COLUMNS), lineterminator="\n")


def _write_items(dataset: Dataset, path: Path) -> None:
    items = dataset.items
    out = pd.DataFrame({"item": items["item"].astype(np.int64), "title": items["title"]})
    out["genres"] = [_genres(g) for g in items["genres"]] if "genres" in items.columns else ""
    if "year" in items.columns:
        out["year"] = items["year"].astype("Int64")
    mapping = dataset.extra.get("item_ids")
    # string-id sources (Goodreads, Amazon, MIND): the loader's integer is the id; the source's id is kept beside it
    if isinstance(mapping, pd.DataFrame) and {"item", "original_item_id"} <= set(mapping.columns):
        out = out.merge(mapping[["item", "original_item_id"]].drop_duplicates("item"), on="item", how="left")
    out.sort_values("item", kind="mergesort").to_csv(path, index=False, lineterminator="\n")


def _genres(value: object) -> str:
    if isinstance(value, list | tuple | np.ndarray):
        return "|".join(str(g) for g in value)
    return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


def _write_users(users: np.ndarray, path: Path) -> None:
    path.write_text("".join(f"{int(u)}\n" for u in users), encoding="utf-8")


def _sibling(folder: Path, role: str) -> Path:
    """A hidden, unused name beside ``folder`` (hidden: a listing of the parent shows no half-made export)."""
    return folder.parent / f".{folder.name}.{role}-{uuid.uuid4().hex[:12]}"


def _move_into_place(staging: Path, folder: Path) -> None:
    """Rename the finished ``staging`` folder to ``folder``; an existing ``folder`` (empty, or ``force``) is moved
    aside first and deleted only after the rename, so at every moment one complete version exists."""
    if not folder.exists():
        os.rename(staging, folder)
        return
    old = _sibling(folder, "old")
    os.rename(folder, old)
    try:
        os.rename(staging, folder)
    except BaseException:
        os.rename(old, folder)
        raise
    shutil.rmtree(old, ignore_errors=True)


# ------------------------------------------------------------------------------------------------- the README


def _date(ts: int) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d")


def _readme(export: _Export) -> str:
    """The folder's README: the split, the files, RecBole's config, and what chapter 7 needs back."""
    name, dataset, fold, frames = export.name, export.dataset, export.fold, export.frames
    eval_users, facts, final = export.eval_users, export.facts, export.final
    rows = []
    for split in _SPLITS:
        frame, (first, last), span = frames[split], facts.slices[split], facts.spans[split]
        slices = f"{first}..{last}" if last > first else str(first)
        dates = f"{_date(span[0])} | {_date(span[1])} | {span[0]} | {span[1]}" if span else "- | - | - | -"
        rows.append(
            f"| {split} | {slices} | {dates} | {len(frame):,} | {frame['user'].nunique():,} | "
            f"{frame['item'].nunique():,} |"
        )
    unseen_lines = []
    for split in ("valid", "test"):
        rep = facts.unseen[split]
        unseen_lines.append(
            f"* {split}: {facts.raw_rows[split]:,} rows in the slice; {rep.rows_unseen_user:,} dropped because their "
            f"user has no training positive ({rep.users_unseen:,} users), {rep.rows_unseen_item_only:,} because "
            f"their item never occurs in training; {len(frames[split]):,} kept."
        )
    n_eval = len(eval_users)
    lists = final / _LISTS_FOLDER
    stand_in = "" if dataset.is_real else " **This is a stand-in, not the paper's data.**"
    last_slice = facts.slices["test"][1]
    first_train, last_train = facts.slices["train"]
    file_rows = [
        "| `train.csv`, `valid.csv`, `test.csv` | header `user,item,rating,timestamp`; ids and Unix seconds as "
        "integers, the rating as in the data |",
        f"| `{name}.train.inter`, `{name}.valid.inter`, `{name}.test.inter` | the same rows as RecBole atomic files "
        f"(tab-separated, header `{INTER_HEADER.replace(chr(9), ' ')}`) |",
    ]
    folds = ", ".join(map(str, _valid_folds(facts.n_slices, facts.train_slices)))
    own = dataset.positive_threshold
    defaults = (facts.n_slices, facts.train_slices, facts.threshold) == (10, 6, own)
    not_chapter_2 = (
        ""
        if defaults
        else f" **Not chapter 2's defaults (10 slices, 6 training slices, {_positives_words(own)}): the book's "
        "chapters do not use this split.**"
    )
    reference = dataset_reference(dataset)
    return f"""# {dataset.name}, fold {fold}: chapter 2's split

{dataset.display_label}.{stand_in} Written by `python -m recjudge_utils.data export-split {reference} --fold {fold}`.

## The split

The same frames chapter 2 ("Re-evaluating recommenders") trains, tunes and evaluates on
(`recjudge_utils.experiments.reevaluation.prepare_folds`).
Of the {facts.n_ratings:,} ratings, the {facts.n_positives:,} positives ({_positives_words(facts.threshold)}) are
ordered by time (ties by user, then item) and cut into {facts.n_slices} slices of equal size (numbered from 0).
Fold {fold} trains on slices {first_train}..{last_train}, validates on slice {facts.slices["valid"][0]} and tests
on slice {last_slice}; folds {folds} exist.
Every validation and test interaction is at least as late as every training one.{not_chapter_2}

| split | slices | from (UTC) | to (UTC) | first timestamp | last timestamp | rows | users | items |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
{chr(10).join(rows)}

Validation and test keep only users and items that occur in training:

{chr(10).join(unseen_lines)}

**Evaluation users: {n_eval:,}** (`eval_users.txt`), the test users after those rules: chapter 2's evaluation users
of fold {fold}.

## Ids

Users and items carry the dataset's own ids, as `recjudge_utils.data.load_dataset("{reference}")` gives them
(for datasets whose source ids are strings, the loader's integers; `items.csv` then has the source's id beside
it). The book's reader refuses lists with any other id: if your library remaps ids (RecBole does), map them back
before writing the lists.

## Files

| file | what |
| --- | --- |
{chr(10).join(file_rows)}
| `items.csv` | the item catalogue: item, title, genres joined with `\\|`, year where the data has it |
| `eval_users.txt` | the {n_eval:,} evaluation users, one id per line |
| `lists/` | empty: put your systems' top-k lists here |

Train on `train.csv`, tune on `valid.csv`; `test.csv` is what chapter 2 scores accuracy against.

**RecBole.** This folder is a RecBole dataset named after the folder, `{name}`: the `.inter` files follow RecBole's
`benchmark_filename` convention (`<dataset>.<suffix>.inter` inside a folder named `<dataset>`), read as the
training, validation and test sets in that order. In the RecBole config:

```yaml
data_path: {final.parent}
dataset: {name}
benchmark_filename: [train, valid, test]
load_col:
  inter: [user_id, item_id, rating, timestamp]
```

Do not set RecBole's `threshold` or `val_interval`: every row is already a positive. Renaming the folder means
renaming the three `.inter` files to the new name too.

## Lists for chapter 7

Chapter 7 ("Your recommenders") judges the top-k lists of your systems on this split: the same dataset
(`{reference}`) and fold ({fold}).

* **Which users.** The chapter judges a seeded sample of `n_users` of the {n_eval:,} evaluation users (its
  parameter `n_users`, default 3; `-p n_users 0` judges them all; seed 0), drawn from those that have a list in
  every system. Give every system's top-k list for every evaluation user, or at least for those judged.
* **Exclude training items.** Leave out items the user has in `train.csv`; the chapter counts and reports any
  list that contains them.
* **One file per system**; the file name's stem is the system's name (`mysystem.trec` is the system
  `mysystem`). Formats:
  * TREC run (`.trec`, `.run`, `.txt`): `user Q0 item rank score tag`, whitespace-separated, no header; as
    trec_eval does, each list is ordered by the score column;
  * CSV (`.csv`), TSV (`.tsv`) or Parquet (`.parquet`) with columns `user`, `item` and `rank` or `score`;
  * Elliot's recommendation output: headerless `user item score`, tab-separated (`.tsv`).

Put the files in `{lists}/` and run the chapter:

```bash
python -m recjudge_utils.book run --run mine --only 07 --judge gpt-4o-mini \\
    -p lists {lists}/ -p dataset {reference} -p fold {fold}
papermill notebooks/07_your_recommenders.ipynb out.ipynb \\
    -p lists {lists}/ -p dataset {reference} -p fold {fold}
```
"""


def _write_readme(path: Path, export: _Export) -> None:
    path.write_text(_readme(export), encoding="utf-8")
