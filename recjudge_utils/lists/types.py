"""The one shape of recommendation lists: :class:`RecommendationLists` (every system's lists, cut once to ``top_k``)
and the mapping it exposes, :data:`ListsBySystem` (system -> user -> ranked items), which every protocol takes.

Lists are cut to ``top_k`` once, where they are made (:func:`~recjudge_utils.lists.read.read_lists` for files, a
recommender's top-k for the book's own); nothing downstream cuts them again. A long frame of lists, wherever one is
needed, is :func:`lists_frame`: columns ``system``, ``user``, ``rank`` (1-based), ``item``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["ListsBySystem", "RecommendationLists", "SystemLists", "lists_frame"]

#: system -> user -> that user's ranked items (best first): what every protocol that judges lists takes
ListsBySystem = Mapping[str, Mapping[int, Sequence[int]]]


def lists_frame(lists: ListsBySystem) -> pd.DataFrame:
    """Long frame, one row per list entry: ``system``, ``user``, ``rank`` (1-based), ``item``; systems and each
    system's users in the mapping's order."""
    parts = []
    for name, per_user in lists.items():
        lengths = np.fromiter((len(v) for v in per_user.values()), dtype=np.int64, count=len(per_user))
        total = int(lengths.sum())
        users = np.repeat(np.fromiter(per_user.keys(), dtype=np.int64, count=len(per_user)), lengths)
        items = np.fromiter((i for v in per_user.values() for i in v), dtype=np.int64, count=total)
        starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
        ranks = np.arange(total, dtype=np.int64) - starts + 1
        parts.append(pd.DataFrame({"system": name, "user": users, "rank": ranks, "item": items}))
    if not parts:
        return pd.DataFrame({"system": [], "user": [], "rank": [], "item": []}).astype(
            {"user": "int64", "rank": "int64", "item": "int64"}
        )
    return pd.concat(parts, ignore_index=True)


@dataclass(frozen=True)
class SystemLists:
    """One system's top-k lists, read from one file, and what was done to get them.

    ``lists`` maps each user to their ranked items (best first), cut to ``top_k``. ``ranked_by`` is ``"rank"`` when
    the file's rank column ordered them, else the score column's name. ``ties_broken`` counts the entries whose score
    equals the one just above them in the same list, among those that decide the kept top_k (the first entry below
    the cut included); 0 when ranked by rank. ``seen_items`` counts the entries among each list's first ``top_k``
    (as ranked in the file) that the user already has in ``train``; the number is the same whether they were then
    kept or dropped (``seen_dropped``), so it describes the system, not the reading.
    """

    name: str
    source: Path
    format: str
    lists: dict[int, list[int]]
    ranked_by: str
    ties_broken: int
    short_users: tuple[int, ...]
    seen_items: int
    seen_dropped: bool


@dataclass(frozen=True)
class RecommendationLists:
    """Every system's lists (in the order read: sorted file paths), the ``top_k`` they were cut to, and notes."""

    systems: dict[str, SystemLists]
    top_k: int
    notes: tuple[str, ...]

    def by_system(
        self, systems: Iterable[str] | None = None, users: Iterable[int] | None = None
    ) -> dict[str, dict[int, list[int]]]:
        """The lists as :data:`ListsBySystem`, the mapping every protocol takes: ``systems`` (None: every one, in the
        order read), each with the lists of ``users`` in that order (None: every user it has a list for)."""
        names = list(self.systems) if systems is None else list(systems)
        # copies: a caller's mapping never reaches back into what was read
        if users is None:
            return {s: {u: list(items) for u, items in self.systems[s].lists.items()} for s in names}
        wanted = list(users)
        return {s: {u: list(self.systems[s].lists[u]) for u in wanted} for s in names}

    def frame(self) -> pd.DataFrame:
        """Long frame, one row per list entry: ``system``, ``user``, ``rank`` (1-based), ``item``."""
        return lists_frame({name: system.lists for name, system in self.systems.items()})

    def report(self) -> pd.DataFrame:
        """One row per system: what was read and done (the table to show beside any result from these lists)."""
        rows = [
            {
                "system": s.name,
                "file": s.source.name,
                "format": s.format,
                "users": len(s.lists),
                "ranked_by": s.ranked_by,
                "ties_broken": s.ties_broken,
                "short_lists": len(s.short_users),
                "seen_items": s.seen_items,
                "seen": "dropped" if s.seen_dropped else "kept",
            }
            for s in self.systems.values()
        ]
        columns = ["system", "file", "format", "users", "ranked_by", "ties_broken", "short_lists", "seen_items", "seen"]
        return pd.DataFrame(rows, columns=columns)

    def users(self) -> set[int]:
        """The users having a list in every system (the ones a comparison across systems can use)."""
        sets = [set(s.lists) for s in self.systems.values()]
        return set.intersection(*sets) if sets else set()
