"""Writing recommendation lists as TREC run files, so the book's own recommenders go through the same reader.

A line is ``user Q0 item rank score system``, sorted by user then rank. The score is ``max_rank - rank + 1`` (the
deepest rank in the file scores 1): descending with the rank and never tied within a list, so
:func:`~recjudge_utils.lists.read.read_lists`, which orders TREC runs by score as trec_eval does, reads back the
very order written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["write_trec_run", "write_trec_runs"]

_BAD_NAME = re.compile(r"[\s/\\]")


def _check_system(system: str) -> None:
    if not isinstance(system, str) or not system or _BAD_NAME.search(system) or system.startswith("."):
        raise ValueError(
            f"system name {system!r} cannot be a TREC tag and file name: it must be non-empty, "
            "without whitespace or slashes, and not start with a dot"
        )


def _long_frame(lists: Mapping[int, Sequence[int]] | pd.DataFrame) -> pd.DataFrame:
    """user, rank, item (int64), sorted by user then rank; refuses repeated ranks or items in one list."""
    if isinstance(lists, pd.DataFrame):
        missing = [c for c in ("user", "rank", "item") if c not in lists.columns]
        if missing:
            raise ValueError(f"the lists frame needs the columns user, rank, item; missing: {', '.join(missing)}")
        frame = pd.DataFrame(
            {
                "user": lists["user"].to_numpy(dtype=np.int64),
                "rank": lists["rank"].to_numpy(dtype=np.int64),
                "item": lists["item"].to_numpy(dtype=np.int64),
            }
        )
        if (frame["rank"] < 1).any():
            raise ValueError("ranks must be 1-based (1 = best)")
    else:
        lengths = np.fromiter((len(v) for v in lists.values()), dtype=np.int64, count=len(lists))
        total = int(lengths.sum())
        users = np.repeat(np.fromiter(lists.keys(), dtype=np.int64, count=len(lists)), lengths)
        items = np.fromiter((int(i) for v in lists.values() for i in v), dtype=np.int64, count=total)
        ranks = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths) + 1
        frame = pd.DataFrame({"user": users, "rank": ranks, "item": items})
    frame = frame.sort_values(["user", "rank"], kind="stable", ignore_index=True)
    for columns, what in ((["user", "rank"], "rank"), (["user", "item"], "item")):
        repeated = frame.duplicated(columns)
        if repeated.any():
            row = frame[repeated].iloc[0]
            raise ValueError(f"{what} {row[what]} appears twice in user {row['user']}'s list")
    return frame


def write_trec_run(lists: Mapping[int, Sequence[int]] | pd.DataFrame, path: str | Path, system: str) -> Path:
    """Write ``lists`` (user -> ranked items, best first; or a frame with user, rank, item) as a TREC run file.

    ``system`` is the tag column (one word). Returns the path written (its folder is created).
    """
    _check_system(system)
    frame = _long_frame(lists)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    deepest = int(frame["rank"].max()) if len(frame) else 0
    out = pd.DataFrame(
        {
            "user": frame["user"],
            "q0": "Q0",
            "item": frame["item"],
            "rank": frame["rank"],
            "score": deepest - frame["rank"] + 1,
            "system": system,
        }
    )
    out.to_csv(path, sep=" ", header=False, index=False, lineterminator="\n")
    return path


def write_trec_runs(frame: pd.DataFrame, folder: str | Path) -> list[Path]:
    """One TREC run file per system, ``<folder>/<system>.trec``, from a long frame (system or rs, user, rank, item).

    Returns the paths in the order the systems first appear in ``frame``.
    """
    column = "system" if "system" in frame.columns else "rs" if "rs" in frame.columns else None
    if column is None:
        raise ValueError("the frame needs a system column (system or rs) beside user, rank, item")
    folder = Path(folder)
    names = [str(s) for s in pd.unique(frame[column])]
    for name in names:
        _check_system(name)
    paths = []
    for name, part in frame.groupby(frame[column].astype(str), sort=False):
        paths.append(write_trec_run(part, folder / f"{name}.trec", str(name)))
    return paths
