"""Chapter 1's tables, figures and takeaways for people: headers in words, an estimate and its CI in one cell, ours
beside the paper's, and takeaways that say only what the run's CIs allow (one run where they separate the
templates, one where they do not)."""

from __future__ import annotations

import json
import zlib

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from claims import (
    affirms,
    counts_in,
    denies,
    has_number,
    interval_after,
    intervals_in,
    numbers_in,
    says_higher,
    says_no_ranking,
)
from conftest import with_label_probs
from test_protocol_pointwise_score import make_items, make_pairs

from recjudge_utils.data import SerendipityPairs
from recjudge_utils.experiments import prompt_selection
from recjudge_utils.experiments.prompt_selection import PromptSelectionConfig, PromptSelectionRun
from recjudge_utils.paper_tables import paper_table
from recjudge_utils.reporting import prompt_selection as report

PAPER = paper_table("serendipity_table1")
PAPER_COT_GPT = float(PAPER.query("template == 'cot' and model == 'GPT-4o-mini'")["mae"].item())


def exact_cot_reversed_base(req) -> str:
    """CoT answers the truth g; Base answers 6 - g, the scale reversed."""
    g = req.truth.level("score")
    score = g if req.template_id.endswith("cot") else 6 - g
    return json.dumps({"relevance": g, "unexpectedness": g, "score": score})


def equally_noisy(req) -> str:
    """Both templates answer g plus an error in -2..2 drawn from a hash of the template and the pair."""
    g = req.truth.level("score")
    error = zlib.crc32((req.template_id + req.messages[-1]["content"]).encode()) % 5 - 2
    score = int(np.clip(g + error, 1, 5))
    return json.dumps({"relevance": g, "unexpectedness": g, "score": score})


def toy_run(judge, answer, is_real: bool, templates: tuple[str, ...] = ("base", "cot")) -> PromptSelectionRun:
    pairs = make_pairs(n_users=40, per_user=4, with_aux=True)
    data = SerendipityPairs(pairs, make_items(), "toy pairs", is_real, "test")
    config = PromptSelectionConfig(templates=templates, n_pairs=60, n_boot=400)
    return prompt_selection.run(judge(answer), data, config)


@pytest.fixture
def separated(scripted_judge) -> PromptSelectionRun:
    return toy_run(scripted_judge, exact_cot_reversed_base, is_real=False)


@pytest.fixture
def overlapping(scripted_judge) -> PromptSelectionRun:
    return toy_run(scripted_judge, equally_noisy, is_real=True)


def test_takeaways_rank_the_templates_when_the_cis_separate_them(separated) -> None:
    assert separated.selected == "cot"
    ranking, constant, kappa, paper, sample = report.takeaways_items(separated)
    assert affirms(ranking, r"\bCoT\b.*\blowest\b") and interval_after(ranking, "CoT") == (0.0, 0.0, 0.0)
    assert "exclude 0" in ranking and "ranks CoT first" in ranking
    assert constant.startswith("CoT beats the best constant predictor (always ")
    assert kappa.startswith("CoT") and interval_after(kappa, "κ") == (1.0, 1.0, 1.0) and affirms(kappa, "excludes 0")
    assert "stand-in" in paper and f"MAE {PAPER_COT_GPT:.3f} with GPT-4o-mini" in paper
    assert "MAE" in sample and numbers_in(sample)[0] == 60  # judged pairs


def test_takeaways_refuse_a_ranking_the_cis_do_not_support(overlapping) -> None:
    ranking, constant, _, paper, _ = report.takeaways_items(overlapping)
    other = "Base" if overlapping.selected == "cot" else "CoT"
    [test] = overlapping.template_tests.to_dict("records")
    assert test["low"] <= 0 <= test["high"]  # the premise: this run's CI includes 0
    assert f"the paired MAE differences to {other} include 0" in ranking and "cannot rank" in ranking
    assert "ranks" not in ranking.replace("cannot rank", "")
    # the constant verdict follows the side of 0 its own paired CI lies on, whichever way this run fell
    d = overlapping.versus_constant.loc[overlapping.selected]
    expected = "beats" if d["high"] < 0 else ("is worse than" if d["low"] > 0 else "cannot be told apart from")
    assert f" {expected} the best constant predictor" in constant
    # real data: the paper's CoT number is set beside this run's CI, inside or outside as the numbers say
    cot = overlapping.measure("mae").loc["cot"]
    where = "inside" if cot["low"] <= PAPER_COT_GPT <= cot["high"] else "outside"
    assert paper.startswith(f"The paper's CoT MAE with GPT-4o-mini, {PAPER_COT_GPT:.3f}, lies {where} this run's CI")


