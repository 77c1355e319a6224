"""One reading of "a number or NaN" for every value a frame, a JSON file or a judge's answer holds."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from recjudge_utils.metrics.numbers import count_or_none, number_or_nan


@pytest.mark.parametrize(
    ("value", "number"),
    [
        (3, 3.0),
        (0.25, 0.25),
        ("0.5", 0.5),
        (" 4 ", 4.0),
        (np.float32(0.5), 0.5),
        (np.int64(7), 7.0),
        (True, 1.0),
        (math.inf, math.inf),
        ("-inf", -math.inf),
    ],
)
def test_a_number_reads_as_its_float(value: Any, number: float) -> None:
    got = number_or_nan(value)
    assert isinstance(got, float) and got == number


@pytest.mark.parametrize("value", [None, "", "n/a", "abc", [1.0], {"a": 1}, math.nan, np.nan, pd.NA, "nan"])
def test_anything_else_is_nan(value: Any) -> None:
    assert math.isnan(number_or_nan(value))


@pytest.mark.parametrize("value", [math.inf, -math.inf, "inf", np.float64("inf")])
def test_finite_makes_an_infinite_value_no_number(value: Any) -> None:
    """A judge's score of ``inf`` is no score (annotation.ratings); a Q of ``inf`` elsewhere is a value."""
    assert math.isnan(number_or_nan(value, finite=True))
    assert math.isinf(number_or_nan(value))


def test_finite_keeps_finite_numbers() -> None:
    assert number_or_nan("3", finite=True) == 3.0 and number_or_nan(-0.5, finite=True) == -0.5


@pytest.mark.parametrize(
    ("value", "count"), [(3, 3), (np.int64(7), 7), (12.0, 12), ("5", 5), (None, None), (math.nan, None)]
)
def test_a_count_is_an_int_or_none(value: Any, count: int | None) -> None:
    got = count_or_none(value)
    assert got == count and (got is None or type(got) is int)
