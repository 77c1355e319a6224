"""Usage and cost counted in one place (:mod:`recjudge_utils.judge.usage`, dollars by
:func:`recjudge_utils.judge.pricing.usd`): the pieces every usage table reads."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from recjudge_utils.judge.pricing import BATCH_DISCOUNT, PriceTable, usd
from recjudge_utils.judge.usage import (
    frame_usage,
    fresh_calls,
    logged_calls,
    paid_calls,
    records_usage,
    scaled,
    summed_usage,
    template_usage,
    time_cost,
    with_total,
)

NAN = float("nan")


def test_usd_is_the_one_price_formula_and_the_price_table_uses_it() -> None:
    price = {"input": 2.5, "output": 10.0}
    assert usd(1_000_000, 100_000, price) == pytest.approx(3.5)
    assert usd(1_000_000, 100_000, price, batch=True) == pytest.approx(3.5 * BATCH_DISCOUNT)
    table = PriceTable({"m": price})
    assert table.cost("m-2024-01-01", 1_000_000, 100_000) == usd(1_000_000, 100_000, price)
    assert math.isnan(table.cost("no-such-model", 10, 10))


def test_a_panels_record_counts_its_members_calls_and_only_the_paid_ones() -> None:
    single = {"template_id": "t", "cache_hit": False, "status": "parsed", "prompt_tokens": 7}
    panel = {
        "template_id": "t",
        "cache_hit": False,
        "status": "parsed",
        "members": [
            {"cache_hit": True, "status": "parsed", "prompt_tokens": 5},
            {"cache_hit": False, "status": "error", "prompt_tokens": 0},
            {"cache_hit": False, "status": "unparsed", "prompt_tokens": 9, "completion_tokens": 2, "cost_usd": 0.5},
        ],
    }
    assert logged_calls(single) == [single] and len(logged_calls(panel)) == 3
    assert paid_calls(panel) == [panel["members"][2]]
    usage = records_usage([single, panel])
    assert (usage["judgments"], usage["calls"], usage["prompt_tokens"], usage["completion_tokens"]) == (2, 2, 16, 2)
    assert usage["cost_usd"] == 0.5  # the unpriced call counts 0


def test_summed_usage_has_no_cost_when_nothing_was_priced() -> None:
    assert summed_usage([{"calls": 2, "cost_usd": None}, {"calls": 3, "cost_usd": None}]) == {
        "calls": 5,
        "cost_usd": None,
    }
    assert summed_usage([{"calls": 2, "cost_usd": None}, {"calls": 1, "cost_usd": 0.25}])["cost_usd"] == 0.25


def test_with_total_adds_a_total_row_and_keeps_counts_integers() -> None:
    table = with_total([{"notebook": "a", "calls": 2, "hours": 0.5}, {"notebook": "b", "calls": 3, "hours": 0.25}])
    assert table["notebook"].tolist() == ["a", "b", "TOTAL"]
    assert table["calls"].tolist() == [2, 3, 5] and table["calls"].dtype == "int64"


def test_frame_usage_counts_fresh_calls_per_judgment_or_per_chained_item() -> None:
    judged = pd.DataFrame({"cache_hit": [True, False, False], "prompt_tokens": [3, 4, 5], "cost_usd": [0.0, 1.0, NAN]})
    chained = pd.DataFrame({"n_calls": [3, 3], "cache_hits": [1, 3]})
    assert fresh_calls(judged) == 2 and fresh_calls(chained) == 2 and fresh_calls(pd.DataFrame({"x": [1]})) == 0
    usage = frame_usage(judged)
    assert usage == {"judgments": 3, "api_calls": 2, "prompt_tokens": 12, "completion_tokens": 0, "usd": 1.0}


def test_template_usage_sums_each_templates_scoring_frame() -> None:
    frames = {
        "base": pd.DataFrame({"n_calls": [1, 1, 1], "prompt_tokens": [10, 10, 10], "latency_s": [0.5, 0.5, 1.0]}),
        "ltm": pd.DataFrame({"n_calls": [3, 3, 3]}),
    }
    table = template_usage(frames)
    assert list(table.index) == ["base", "ltm"]
    assert table.loc["base", "calls"] == 3 and table.loc["ltm", "calls"] == 9
    assert table.loc["base", "judge_time_s"] == pytest.approx(2.0)
    assert pd.isna(table.loc["ltm", "prompt_tokens"])  # its frame has no tokens: missing, not 0


def test_time_cost_and_its_extrapolation() -> None:
    frame = pd.DataFrame(
        {
            "latency_s": [1.0, 3.0, 0.0],
            "cache_hit": [False, False, True],
            "prompt_tokens": [10, 20, 30],
            "completion_tokens": [1, 2, 3],
            "cost_usd": [0.5, 1.5, 0.0],
        }
    )
    cost = time_cost([frame], judge_s=4.0, total_s=10.0)
    assert (cost.calls, cost.fresh, cost.prompt_tokens, cost.completion_tokens) == (3, 2, 60, 6)
    assert cost.cost_usd == 2.0 and cost.per_call_s == 2.0 and cost.cost_per_call == 1.0
    assert cost.minutes_at(60) == pytest.approx(2.0) and cost.usd_at(100) == pytest.approx(100.0)
    unpriced = time_cost([frame.assign(cost_usd=NAN)], judge_s=0.0, total_s=0.0)
    assert unpriced.cost_usd is None and math.isnan(unpriced.usd_at(100))


def test_scaled_is_linear() -> None:
    assert scaled(6.0, 3, 10) == pytest.approx(20.0)