def test_table1_puts_ours_and_the_papers_side_by_side_in_words(separated) -> None:
    frame = report.table1(separated, "Table 1").data
    headers = list(frame.columns)
    assert headers[0] == ("template", "")
    assert ("MAE", "paper, GPT-4o-mini") in headers and ("MAE", "this run (95 % CI)") in headers
    assert ("3-class accuracy %", "paper, Llama-3.1-70B") in headers
    assert not any("_" in part for h in headers for part in h)  # no machine names such as kappa_qw
    rows = frame.set_index(("template", ""))
    assert list(rows.index) == ["Base", "CoT"]
    assert rows.loc["CoT", ("MAE", "paper, GPT-4o-mini")] == f"{PAPER_COT_GPT:.3f}"
    assert rows.loc["CoT", ("MAE", "this run (95 % CI)")] == "0.00 [0.00, 0.00]"
    assert rows.loc["CoT", ("3-class accuracy %", "this run (95 % CI)")].startswith("100.0 [")
    assert rows.loc["Base", ("", "parsed / judged")] == "60 / 60"


def test_display_tables_have_worded_headers_and_no_index(separated) -> None:
    for table in (report.baselines_table, report.agreement_table, report.cost_table, report.tests_table):
        styler = table(separated, "a caption")
        assert styler.caption and styler.hide_index_[0]
        assert not [c for c in styler.data.columns if "_" in str(c)], table.__name__
    tests = report.tests_table(separated, "Template tests").data
    assert list(tests["comparison"]) == ["CoT vs Base"]
    assert tests.loc[0, "MAE difference (95 % CI)"].startswith("-")


def test_forest_rows_hold_our_cis_and_the_papers_points(separated) -> None:
    rows = report.forest_rows(separated, "acc3")
    ours = rows[rows["source"] == "this run (95 % CI)"].set_index("template")
    assert ours.loc["CoT", "value"] == pytest.approx(100.0) and ours.loc["CoT", "low"] < 100.0
    paper = rows[rows["source"] == "paper, GPT-4o-mini"].set_index("template")
    assert paper.loc["CoT", "value"] == pytest.approx(46.98) and np.isnan(paper.loc["CoT", "low"])
    assert list(dict.fromkeys(rows["template"])) == ["Base", "CoT"]
    ax = report.template_forest(separated, "mae").axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[0].startswith("best constant predictor: always ") and "paper, GPT-4o-mini" in legend
    with pytest.raises(ValueError):
        report.forest_rows(separated, "kappa")


def test_the_sample_sentence_quotes_the_runs_pairs_and_mean_ci_width(separated) -> None:
    width = (separated.measure("mae")["high"] - separated.measure("mae")["low"]).mean()
    assert separated.mae_ci_width == pytest.approx(width)
    sentence = report.sample_sentence(separated)
    assert "60 judged pairs" in sentence and f"{width:.2f} wide" in sentence


def test_caveats_are_admonitions_only_where_they_apply(separated, overlapping) -> None:
    [stand_in] = report.data_notes(separated)
    assert "Stand-in data" in stand_in.text and "kotkov2018serendipity" in stand_in.text
    assert report.data_notes(overlapping) == []
    rule = [n for n in report.table1_notes(separated) if "CoT and LtM see the rule" in n.text]
    assert len(rule) == 1 and rule[0].text.startswith("```{admonition}")
    assert not [n for n in report.table1_notes(overlapping) if "see the rule" in n.text]  # real data: no such note


def test_no_parsed_template_selects_none_and_every_report_says_so(scripted_judge, tmp_path) -> None:
    run = toy_run(scripted_judge, lambda req: "I would rather not say.", is_real=False)
    assert run.selected is None and run.overlapping == [] and run.template_tests.empty
    assert "selected" not in {r.metric for r in run.results()}
    health = "0 of 120 answers could be read; the other 120 (120 unparsed): 120 × no JSON object found in answer."
    first, fallback = report.takeaways_items(run)
    assert first.endswith(health) and "none was selected" in first
    assert "CoT, the paper's choice" in fallback
    (warning,) = report.health_notes(run)
    assert "which template judges best" in warning.text  # the question it cannot answer
    lines = report.selection_lines(run, tmp_path / "selected_template.json")
    assert lines[0].startswith("selected template: none") and counts_in(lines[0])[0] == (0, 120)
    table = report.table1(run, "Table 1").data
    assert (table[("MAE", "this run (95 % CI)")] == "no parsed judgment").all()
    written = json.loads(prompt_selection.save_selection(run, tmp_path / "sel.json").read_text())
    assert written["template"] is None and written["reason"].startswith("no template produced a parsed answer")


