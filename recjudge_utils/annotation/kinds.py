"""The three kinds of judgment a person can be asked to label, and the rubric each one uses.

* ``scores``: one (user, item) pair on the 5-level serendipity scale of chapters 1, 2 and 7 (labels "1" .. "5");
* ``lists``: one system's list for one user as SAER's pointwise judge labels it (chapters 4 and 7: Poor / Partial /
  Good Match);
* ``duels``: two systems' lists for one user, compared (chapters 3, 4 and 7: list A better, a tie, list B better).

A label is a string from :attr:`Kind.labels`, ordered worst first (for duels: B better first, A better last), which is
the order the ordinal statistics (weighted kappa, Krippendorff's ordinal alpha) use; :meth:`Kind.value` turns a
label into the number whose mean over a system is that system's estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

from recjudge_utils.metrics.agreement import POINTWISE_LABELS

__all__ = ["DUEL_LABELS", "KINDS", "SCORE_LABELS", "Kind", "kind_named"]

SCORE_LABELS: tuple[str, ...] = ("1", "2", "3", "4", "5")
#: list B better, a tie, list A better: A is the list shown first
DUEL_LABELS: tuple[str, ...] = ("B", "Tie", "A")


@dataclass(frozen=True)
class Kind:
    """One kind of annotation task: its labels (worst first), what each means, and the Label Studio control."""

    name: str
    labels: tuple[str, ...]
    meanings: dict[str, str]
    #: the Label Studio control's name: an export whose results use another name is another project's
    control: str
    #: what a system's estimate is (the mean of :meth:`value` over its tasks)
    measure: str
    values: tuple[float, ...]

    def value(self, label: str) -> float:
        """The number a label counts as in a system's mean."""
        return self.values[self.labels.index(label)]


KINDS: dict[str, Kind] = {
    "scores": Kind(
        "scores",
        SCORE_LABELS,
        {
            "1": "not serendipitous at all",
            "2": "rather not serendipitous",
            "3": "neutral",
            "4": "rather serendipitous",
            "5": "very serendipitous",
        },
        control="serendipity",
        measure="mean serendipity score (1-5)",
        values=(1.0, 2.0, 3.0, 4.0, 5.0),
    ),
    "lists": Kind(
        "lists",
        POINTWISE_LABELS,
        {
            "Poor Match": "the list does not fit the user's history",
            "Partial Match": "part of the list fits the user's history",
            "Good Match": "the list fits the user's history",
        },
        control="match",
        measure="share of Good Match lists",
        values=(0.0, 0.0, 1.0),
    ),
    "duels": Kind(
        "duels",
        DUEL_LABELS,
        {"B": "list B is better", "Tie": "neither list is better", "A": "list A is better"},
        control="preference",
        # a tie is half a win, as the arena's win rates count it
        measure="win rate of the first system of the pair (a tie is half)",
        values=(0.0, 0.5, 1.0),
    ),
}


def kind_named(name: str) -> Kind:
    """The kind called ``name``; ValueError naming the known ones otherwise."""
    if name not in KINDS:
        raise ValueError(f"unknown annotation kind {name!r}: one of {', '.join(KINDS)}")
    return KINDS[name]
