"""How a judge panel turns its members' parsed answers into one answer, per answer format.

A panel (:mod:`recjudge_utils.judge.panel`) asks every member the same request, parses each answer with the request's
answer format, and hands the usable (parsed) answers to the format's aggregator here. The aggregator writes the
panel's answer *in the same format*, so the request's own parser reads it and no protocol or experiment needs to know
that a panel answered.

=====================  ===========  ================================================================================
``answer_format``      rules        the panel's answer
=====================  ===========  ================================================================================
``json_levels``        mean/median  per field, the members' mean (or median) rounded half up to a level 1-5 (the
                                    format holds integer levels; the exact value is kept in the judgment log)
``json_list_score``    mean/median  the members' mean (or median) score in [0, 1]
``arena_pairwise``     majority     per aspect and overall, the verdict a strict majority gave; else ``Tie``
``saer_list_label``    majority     the label a strict majority gave, else no label (the judgment is unparsed with
                                    the reason "no majority"); flagged items: those a strict majority flagged
``saer_pairwise``      majority     the set a strict majority preferred, else ``Tie``
=====================  ===========  ================================================================================

A *strict majority* is more than half of the usable answers. With none (``A wins``, ``B wins``, ``Tie`` from three
members; one each from two), a pairwise verdict is a tie and a label is "no majority", recorded as such in the
outcome: never decided by the order in which the members are listed. Every outcome counts the votes in the
format's own order of values, so nothing here depends on member order.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from recjudge_utils.answer_formats.arena_verdicts import OVERALL, VERDICTS, format_absolute
from recjudge_utils.answer_formats.json_levels import LEVELS, format_levels
from recjudge_utils.answer_formats.saer_fields import CATEGORIES, format_list_label, format_set_verdict

__all__ = [
    "AGGREGATORS",
    "Aggregated",
    "Aggregator",
    "Rule",
    "aggregator",
    "central",
    "nearest_level",
    "strict_majority",
]

Rule = Literal["majority", "mean", "median"]
_SET_VERDICTS: tuple[str, ...] = ("Set 1", "Set 2", "Tie")


@dataclass(frozen=True)
class Aggregated:
    """The panel's answer to one request: its text in the request's answer format (None: the panel reached no
    decision, ``reason`` says why) and, per answer field, the votes or values and the outcome."""

    text: str | None
    reason: str | None = None
    outcome: dict[str, Any] = field(default_factory=dict)


Combine = Callable[[Sequence[Any], Rule], Aggregated]


@dataclass(frozen=True)
class Aggregator:
    """One answer format's aggregation: what kind of answer it is, the rules it takes (the first is the default) and
    the function from the members' parsed values (at least one) and a rule to the panel's answer."""

    kind: Literal["verdict", "score"]
    rules: tuple[Rule, ...]
    combine: Combine


def strict_majority(votes: Sequence[str], order: Sequence[str]) -> tuple[str | None, dict[str, int]]:
    """The value more than half of ``votes`` name (None when no value has a strict majority) and the count of each
    value, in ``order`` (the format's own order, then any other value sorted), never in the order of the votes."""
    counts = Counter(votes)
    ranked = [v for v in order if v in counts] + sorted(v for v in counts if v not in order)
    tally = {v: counts[v] for v in ranked}
    winners = [v for v, n in tally.items() if 2 * n > len(votes)]
    return (winners[0] if winners else None), tally


def central(values: Sequence[float], rule: Rule) -> float:
    """The mean or median of ``values`` (at least one)."""
    if not values:
        raise ValueError("no values to aggregate")
    if rule == "mean":
        return float(statistics.fmean(values))
    if rule == "median":
        return float(statistics.median(values))
    raise ValueError(f"a score is aggregated by mean or median, not {rule!r}")


def nearest_level(value: float, low: int = LEVELS[0], high: int = LEVELS[-1]) -> int:
    """``value`` rounded half up (3.5 -> 4: a fixed rule, not a member's vote) and clipped to ``low..high``."""
    return int(min(high, max(low, math.floor(value + 0.5))))


def _tally_text(n: int, tally: Mapping[str, int]) -> str:
    return f"panel of {n}: " + ", ".join(f"{value} {count}" for value, count in tally.items())


def _levels(values: Sequence[Any], rule: Rule) -> Aggregated:
    fields = list(values[0])  # every member's answer was parsed by the same parser: the same fields
    levels: dict[str, int] = {}
    outcome: dict[str, Any] = {}
    for f in fields:
        xs = [int(v[f]) for v in values]
        exact = central(xs, rule)
        levels[f] = nearest_level(exact)
        outcome[f] = {"values": sorted(xs), rule: round(exact, 4), "level": levels[f]}
    return Aggregated(format_levels(levels), outcome=outcome)


def _list_score(values: Sequence[Any], rule: Rule) -> Aggregated:
    xs = [float(v["score"]) for v in values]
    exact = central(xs, rule)
    text = format_absolute(exact, analysis=f"the {rule} of {len(xs)} panel members' scores")
    return Aggregated(text, outcome={"score": {"values": sorted(xs), rule: round(exact, 4)}})


def _arena(values: Sequence[Any], rule: Rule) -> Aggregated:
    keys = list(values[0]["verdicts"])  # the parser's order: the aspects, then overall
    answer: dict[str, Any] = {}
    outcome: dict[str, Any] = {}
    for key in keys:
        winner, tally = strict_majority([v["verdicts"][key] for v in values], VERDICTS)
        verdict = winner or "Tie"
        outcome[key] = {"votes": tally, "verdict": verdict, "majority": winner is not None}
        note = _tally_text(len(values), tally) + ("" if winner else "; no majority, so a tie")
        answer[key] = verdict if key == OVERALL else {"analysis": note, "verdict": verdict}
    return Aggregated(json.dumps(answer), outcome=outcome)


def _saer_label(values: Sequence[Any], rule: Rule) -> Aggregated:
    n = len(values)
    winner, tally = strict_majority([v.category for v in values], CATEGORIES)
    flags = Counter(k for v in values for k in set(v.flagged))
    flagged = tuple(sorted(k for k, c in flags.items() if 2 * c > n))
    outcome = {
        "category": {"votes": tally, "label": winner, "majority": winner is not None},
        "flagged_items": {"votes": {str(k): flags[k] for k in sorted(flags)}, "flagged": list(flagged)},
    }
    if winner is None:
        votes = ", ".join(f"{label} {count}" for label, count in tally.items())
        return Aggregated(None, f"no majority on the label among {n} members ({votes})", outcome)
    reasoning = f"The label a majority of the {_tally_text(n, tally)} gave; items a majority flagged."
    return Aggregated(format_list_label(winner, flagged, reasoning), outcome=outcome)


def _saer_pairwise(values: Sequence[Any], rule: Rule) -> Aggregated:
    winner, tally = strict_majority([v.verdict for v in values], _SET_VERDICTS)
    verdict = winner or "Tie"
    outcome = {"verdict": {"votes": tally, "verdict": verdict, "majority": winner is not None}}
    reasoning = (
        f"The verdict of a majority of the {_tally_text(len(values), tally)}."
        if winner
        else (f"No majority in the {_tally_text(len(values), tally)}: a tie.")
    )
    return Aggregated(format_set_verdict(verdict, reasoning), outcome=outcome)


#: one aggregator per answer format (:data:`recjudge_utils.answer_formats.ANSWER_FORMATS`); a format without one cannot
#: be judged by a panel (the judgment is unparsed, with that reason)
AGGREGATORS: dict[str, Aggregator] = {
    "json_levels": Aggregator("score", ("mean", "median"), _levels),
    "json_list_score": Aggregator("score", ("mean", "median"), _list_score),
    "arena_pairwise": Aggregator("verdict", ("majority",), _arena),
    "saer_list_label": Aggregator("verdict", ("majority",), _saer_label),
    "saer_pairwise": Aggregator("verdict", ("majority",), _saer_pairwise),
}


def aggregator(answer_format: str | None) -> Aggregator:
    """The aggregator of ``answer_format``; a KeyError names the formats a panel can aggregate."""
    if answer_format not in AGGREGATORS:
        raise KeyError(
            f"a panel cannot aggregate answer format {answer_format!r} (it aggregates {', '.join(AGGREGATORS)})"
        )
    return AGGREGATORS[answer_format]
