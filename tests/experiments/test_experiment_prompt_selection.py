"""Prompt selection (chapter 1) end to end with the scripted judge: the Run's results carry numeric CIs, the numbers
are those the experiment gave before it took the one experiment shape, and every number the chapter shows (the
paired difference to the best constant predictor, confusion matrices, score shares, g beside the paper's) is
computed here and checked by hand or against scipy and scikit-learn."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from claims import numbers_in
from scipy import stats
from sklearn.metrics import confusion_matrix
from test_protocol_pointwise_score import make_items, make_pairs

from recjudge_utils.data import SerendipityPairs
from recjudge_utils.experiments import prompt_selection
from recjudge_utils.experiments.prompt_selection import PaperChoice, PromptSelectionConfig, g_counts
from recjudge_utils.experiments.results import read_results, write_run_results
from recjudge_utils.judge.aggregation import nearest_level
from recjudge_utils.judge.loading import load_profile
from recjudge_utils.metrics import judge_scores as js
from recjudge_utils.paper_tables import paper_table
from recjudge_utils.protocols.pointwise_score import template_stages
from recjudge_utils.reporting import prompt_selection as report

MULTIPLIER = {"base": 3, "ls": 1, "cot": 2, "ltm": 4}


def answer(req) -> str:
    """Every template scores the candidate by its own rule of the movie id; ids divisible by 7 are not parsed."""
    cid = int(re.search(r"Candidate \w+: Movie (\d+) ", req.messages[-1]["content"]).group(1))
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
    with_ci = [r for r in results if r.estimate.has_ci]
    assert with_ci and all(r.estimate.low <= r.estimate.value <= r.estimate.high for r in with_ci)
    assert {r.metric for r in with_ci} >= {"mae", "acc3"}
    mae = {
        r.group["template"]: (r.estimate.value, r.estimate.low, r.estimate.high, r.estimate.n)
        for r in results
        if r.metric == "mae"
    }
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
    assert (vs_base["MAE difference"], vs_base["low"], vs_base["high"]) == pytest.approx((-0.25, -0.875, 0.375))
    assert vs_base["McNemar p"] == pytest.approx(0.453125)
    assert len(selection.items()["scores"]) == 4 * 20


def test_run_shape_timings_and_results_file(selection, scripted_judge, tmp_path) -> None:
    assert selection.experiment == "prompt_selection" and selection.data_label == "toy pairs [STAND-IN]"
    assert set(selection.timings) == {f"judge {t}" for t in selection.config.templates}
    assert any("unparsed" in line or "parsed" in line for line in report.judging_lines(selection))
    assert len(report.tests_table(selection, "Template tests").data) == 3
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
        assert head.startswith("judged pairs") and numbers_in(head)[:2] == [len(sel.eval_pairs), 2150]  # the paper's
        assert f"has {len(pairs)} pairs; the {left_out} pairs of the " in why
        tail = "all of them judged" if n_pairs is None else f"of which a seeded sample of n_pairs = {n_pairs} is judged"
        assert f"{pool} remain, {tail}" in why


def test_each_template_against_the_best_constant_predictor(selection, scripted_judge) -> None:
    mae_, acc3 = (js.measure_by(selection.baselines, m, "predictor")["value"] for m in ("mae", "acc3"))
    name, level, mae = selection.best_constant()
    assert (name, mae) == (mae_.idxmin(), mae_.min()) and name.startswith(f"constant {level} ")
    assert selection.best_constant("acc3")[2] == acc3.max()
    data = SerendipityPairs(make_pairs(n_users=40, per_user=4, with_aux=True), make_items(), "toy", False, "test")
    run = prompt_selection.run(scripted_judge(answer), data, PromptSelectionConfig(("base", "cot"), 80, n_boot=5000))
    level, truth = run.best_constant()[1], run.truth
    for t, frame in run.scores.items():
        score = frame["score"].to_numpy(dtype=float)
        ok = ~np.isnan(score)
        errors = np.abs(score[ok] - truth[ok]) - np.abs(level - truth[ok])  # per pair: the template's minus the floor's
        v = run.versus_constant.loc[t]
        assert v["value"] == pytest.approx(errors.mean()) and v["n"] == ok.sum()
        # the paired percentile bootstrap against scipy's (other draws: the bounds agree to a few hundredths)
        low, high = stats.bootstrap(
            (errors,), np.mean, n_resamples=5000, method="percentile", random_state=1
        ).confidence_interval
        assert (v["low"], v["high"]) == pytest.approx((low, high), abs=0.05)


def test_the_counts_the_chapter_shows_are_the_runs(selection) -> None:
    truth = selection.truth.astype(int)
    for t, frame in selection.scores.items():
        score = frame["score"].to_numpy(dtype=float)
        ok = ~np.isnan(score)
        matrix = selection.confusions[t]
        assert (
            matrix[[1, 2, 3, 4, 5]].to_numpy() == confusion_matrix(truth[ok], score[ok], labels=[1, 2, 3, 4, 5])
        ).all()
        assert matrix["unparsed"].sum() == (~ok).sum() == frame["status"].ne("parsed").sum()
        shares = selection.distribution.query("source == @t").set_index("score")["share"]
        assert shares.sum() == pytest.approx(1.0) and shares["unparsed"] == pytest.approx((~ok).mean())
        assert selection.levels_used(t) == sorted(set(score[ok].astype(int)))
        judged = selection.judging.loc[t]
        assert (
            judged["calls"] == frame["n_calls"].sum() and judged["status"] == frame["status"].value_counts().to_dict()
        )
        assert judged["versions"] == {st.name: st.version for st in template_stages(t)}
    assert selection.judged_g == dict(zip(*np.unique(truth, return_counts=True), strict=True))
    assert selection.mean_g == pytest.approx(truth.mean())
    assert selection.n_judged_users == len(set(selection.eval_pairs["user"]))
    assert selection.n_example_users == len(set(selection.examples["user"])) == 7
    width = selection.measure("mae")["high"] - selection.measure("mae")["low"]
    assert selection.mae_ci_width == pytest.approx(width.mean())
    assert selection.examples_show_rule  # the stand-in's examples carry the relevance and unexpectedness levels


def test_g_beside_the_papers_counts(selection) -> None:
    table = selection.g_counts
    g = selection.data.pairs["g"]
    assert list(table.index) == ["1", "2", "3", "4", "5", "total"]
    assert table["pairs"].tolist() == [int((g == k).sum()) for k in range(1, 6)] + [len(g)]
    assert table["pct"].iloc[:5].tolist() == pytest.approx((100 * g.value_counts(normalize=True)).sort_index().tolist())
    assert table["paper_pairs"].tolist() == [321, 1022, 586, 208, 13, 2150]
    assert table.loc["total", ["pct", "paper_pct"]].tolist() == [100.0, 100.0]
    sparse = g_counts(pd.Series({2: 3, 4: 1}))  # levels with no pair count 0
    assert sparse["pairs"].tolist() == [0, 3, 0, 1, 0, 4] and sparse.loc["4", "pct"] == pytest.approx(25.0)


def test_the_papers_choice_is_read_from_its_table_1(selection) -> None:
    paper = paper_table("serendipity_table1")
    gpt = paper[paper["model"] == "GPT-4o-mini"].set_index("template")["mae"]
    assert (
        selection.paper_choice
        == PaperChoice(gpt.idxmin(), "GPT-4o-mini", gpt.min())
        == PaperChoice("cot", "GPT-4o-mini", 0.847)
    )


def test_a_panels_members_scores_are_kept_beside_the_panels(selection, tmp_path) -> None:
    assert "member_scores" not in selection.items()  # one judge: nothing more than its own scores
    config = PromptSelectionConfig(("base", "ltm"), n_pairs=10, n_boot=50)
    with load_profile("panel-sim").open_client(run_dir=tmp_path / "01", progress=False) as panel:
        run = prompt_selection.run(panel, selection.data, config)
    items = run.items()["member_scores"]
    assert list(items[0]) == ["template", "user", "item", "member", "label", "truth", "tokens"]
    assert all(r["label"] is None or type(r["label"]) is int for r in items)  # as the scores' items, never 3.0
    members = pd.DataFrame(items)
    pairs = run.eval_pairs.drop_duplicates(["user", "item"])  # the toy data hold a pair twice: one identity
    assert len(members) == 2 * len(pairs) * 3 and set(members["member"]) == {"sim-1", "sim-2", "sim-3"}
    g = pairs.set_index(["user", "item"])["g"]
    assert (members.set_index(["user", "item"])["truth"] == g.reindex(members.set_index(["user", "item"]).index)).all()
    # Base asks once: the panel's score is its usable members' median level (a split: the lower), as the profile says
    base = members[members["template"] == "base"].pivot(index=["user", "item"], columns="member", values="label")
    scores = run.scores["base"].set_index(["user", "item"])["score"]
    scores = scores[~scores.index.duplicated(keep=False)]  # a pair held twice: the member rows hold the later one
    checked = 0
    for key, row in base.loc[scores.index].iterrows():
        usable = row.dropna().astype(float)
        if len(usable) >= 2:
            assert scores[key] == nearest_level(float(usable.median()))
            checked += 1
    assert checked >= 8
    # LtM asks three times per pair: a member's tokens are those of all its calls
    tokens = members.groupby("template")["tokens"].mean()
    assert (members["tokens"] > 0).all() and tokens["ltm"] > 2 * tokens["base"]
