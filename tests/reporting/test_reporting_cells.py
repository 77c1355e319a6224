"""How a table cell shows an estimate with its interval, and where in a row the estimate and its interval are."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from recjudge_utils.metrics.estimate import Estimate
from recjudge_utils.reporting.cells import estimate_cell


@pytest.mark.parametrize(
    ("args", "kwargs", "text"),
    [
        ((0.611, 0.552, 0.668), {"digits": 1, "scale": 100}, "61.1 [55.2, 66.8]"),
        ((1.9485, None, None), {"digits": 4}, "1.9485"),
        ((2.0, math.nan, math.nan), {}, "2.000"),
        ((None, 0.1, 0.2), {}, "n/a"),
        ((math.nan,), {}, "n/a"),
        ((math.inf, 1.5, math.inf), {"digits": 2}, "∞ [1.50, ∞]"),
        (("0.5", "0.25", "0.75"), {"digits": 2}, "0.50 [0.25, 0.75]"),
    ],
)
def test_an_estimate_and_its_interval_share_one_cell(args: tuple, kwargs: dict, text: str) -> None:
    assert estimate_cell(*args, **kwargs) == text


@pytest.mark.parametrize(
    ("row", "args", "text"),
    [
        ({"value": 0.5, "low": 0.25, "high": 0.75}, (), "0.500 [0.250, 0.750]"),  # value, low, high
        ({"Q": 2.0, "low": 1.5, "high": math.inf}, ("Q",), "2.000 [1.500, ∞]"),  # another column, low / high
        (
            {"human": 1.0, "human_low": 0.5, "human_high": 1.5},
            ("human", "human_low", "human_high"),
            "1.000 [0.500, 1.500]",
        ),
        ({"Q": 2.0, "low": None, "high": None}, ("Q",), "2.000"),  # bounds unknown: no interval
        ({"value": None, "low": 0.1, "high": 0.2}, (), "n/a"),
    ],
)
def test_a_rows_estimate_is_read_by_its_column(row: dict, args: tuple, text: str) -> None:
    assert estimate_cell(Estimate.of_row(row, *args)) == text
    assert estimate_cell(Estimate.of_row(pd.Series(row), *args)) == text  # a frame's row reads the same


def test_a_row_without_its_interval_columns_is_refused() -> None:
    with pytest.raises(KeyError):
        Estimate.of_row({"Q": 2.0}, "Q")
    with pytest.raises(ValueError, match="both interval columns"):
        Estimate.of_row({"Q": 2.0, "lo": 1.0}, "Q", "lo")


def test_a_rows_estimate_carries_its_name() -> None:
    e = Estimate.of_row({"value": 0.5, "low": 0.4, "high": 0.6}, name="a")
    assert (e.value, e.low, e.high, e.name) == (0.5, 0.4, 0.6, "a")
