"""How a table cell shows an estimate with its interval."""

from __future__ import annotations

import math

import pytest

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
