"""How a judge panel turns its members' parsed answers into one answer, per answer format.

A panel (:mod:`recjudge_utils.judge.panel`) asks every member the same request, parses each answer with the request's
answer format, and hands the usable (parsed) answers to the format's aggregator here. The aggregator writes the
panel's answer *in the same format*, so the request's own parser reads it and no protocol or experiment needs to know
that a panel answered.

=====================  ===========  ================================================================================
``answer_format``      rules        the panel's answer
=====================  ===========  ================================================================================
``json_levels``        median/mean  per field, a level 1-5 (the format holds integer levels): the median of the
                                    members' levels, or their mean rounded to the nearest level; a value halfway
                                    between two levels takes the lower one (:func:`nearest_level`). The unrounded
                                    median or mean is kept in the outcome (and so in the judgment log)
``json_list_score``    mean/median  the members' mean (or median) score in [0, 1]
``arena_pairwise``     majority     per aspect and overall, the verdict a strict majority gave; else ``Tie``
``saer_list_label``    median/      ``median``: the median label in the order Poor < Partial < Good Match (the
                       majority     lower of the two middle labels for an even count), which is the majority label
                                    whenever one exists; the outcome says whether it was a majority or only a
                                    median. ``majority``: a strict majority, else no label (the judgment is
                                    unparsed, "no majority"). Flagged items, either rule: those a strict majority
                                    flagged
``saer_pairwise``      majority     the set a strict majority preferred, else ``Tie``
=====================  ===========  ================================================================================

A *strict majority* is more than half of the usable answers. With none (``A wins``, ``B wins``, ``Tie`` from three
members; one each from two), a pairwise verdict is a tie, recorded as such in the outcome: never decided by the order
in which the members are listed. Every outcome counts the votes in the format's own order of values, so nothing here
depends on member order.

**Why ordered answers take the median, and why a split goes down.** Scores and SAER labels are ordered, so a median
always exists where a majority often does not (Good, Partial and Poor from three members: no majority, median
Partial), and dropping the lists without a majority would drop exactly the borderline ones (not missing at random).
Rounding a mean half up, as the panel once did, sent every split of two members (3 and 4) up to 4, which is a
serendipitous item for P_ser (score >= 4): an upward bias on exactly the undecided items. A value halfway between two
levels (two members answering 3 and 4, or an even count whose middle levels differ) therefore takes the *lower* level,
the lower-middle vote: it is a level a member gave, a split panel never makes an item serendipitous (or a list a
better match) that half of it did not call so, and it is the rule SAER's own strict adjudication uses for two
annotators who disagree (the harsher label). Round half to even would be unbiased on average over the scale but not
at the threshold that matters (3.5 would still become 4). The unrounded median or mean stays in the outcome for
anyone who wants the exact value.
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
from recjudge_utils.answer_formats.saer_fields import (
    CATEGORIES,
    LABELS_WORST_FIRST,
    format_list_label,
    format_set_verdict,
)

__all__ = [
    "AGGREGATORS",
    "Aggregated",
    "Aggregator",
    "Rule",
    "aggregator",
    "central",
    "median_label",
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
    """The level nearest ``value``, clipped to ``low..high``; a value exactly halfway between two levels takes the
    lower one (3.5 -> 3, 4.5 -> 4: the lower-middle vote, never an upward bias; the module's docstring says why). For
    the median of integer levels this is the median when it is whole and the lower middle level otherwise."""
    return int(min(high, max(low, math.ceil(value - 0.5))))


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
        # split: the exact value lies halfway between two levels, and the lower one was taken
        outcome[f] = {"values": sorted(xs), rule: round(exact, 4), "level": levels[f], "split": exact % 1 == 0.5}
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


def median_label(votes: Sequence[str], worst_first: Sequence[str]) -> str:
    """The median of ordered ``votes`` (at least one) in the order ``worst_first``: the middle vote for an odd count,
    the lower (harsher) of the two middle votes for an even count. A label a strict majority gave is always the
    median, so the median is the majority label whenever one exists."""
    if not votes:
        raise ValueError("no labels to aggregate")
    rank = {label: i for i, label in enumerate(worst_first)}
    ordered = sorted(votes, key=rank.__getitem__)
    return ordered[(len(ordered) - 1) // 2]


def _saer_label(values: Sequence[Any], rule: Rule) -> Aggregated:
    n = len(values)
    votes = [v.category for v in values]
    winner, tally = strict_majority(votes, CATEGORIES)
    flags = Counter(k for v in values for k in set(v.flagged))
    flagged = tuple(sorted(k for k, c in flags.items() if 2 * c > n))
    label = winner if rule == "majority" else median_label(votes, LABELS_WORST_FIRST)
    outcome = {
        "category": {"votes": tally, "label": label, "majority": winner is not None,
                     "by": "majority" if winner is not None else ("median" if label else None)},
        "flagged_items": {"votes": {str(k): flags[k] for k in sorted(flags)}, "flagged": list(flagged)},
    }  # fmt: skip
    if label is None:
        votes_text = ", ".join(f"{lab} {count}" for lab, count in tally.items())
        return Aggregated(None, f"no majority on the label among {n} members ({votes_text})", outcome)
    if winner is not None:
        reasoning = f"The label a majority of the {_tally_text(n, tally)} gave; items a majority flagged."
    else:
        middle = "middle label" if n % 2 else "lower of the two middle labels"
        reasoning = (
            f"No majority in the {_tally_text(n, tally)}: the median label (the {middle}, Poor < Partial < Good "
            "Match); items a majority flagged."
        )
    return Aggregated(format_list_label(label, flagged, reasoning), outcome=outcome)


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
    "json_levels": Aggregator("score", ("median", "mean"), _levels),
    "json_list_score": Aggregator("score", ("mean", "median"), _list_score),
    "arena_pairwise": Aggregator("verdict", ("majority",), _arena),
    "saer_list_label": Aggregator("verdict", ("median", "majority"), _saer_label),
    "saer_pairwise": Aggregator("verdict", ("majority",), _saer_pairwise),
}


def aggregator(answer_format: str | None) -> Aggregator:
    """The aggregator of ``answer_format``; a KeyError names the formats a panel can aggregate."""
    if answer_format not in AGGREGATORS:
        raise KeyError(
            f"a panel cannot aggregate answer format {answer_format!r} (it aggregates {', '.join(AGGREGATORS)})"
        )
    return AGGREGATORS[answer_format]
