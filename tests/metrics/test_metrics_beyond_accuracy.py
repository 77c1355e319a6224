"""Beyond-accuracy measures on hand-computed lists, and the popularity regression against statsmodels."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from recjudge_utils.metrics.beyond_accuracy import (
    catalogue_coverage,
    gini,
    gini_exposure,
    per_user_beyond_accuracy,
    popularity_regression,
)

LISTS = {1: [10, 11], 2: [10, 12]}


def test_coverage_and_gini_by_hand() -> None:
    assert catalogue_coverage(LISTS, [10, 11, 12, 13]) == 0.75
    assert gini([1, 1, 1, 1]) == 0.0
    assert gini([0, 0, 0, 4]) == pytest.approx(0.75)  # (n - 1) / n for one item taking everything
    # exposure 2, 1, 1, 0 sorted 0 1 1 2: sum (2i - 5) x_i / (4 * 4) = (-3*0 - 1*1 + 1*1 + 3*2) / 16
    assert gini_exposure(LISTS, [10, 11, 12, 13]) == pytest.approx(6 / 16)
    assert math.isnan(gini([0, 0]))


def test_per_user_popularity_novelty_and_diversity() -> None:
    popularity = {10: 8.0, 11: 2.0, 12: 0.0}
    genres = {10: ["Drama"], 11: ["Drama", "Comedy"], 12: ["Horror"]}
    got = per_user_beyond_accuracy({"s": LISTS}, [1, 2, 3], popularity, n_users=16, genres=genres)
    assert got["arp"].loc[1, "s"] == 5.0 and got["arp"].loc[2, "s"] == 4.0
    # self-information: -log2(8/16) = 1, -log2(2/16) = 3; an item nobody had counts as one interaction: 4
    assert got["novelty"].loc[1, "s"] == pytest.approx(2.0) and got["novelty"].loc[2, "s"] == pytest.approx(2.5)
    assert got["ild"].loc[1, "s"] == pytest.approx(0.5) and got["ild"].loc[2, "s"] == pytest.approx(1.0)
    assert np.isnan(got["arp"].loc[3, "s"])


def test_popularity_regression_is_statsmodels_ols_clustered_by_user() -> None:
    rng = np.random.default_rng(0)
    items = rng.integers(0, 50, 300)
    popularity = {i: float(i * 3) for i in range(50)}
    frame = pd.DataFrame({"user": rng.integers(0, 30, 300), "item": items})
    frame["score"] = 2.0 + 0.3 * np.log1p(frame["item"] * 3.0) + rng.normal(0, 0.5, 300)
    got = popularity_regression(frame, popularity)
    data = frame.assign(x=np.log1p(frame["item"] * 3.0))
    want = smf.ols("score ~ x", data).fit(cov_type="cluster", cov_kwds={"groups": data["user"]})
    assert got.value == pytest.approx(want.params["x"])
    assert (got.low, got.high) == pytest.approx(tuple(want.conf_int().loc["x"]))
    assert got.low < 0.3 < got.high and got.users == frame["user"].nunique()
    assert math.isnan(popularity_regression(frame.iloc[:2], popularity).value)


def test_few_users_give_the_slope_without_a_ci() -> None:
    frame = pd.DataFrame({"user": [1, 1, 2, 2, 3, 3], "item": [0, 1, 2, 3, 4, 5], "score": [1.0, 2, 2, 3, 4, 4]})
    got = popularity_regression(frame, {i: float(i) for i in range(6)})
    assert math.isfinite(got.value) and math.isnan(got.low) and got.users == 3
