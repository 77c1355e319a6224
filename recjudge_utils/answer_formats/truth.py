"""What an experiment knows to be right for one judged item, attached to the request it sends.

An LLM backend never sees it (it is not part of the messages and not part of an LLM's cache key); the
simulated judge (:mod:`recjudge_utils.judge.backends.sim`) answers from it, so the book can show what each
protocol detects with a judge of known quality. Each answer format names the truth type it answers from
(:mod:`recjudge_utils.answer_formats`); the definitions per protocol live in :mod:`recjudge_utils.protocols.truth`;
these are only the shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LabelTruth", "ListScoreTruth", "PreferenceTruth", "ScoreTruth", "Truth", "truth_to_dict"]


@dataclass(frozen=True)
class ScoreTruth:
    """True levels (1..5) of the fields a pointwise score prompt asks for, e.g. ``{"score": g}``."""

    levels: tuple[tuple[str, int], ...]

    def level(self, field: str) -> int | None:
        """The true level of ``field`` (None when the pair carries none for it)."""
        return dict(self.levels).get(field)


@dataclass(frozen=True)
class PreferenceTruth:
    """Evidence for each of two lists *as shown* (first = A / Set 1): for example the user's held-out
    positives each list holds. The list with more evidence is the right answer; equal evidence is a tie."""

    first: float
    second: float


@dataclass(frozen=True)
class LabelTruth:
    """The right ordinal label of a list: ``labels`` runs from worst to best and ``level`` indexes it."""

    level: int
    labels: tuple[str, ...]


@dataclass(frozen=True)
class ListScoreTruth:
    """The right absolute score of a list on [0, 1]."""

    value: float


Truth = ScoreTruth | PreferenceTruth | LabelTruth | ListScoreTruth


def truth_to_dict(truth: Truth | None) -> dict[str, object] | None:
    """JSON-ready form (for the simulated judge's cache key and the judgment log)."""
    if truth is None:
        return None
    if isinstance(truth, ScoreTruth):
        return {"kind": "score", "levels": {k: int(v) for k, v in truth.levels}}
    if isinstance(truth, PreferenceTruth):
        return {"kind": "preference", "first": float(truth.first), "second": float(truth.second)}
    if isinstance(truth, LabelTruth):
        return {"kind": "label", "level": int(truth.level), "labels": list(truth.labels)}
    return {"kind": "list_score", "value": float(truth.value)}
