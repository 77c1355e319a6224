"""Prompt selection (chapter 1) end to end with the scripted judge: the Run's results carry numeric CIs, and the
numbers are those the experiment gave before it took the one experiment shape."""

from __future__ import annotations

import json
import re

import pytest
from test_protocol_pointwise_score import make_items, make_pairs

from recjudge_utils.data import SerendipityPairs
from recjudge_utils.experiments import prompt_selection
from recjudge_utils.experiments.prompt_selection import PromptSelectionConfig
from recjudge_utils.reporting import prompt_selection as report
from recjudge_utils.reporting.results import read_results, write_run_results

MULTIPLIER = {"base": 3, "ls": 1, "cot": 2, "ltm": 4}


def answer(req) -> str:
    """Every template scores the candidate by its own rule of the movie id; ids divisible by 7 are not parsed."""
    cid = int(re.search(r"Candidate movie: Movie (\d+) ", req.messages[-1]["content"]).group(1))
    if cid % 7 == 0:
        return "garbage"
    score = (cid * MULTIPLIER[req.template_id.split("/")[1]]) % 5 + 1
    return json.dumps({"relevance": cid % 5 + 1, "unexpectedness": (cid // 5) % 5 + 1, "score": score})


@pytest.fixture
def selection(scripted_judge) -> prompt_selection.PromptSelectionRun:
    data = SerendipityPairs(make_pairs(n_users=12, per_user=4, with_aux=True), make_items(), "toy pairs", False, "test")
    return prompt_selection.run(scripted_judge(answer), data, PromptSelectionConfig(n_pairs=20, n_boot=300))


def test_results_hold_numeric_cis_and_the_earlier_numbers(selection) -> None:
    results = selection.results()
    with_ci = [r for r in results if r.low is not None]
    assert with_ci and all(r.low <= r.value <= r.high for r in with_ci)
    assert {r.metric for r in with_ci} >= {"mae", "acc3"}
    mae = {r.group["template"]: (r.value, r.low, r.high, r.n) for r in results if r.metric == "mae"}
    # the numbers run_prompt_selection + reporting.results gave at the same parameters (commit a6af0c5)
    assert mae == {
        "base": pytest.approx((1.4375, 1.0, 1.9375, 16)),
        "ls": pytest.approx((1.3125, 0.875, 1.75, 16)),
        "cot": pytest.approx((1.3125, 0.6875, 1.9375, 16)),
        "ltm": pytest.approx((1.1875, 0.6546875, 1.75, 16)),
    }
    assert selection.selected == "ltm" and selection.overlapping == ["ls", "cot", "base"]
    [selected] = [r for r in results if r.metric == "selected"]
    assert selected.group == {"template": "ltm"}
    vs_base = selection.template_tests.set_index("other").loc["base"]
    assert (vs_base["MAE difference"], vs_base["MAE diff low"], vs_base["MAE diff high"]) == pytest.approx(
        (-0.25, -0.875, 0.375)
    )
    assert vs_base["McNemar p"] == pytest.approx(0.453125)
    assert len(selection.items()["scores"]) == 4 * 20


def test_run_shape_timings_and_results_file(selection, scripted_judge, tmp_path) -> None:
    assert selection.experiment == "prompt_selection" and selection.data_label == "toy pairs [STAND-IN]"
    assert set(selection.timings) == {f"judge {t}" for t in selection.config.templates}
    assert any("unparsed" in line or "parsed" in line for line in report.judging_lines(selection))
    assert len(report.tests_table(selection).data) == 3
    client = scripted_judge(answer)
    written = read_results(write_run_results("01_serendipity_prompt_selection", selection, client, tmp_path))
    assert written["experiment"] == "prompt_selection" and len(written["results"]) == len(selection.results())


def test_judged_n_is_printed_beside_the_papers_with_the_pairs_left_out(selection, scripted_judge) -> None:
    pairs = selection.data.pairs
    left_out = int(pairs["user"].isin(set(selection.examples["user"])).sum())
    pool = len(pairs) - left_out
    for n_pairs in (None, pool - 5):
        config = PromptSelectionConfig(templates=("base",), n_pairs=n_pairs, n_boot=50)
        sel = prompt_selection.run(scripted_judge(answer), selection.data, config)
        assert len(sel.eval_pairs) == (pool if n_pairs is None else n_pairs)
        head, why = report.sample_size_lines(sel)
        assert (
            head
            == f"judged pairs: n = {len(sel.eval_pairs)}; the paper judged all 2,150 Serendipity-2018 pairs (Sec. 4.1)"
        )
        assert f"has {len(pairs)} pairs; the {left_out} pairs of the " in why
        tail = "all of them judged" if n_pairs is None else f"of which a seeded sample of n_pairs = {n_pairs} is judged"
        assert f"{pool} remain, {tail}" in why