def test_a_mostly_unparsed_run_leads_its_takeaways_with_what_could_be_read(scripted_judge) -> None:
    count = iter(range(10**6))
    run = toy_run(scripted_judge, lambda req: "no" if next(count) % 2 else exact_cot_reversed_base(req), False)
    first = report.takeaways_items(run)[0]
    assert counts_in(first)[0] == (60, 120)  # what could be read, said first


def test_a_kappa_interval_below_zero_says_so(scripted_judge) -> None:
    run = toy_run(scripted_judge, exact_cot_reversed_base, is_real=True, templates=("base",))
    ranking, constant, kappa, paper, _ = report.takeaways_items(run)  # Base answers 6 - g: agreement below chance
    assert says_no_ranking(ranking) and "Base" in ranking and "CoT" not in ranking
    assert run.measure("kappa_qw").loc["base", "high"] < 0 and "lies below 0" in kappa and "includes 0" not in kappa
    assert " is worse than the best constant predictor" in constant and "a CI above 0" in constant
    assert "CoT" in paper and denies(paper, "interval") and not intervals_in(paper)  # CoT was not run
    assert has_number(paper, round(PAPER_COT_GPT, 3))


def test_verdict_lines_follow_each_templates_paired_ci(separated) -> None:
    head, *lines = report.verdict_lines(separated)
    name, level, mae = separated.best_constant()
    assert head.endswith(f"best constant predictor: {name}, MAE {mae:.3f}") and f"constant {level}" in name
    base, cot = lines  # Base reversed: worse than the constant; CoT exact: better than it
    assert base.startswith("- base: MAE ") and " is worse than the best constant predictor" in base
    assert cot.startswith("- cot") and interval_after(cot, "MAE") == (0.0, 0.0, 0.0)
    assert says_higher(cot, "MAE", "constant predictor")  # beats it
    assert "levels" in cot and numbers_in(cot)[-5:] == [1, 2, 3, 4, 5]  # every level predicted


def test_expected_scores_are_compared_with_the_argmax_on_the_same_pairs(scripted_judge) -> None:
    def answer(req):  # every answer carries label probabilities: expected score 3.25 on every pair
        return with_label_probs(exact_cot_reversed_base(req), {"3": 0.75, "4": 0.25})

    run = toy_run(scripted_judge, answer, is_real=False)
    s = run.summary.pivot(index="template", columns="measure", values="value")
    assert (run.measure("mae_expected")["n"] == 60).all()
    assert s["mae_expected_gain"].tolist() == pytest.approx((s["mae_expected"] - s["mae_argmax_same"]).tolist())
    base, cot = report.logprob_lines(run)  # CoT's exact argmax beats 3.25; Base's reversed one does not
    assert base.startswith("base: the expected score lowers the MAE") and base.endswith("60 pairs)")
    assert cot.startswith("cot") and denies(cot, "lower") and numbers_in(cot) == [0.0, 1.25, 60]  # argmax 0
    table = report.logprob_table(run, "Logprobs").data.set_index("template")
    assert table.loc["CoT", "with logprobs"] == 60 and table.loc["CoT", "MAE, argmax score"] == "0.000"
    assert float(table.loc["CoT", "expected − argmax"]) == pytest.approx(s.loc["cot", "mae_expected_gain"], abs=5e-4)


def test_the_example_prompt_is_the_first_judged_pairs(separated) -> None:
    messages = separated.example_messages("cot")
    assert [m["role"] for m in messages[:3]] == ["system", "user", "assistant"] and messages[-1]["role"] == "user"
    assert len(messages) == 2 + 2 * separated.config.n_shots
    shown = report.example_prompt(separated, "cot")
    head, system = shown.splitlines()[:2]
    n_shots = separated.config.n_shots
    assert numbers_in(head) == [2 + 2 * n_shots, 1, 2 * n_shots, 1] and system == "--- system ---"
    assert shown.endswith("--- the judged pair (last message) ---\n" + messages[-1]["content"])


def test_the_figures_draw_the_runs_counts_and_shares(separated) -> None:
    base, cot = report.confusion_figure(separated).axes
    assert cot.get_title() == "CoT: MAE 0.00, accuracy 100 %" and base.get_title().startswith("Base: MAE ")
    assert [int(t.get_text()) for t in cot.texts] == separated.confusions["cot"].to_numpy().ravel().tolist()
    assert (cot.get_xlabel(), cot.get_ylabel()) == ("judge's score", "g (ground truth)")
    ax = report.distribution_figure(separated).axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["g (truth)", "Base", "CoT"]
    truth = separated.distribution.query("source == 'g (truth)'")["share"].tolist()
    assert [p.get_height() for p in ax.patches[: len(truth)]] == pytest.approx(truth)  # one bar per score, g first
