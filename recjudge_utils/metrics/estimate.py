"""The one shape of a number with its interval: :class:`Estimate` (value, low, high, n, method).

Metrics that compute an interval return it; a result that carries more (a kappa's bootstrap SE, the systems a tau
ranks) is a subclass adding those fields (``agreement.Kappa``, ``system_agreement.Tau``, ``pairwise.Difference``, ...),
so whatever reads an estimate reads it. Experiments carry it in their headline
:class:`~recjudge_utils.experiments.run.Result`, reporting formats it
(:func:`~recjudge_utils.reporting.cells.estimate_cell`) and decides what it allows a sentence to claim
(:mod:`~recjudge_utils.reporting.claims`). "No number" is NaN throughout (:func:`~.numbers.number_or_nan`), so a
missing bound and a missing estimate read the same wherever they come from.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from recjudge_utils.metrics.numbers import count_or_none, number_or_nan

__all__ = ["Estimate", "estimates"]


@dataclass(frozen=True)
class Estimate:
    """One estimate and its interval (NaN bounds: none), the number of units behind it, how the interval was made
    (``"95% Wilson"``), and the name a sentence or a table row gives it (a system, a template)."""

    value: float
    low: float = math.nan
    high: float = math.nan
    n: int | None = None
    method: str | None = None
    name: str = ""

    @classmethod
    def of(
        cls, value: object, low: object = None, high: object = None, name: object = "", *, n: object = None,
        method: str | None = None,
    ) -> Estimate:  # fmt: skip
        """From any numbers a frame holds (None, NaN, numpy scalars, strings such as ``"inf"`` included)."""
        return cls(number_or_nan(value), number_or_nan(low), number_or_nan(high), count_or_none(n), method, str(name))

    @classmethod
    def of_row(cls, row: Any, column: str = "value", low: str | None = None, high: str | None = None, name: object = ""
               ) -> Estimate:  # fmt: skip
        """The estimate in ``column`` of a frame's row or record (a long frame's ``value``, by default), its interval
        in ``low`` / ``high`` (the columns of those names unless both are named). A missing column raises KeyError (an
        interval the row should hold is never silently dropped)."""
        if (low is None) != (high is None):
            raise ValueError("name both interval columns or neither")
        return cls.of(row[column], row[low or "low"], row[high or "high"], name)

    @property
    def known(self) -> bool:
        return not math.isnan(self.value)

    @property
    def has_ci(self) -> bool:
        return not (math.isnan(self.low) or math.isnan(self.high))


def estimates(
    rows: Iterable[Mapping[str, Any]], value: str, low: str, high: str, name: str | None = None
) -> list[Estimate]:
    """One :class:`Estimate` per row of records (``frame.to_dict("records")``), from the named columns."""
    return [Estimate.of(r.get(value), r.get(low), r.get(high), r.get(name, "") if name else "") for r in rows]
