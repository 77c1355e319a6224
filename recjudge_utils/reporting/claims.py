"""What a 95 % interval allows a sentence to claim, decided in one place for every chapter.

Takeaways compare estimates (:class:`~recjudge_utils.metrics.estimate.Estimate`) with a reference (Q against 1, a
share against 0.5), with each other, or rank several of them. The rules: an estimate without an interval supports no
claim, overlapping intervals rank nothing, and an interval holding the reference shows no difference from it (nor
equality). Which words apply is decided here; the words themselves are data (:mod:`recjudge_utils.reporting.text`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from recjudge_utils.metrics.estimate import Estimate
from recjudge_utils.reporting.cells import estimate_cell

__all__ = ["Leader", "Side", "and_join", "apart", "leader", "plural", "side", "sides", "with_name"]

Side = Literal["above", "below", "contains", "none"]


def with_name(estimate: Estimate, digits: int = 3, scale: float = 1.0) -> str:
    """``name 0.61 [0.55, 0.67]``: the estimate as a sentence lists it (:func:`~.cells.estimate_cell`)."""
    return f"{estimate.name} {estimate_cell(estimate, digits=digits, scale=scale)}".strip()


def side(estimate: Estimate, reference: float, tolerance: float = 0.0) -> Side:
    """Where the interval lies relative to ``reference``: wholly ``above``, wholly ``below``, ``contains`` it, or
    ``none`` without an interval. ``tolerance`` widens the interval (a Wilson bound at 0 or 1 can miss by a rounding
    error)."""
    if not estimate.has_ci:
        return "none"
    if estimate.low - tolerance > reference:
        return "above"
    if estimate.high + tolerance < reference:
        return "below"
    return "contains"


def sides(items: Iterable[Estimate], reference: float) -> dict[Side, list[Estimate]]:
    """The estimates grouped by :func:`side` (every key present, in the order above, below, contains, none)."""
    out: dict[Side, list[Estimate]] = {"above": [], "below": [], "contains": [], "none": []}
    for e in items:
        out[side(e, reference)].append(e)
    return out


def apart(a: Estimate, b: Estimate) -> bool:
    """The two intervals do not overlap (False when either has none)."""
    return a.has_ci and b.has_ci and (a.high < b.low or b.high < a.low)


@dataclass(frozen=True)
class Leader:
    """The estimate ranked first and what its interval allows: ``overlapping`` lists the others whose interval
    reaches the leader's (empty: it leads clearly), None when some interval is missing (no ranking can be read)."""

    top: Estimate
    others: tuple[Estimate, ...]
    overlapping: tuple[Estimate, ...] | None

    @property
    def alone(self) -> bool:
        """The only estimate with a value: nothing to rank it against."""
        return not self.others

    @property
    def clear(self) -> bool:
        return not self.alone and self.overlapping == ()


def leader(items: Sequence[Estimate], higher: bool = True) -> Leader | None:
    """The highest (or lowest) estimate with a value and the others it may not be ranked above; None when no
    estimate has a value. Ties in the point estimate keep the given order."""
    known = [e for e in items if e.known]
    if not known:
        return None
    ranked = sorted(known, key=lambda e: -e.value if higher else e.value)
    top, others = ranked[0], tuple(ranked[1:])
    if not top.has_ci or not all(e.has_ci for e in others):
        return Leader(top, others, None)
    reaches = (lambda e: e.high >= top.low) if higher else (lambda e: e.low <= top.high)
    return Leader(top, others, tuple(e for e in others if reaches(e)))


def and_join(words: Sequence[str], conjunction: str = "and") -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + f" {conjunction} " + words[-1]


def plural(n: int, noun: str, many: str | None = None) -> str:
    """``1 user``, ``3 users``, ``1,000 analyses`` (``many`` for an irregular plural)."""
    return f"{n:,} {noun if n == 1 else many or noun + 's'}"
