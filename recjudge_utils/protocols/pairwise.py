"""Pairwise comparison with a position swap: the protocol RecSys Arena and SAER share.

A *game* compares the list of recommender ``x`` with the list of ``y`` for one case (a user). It is judged with
x's list shown first, and (``both_orders=True``) again with y's list shown first. Each answer names a
position (the first-shown list, the second, or a tie), which is mapped back to an outcome for x:
``win`` / ``tie`` / ``lose`` (None when the answer could not be parsed). :func:`games` then holds both orders
of a game in one row and adjudicates them (:func:`~recjudge_utils.metrics.pairwise.conservative`: agreement
keeps the verdict, disagreement is a tie). The paper-specific parts, which prompt and how a list is shown,
come in as a ``build`` callback; the verdict words come in as a ``read`` callback.

When a game knows how much evidence each list holds for the user (e.g. the held-out positives it contains),
each request carries it as :class:`~recjudge_utils.answer_formats.truth.PreferenceTruth`, in the order the lists are
shown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from recjudge_utils.answer_formats.truth import PreferenceTruth
from recjudge_utils.judge.types import Judge, JudgeRequest, MetadataValue
from recjudge_utils.metrics.intervals import wilson
from recjudge_utils.metrics.pairwise import adjudicate, is_missing, position_consistency

__all__ = ["ORDERS", "POSITION_COLUMNS", "Game", "games", "judge_games", "outcome_for_position", "position_summary"]

ORDERS = ("x_first", "y_first")  # x shown first, y shown first
Position = str  # "first", "second" or "tie"


@dataclass(frozen=True)
class Game:
    """One comparison: ``x`` against ``y`` for one case (``case`` holds ``user`` and any other identifying field)."""

    case: Mapping[str, MetadataValue]
    x: str
    y: str
    x_evidence: float | None = None
    y_evidence: float | None = None
    extra: Mapping[str, MetadataValue] = field(default_factory=dict)

    def truth(self, x_first: bool) -> PreferenceTruth | None:
        """The evidence of the two lists in the order shown (None when the game carries none)."""
        if self.x_evidence is None or self.y_evidence is None:
            return None
        first, second = (self.x_evidence, self.y_evidence) if x_first else (self.y_evidence, self.x_evidence)
        return PreferenceTruth(first=float(first), second=float(second))


#: build(game, first, second, truth, metadata) -> the request showing ``first``'s list first
Build = Callable[[Game, str, str, PreferenceTruth | None, dict[str, MetadataValue]], JudgeRequest]


def outcome_for_position(position: Position | None, x_first: bool) -> str | None:
    """The outcome for x of an answer naming ``position`` (None stays None)."""
    if position is None or is_missing(position):
        return None
    if position == "tie":
        return "tie"
    if position not in ("first", "second"):
        raise ValueError(f"position must be 'first', 'second' or 'tie', not {position!r}")
    return "win" if (position == "first") == x_first else "lose"


def judge_games(
    judge: Judge,
    games_: Sequence[Game],
    build: Build,
    read: Callable[[Any], Mapping[str, str]],
    position_of: Callable[[str], Position],
    keys: Sequence[str],
    both_orders: bool = True,
    desc: str | None = None,
    details: Callable[[Any], Mapping[str, Any]] | None = None,
) -> pd.DataFrame:
    """Judge every game (in both orders); one output row per (game, order).

    ``read(parsed value) -> {key: verdict as the judge wrote it}`` and ``position_of(verdict)`` -> "first" /
    "second" / "tie". Columns: the case fields, x, y, the game's extra fields, order, then the judgment row
    (``JudgeResult.to_row()``: status, reason, raw_text, usage), ``verdict_<key>`` (as answered) and ``<key>``
    (the outcome for x); ``details(parsed value)`` adds columns of its own (e.g. the judge's reasoning).
    """
    plan: list[tuple[Game, str]] = []
    for game in games_:
        plan.append((game, "x_first"))
        if both_orders:
            plan.append((game, "y_first"))
    requests = []
    for game, order in plan:
        x_first = order == "x_first"
        first, second = (game.x, game.y) if x_first else (game.y, game.x)
        meta: dict[str, MetadataValue] = {**game.case, "x": game.x, "y": game.y, "order": order}
        requests.append(build(game, first, second, game.truth(x_first), meta))
    results = judge.judge_many(requests, desc=desc) if requests else []
    rows = []
    for (game, order), res in zip(plan, results, strict=True):
        x_first = order == "x_first"
        row: dict[str, Any] = {**game.case, "x": game.x, "y": game.y, **game.extra, "order": order}
        judged = res.to_row()
        row.update({k: judged[k] for k in ("status", "reason", "raw_text", "latency_s", "cache_hit")})
        row.update({k: judged[k] for k in ("prompt_tokens", "completion_tokens", "cost_usd")})
        parsed = res.status == "parsed" and res.value is not None
        if details is not None:
            row.update(details(res.value) if parsed else {})
        verdicts = read(res.value) if parsed else {}
        for key in keys:
            v = verdicts.get(key)
            row[f"verdict_{key}"] = v
            row[key] = outcome_for_position(position_of(v), x_first) if v is not None else None
        rows.append(row)
    return pd.DataFrame(rows)


def games(raw: pd.DataFrame, keys: Sequence[str], by: Sequence[str] = ("user", "x", "y")) -> pd.DataFrame:
    """One row per game holding both orders: ``<key>_x_first``, ``<key>_y_first`` and the adjudicated ``<key>``.

    Games come in the order of their first row; the first row of each (game, order) counts. Built column-wise (one
    index lookup per order) rather than per group: a paper-scale arena has ~10k games, and iterating pandas groups
    took seconds per call.
    """
    by = list(by)
    if raw.empty:
        return pd.DataFrame()
    ids = raw[by].dropna().drop_duplicates()
    first = raw.dropna(subset=by).drop_duplicates([*by, "order"])
    index = pd.MultiIndex.from_frame(ids) if len(by) > 1 else pd.Index(ids[by[0]])
    per_order: dict[str, pd.DataFrame | None] = {}
    for order in ORDERS:
        part = first.loc[first["order"] == order].set_index(by)
        per_order[order] = part.reindex(index) if len(part) else None
    columns: dict[str, list[Any]] = {b: ids[b].to_list() for b in by}
    for key in keys:
        both = []
        for order in ORDERS:
            part = per_order[order]
            values = [None] * len(ids) if part is None else part[key].to_list()
            both.append([None if is_missing(v) else v for v in values])
        columns[f"{key}_x_first"], columns[f"{key}_y_first"] = both
        columns[key] = [adjudicate(a, b) for a, b in zip(*both, strict=True)]
    return pd.DataFrame(columns)


#: the columns of :func:`position_summary`'s frame: one row per comparison and measure
POSITION_COLUMNS = ["x", "y", "measure", "value", "low", "high", "n"]


def position_summary(
    raw: pd.DataFrame, key: str, first_verdict: str, by: Sequence[str] = ("user", "x", "y")
) -> pd.DataFrame:
    """Per comparison (x, y) and overall ("all", "all"), one row per measure (:data:`POSITION_COLUMNS`): how often
    the two orders agree, how often the judge names the list shown first (``first_verdict``, e.g. "A wins") whatever
    it is, and how many answers were not parsed.

    ``consistency`` (:func:`~recjudge_utils.metrics.pairwise.position_consistency`, with its Wilson interval; none
    when no game was parsed in both orders) is over the ``n`` games whose two orders were both parsed;
    ``first_share`` over the ``n`` parsed answers; ``unparsed_rate`` over the ``n`` answers. Only the consistency
    has an interval.
    """
    adj = games(raw, [key], by)
    both = adj.dropna(subset=[f"{key}_x_first", f"{key}_y_first"])
    rows = []
    groups = [(("all", "all"), both, raw)]
    for (x, y), grp in both.groupby(["x", "y"], sort=False):
        groups.append(((x, y), grp, raw[(raw["x"] == x) & (raw["y"] == y)]))
    nan = np.nan
    for (x, y), grp, raw_grp in groups:
        parsed = raw_grp[raw_grp["status"] == "parsed"]
        consistent, n = position_consistency(grp[f"{key}_x_first"].tolist(), grp[f"{key}_y_first"].tolist())
        low, high = wilson(consistent, n) if n else (nan, nan)
        first = float((parsed[f"verdict_{key}"] == first_verdict).mean()) if len(parsed) else nan
        unparsed = float((raw_grp["status"] != "parsed").mean()) if len(raw_grp) else nan
        rows += [
            (x, y, "consistency", consistent / n if n else nan, low, high, n),
            (x, y, "first_share", first, nan, nan, len(parsed)),
            (x, y, "unparsed_rate", unparsed, nan, nan, len(raw_grp)),
        ]
    return pd.DataFrame(rows, columns=POSITION_COLUMNS)
