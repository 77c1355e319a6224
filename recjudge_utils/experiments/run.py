"""The one shape every experiment has: ``run(judge, dataset, config) -> Run``.

Each module under :mod:`recjudge_utils.experiments` exposes a typed config (a frozen dataclass whose field names
are the notebook's papermill parameters), a :class:`Run` subclass holding everything the experiment produced, and
``run(judge, dataset, config)``. Extra inputs (fitted models, an encoder name, a held-out truth) are config fields
or parts of the dataset, never extra arguments. The headline numbers, each with its CI as numbers, are computed
here by :meth:`Run.results`; :mod:`recjudge_utils.reporting` only formats them and writes them to
``results.json``.

A notebook builds its config in one call, :func:`config_from` (``config_from(ArenaConfig, globals())``): every field
whose name the notebook defines (its parameters), lists as tuples where the field holds a tuple.

Timings use one naming: seconds per step, keyed ``"<verb> <object>"`` in lower case (``"train fm"``,
``"judge cot"``, ``"offline metrics"``, ``"load data"``).
"""

from __future__ import annotations

import dataclasses
import math
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar, Union, get_args, get_origin, get_type_hints

from recjudge_utils.metrics.estimate import Estimate

__all__ = ["Result", "Run", "config_from", "result"]

Config = TypeVar("Config")


def _holds_tuple(hint: Any) -> bool:
    """Whether a field's type is a tuple, or a union with one (``tuple[str, ...] | None``)."""
    if hint is tuple or get_origin(hint) is tuple:
        return True
    # X | None and Optional[X] are two origins of one idea
    return get_origin(hint) in (types.UnionType, Union) and any(_holds_tuple(arg) for arg in get_args(hint))


def config_from(cls: type[Config], parameters: Mapping[str, Any], **overrides: Any) -> Config:
    """``cls`` (an experiment's config dataclass) from a notebook's parameters: every field named in ``parameters``
    (a notebook passes ``globals()``: its parameters cell and papermill's injected values), a list given for a tuple
    field as a tuple, then ``overrides``; fields not named keep their defaults. Names in ``parameters`` that are no
    field are ignored, so a notebook's other variables never reach the config."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a config dataclass")
    hints = get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in parameters or not f.init:
            continue
        value = parameters[f.name]
        if isinstance(value, list) and _holds_tuple(hints[f.name]):
            value = tuple(value)
        values[f.name] = value
    return cls(**{**values, **overrides})


@dataclass(frozen=True)
class Result:
    """One headline number: ``metric`` for ``group`` (e.g. ``{"template": "cot"}``), its :class:`Estimate` (value,
    CI, n, how the interval was made)."""

    metric: str
    estimate: Estimate
    group: Mapping[str, str | int | float | bool] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """The row ``results.json`` holds: metric, group, value, low, high, n, interval (NaN written as null)."""
        e = self.estimate
        return {"metric": self.metric, "value": e.value, "low": e.low, "high": e.high, "n": e.n,
                "group": dict(self.group), "interval": e.method}  # fmt: skip


def result(
    metric: str,
    value: Any,
    low: Any = None,
    high: Any = None,
    n: Any = None,
    interval: str | None = None,
    **group: Any,
) -> Result:
    """A :class:`Result` from the loose numbers a frame holds (numpy scalars, None, NaN); ``interval`` names how the
    interval was made and is dropped when there is no lower bound."""
    clean_group = {k: (v.item() if hasattr(v, "item") else v) for k, v in group.items()}
    estimate = Estimate.of(value, low, high, n=n, method=interval)
    if math.isnan(estimate.low):
        estimate = dataclasses.replace(estimate, method=None)
    return Result(metric=metric, estimate=estimate, group=clean_group)


@dataclass(kw_only=True)
class Run:
    """What one experiment produced: who judged which data under which config, how long each step took.

    Subclasses add their tables and set ``experiment`` (the name written to ``results.json``).
    """

    experiment: ClassVar[str] = ""

    config: Any
    judge_name: str
    data_label: str  # the dataset's ``display_label`` (marked ``[STAND-IN]`` when it is not the paper's data)
    timings: dict[str, float] = field(default_factory=dict)

    def results(self) -> list[Result]:
        """The headline numbers with their CIs as numbers (what ``results.json`` holds)."""
        return []

    def items(self) -> dict[str, list[dict[str, Any]]]:
        """Per-item labels, one list per kind of judgment, so judges can be compared on shared items."""
        return {}
