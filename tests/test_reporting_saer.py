"""Chapter 4's display layer: tables for people (headers in words, estimate and interval in one cell, ours and the
paper's in one table), the figures, the headline intervals, the weighted-kappa exercise, and takeaways that claim
only what the intervals allow, on two constructed runs: a judge that reads (its intervals separate) and a rubber
stamp that always names the first list (they do not)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint
from test_experiment_saer import WORDS, _toy_dataset

from recjudge_utils.experiments import saer
from recjudge_utils.experiments.saer import SaerConfig, SaerRun
from recjudge_utils.judge.types import JudgeRequest
from recjudge_utils.metrics.agreement import POINTWISE_LABELS
from recjudge_utils.reporting import saer as report

N_CUSTOMERS = 12
CONFIG = SaerConfig(n_customers=N_CUSTOMERS, prompt_versions=("v1", "v3"), n_boot=50, encoder=WORDS)


def _pointwise(req: JudgeRequest) -> bool:
    return req.template_id.split("/")[-1].startswith("pointwise")


def reader(req: JudgeRequest) -> str:
    """Labels co-occurrence's lists Good and embedding's Poor, prefers co-occurrence in either order, and finds the
    genuine list under prompt v3 (it picks the decoy under the generic v1)."""
    meta = dict(req.metadata or {})
    if _pointwise(req):
        label = "Good Match" if meta["algorithm"] == "co-occurrence" else "Poor Match"
        return f"REASONING: read it.\nCATEGORY: {label}\nFLAGGED ITEMS: None"
    if meta["task"] == "pairwise":
        return f"REASONING: compared.\nVERDICT: {'Set 1' if meta['set_1'] == 'co-occurrence' else 'Set 2'}"
    genuine_first = req.truth.first > req.truth.second  # type: ignore[union-attr]
    picks_first = genuine_first if req.template_id.endswith("_v3") else not genuine_first
    return f"REASONING: compared.\nVERDICT: {'Set 1' if picks_first else 'Set 2'}"


def rubber_stamp(req: JudgeRequest) -> str:
    """Partial Match for every list, Set 1 for every pair."""
    if _pointwise(req):
        return "REASONING: fine.\nCATEGORY: Partial Match\nFLAGGED ITEMS: None"
    return "REASONING: the first.\nVERDICT: Set 1"


@pytest.fixture
def runs(scripted_judge) -> dict[str, SaerRun]:
    ds = _toy_dataset()
    return {
        "reader": saer.run(scripted_judge(reader, model="reader"), ds, CONFIG),
        "stamp": saer.run(scripted_judge(rubber_stamp, model="stamp"), ds, CONFIG),
    }


def test_takeaways_rank_and_differ_only_where_the_intervals_separate(runs):
    reads, stamp = runs["reader"], runs["stamp"]
    assert reads.detection.set_index("prompt_version").loc["v3", "correct_%"] == 100.0  # the constructed judge
    items = report.takeaways_items(reads)
    assert len(items) == 5
    labels, wins, consistency, detection, prompts = items
    assert labels.startswith("Lists labelled Good Match: co-occurrence 100.0 [")
    assert "The intervals do not overlap: in this run co-occurrence scores higher than embedding" in labels
    assert "in this run co-occurrence scores higher than embedding" in wins
    # 12 of 12 consistent: [75.8, 100] overlaps the paper's 176 / 200 interval, so no difference is claimed
    assert "The intervals overlap: this run cannot tell this judge's consistency" in consistency
    assert "the interval lies above 50 %" in detection
    assert "in this run prompt v3 scores higher than prompt v1" in prompts

    first = 100 * float((stamp.adversarial.query("prompt_version == 'v3'")["genuine_position"] == 1).mean())
    labels, wins, consistency, detection, prompts = report.takeaways_items(stamp)
    assert "The intervals overlap: this run cannot rank the two" in labels  # 0 % Good for both
    assert "The intervals overlap: this run cannot rank the two" in wins  # every pair a tie
    assert consistency.startswith("Position consistency 0.0 [0.0, ")
    assert "do not overlap: this judge's verdicts depend on the order more often" in consistency
    assert detection.startswith(f"Adversarial detection with the SAER refined prompt (v3): {first:.1f} [")
    assert "the interval includes 50 %: this run cannot tell the judge from one that guesses" in detection
    assert "cannot rank the two" in prompts  # both versions score the same positions


def test_takeaways_say_what_the_judge_returned_when_nothing_parsed(scripted_judge):
    run = saer.run(scripted_judge(lambda req: "no idea"), _toy_dataset(), CONFIG)
    (only,) = report.takeaways_items(run)  # one item: a takeaways callout with none raises
    assert only.startswith("No label, verdict or adversarial answer could be read, so nothing can be measured: 0 of ")
    assert "72 unparsed" in only and "no REASONING/CATEGORY/FLAGGED ITEMS/VERDICT field" in only
    assert "No answer of this run parsed" in report.run_notes(run).text
    (warning,) = report.health_notes(run)
    assert "No usable judgments" in warning.text


def test_takeaways_lead_with_the_unusable_share_when_more_than_a_fifth_failed(scripted_judge):
    answers = iter(range(10**6))
    half = scripted_judge(lambda req: "no idea" if next(answers) % 2 else reader(req))
    run = saer.run(half, _toy_dataset(), CONFIG)
    items = report.takeaways_items(run)
    assert items[0].startswith("The numbers below rest on the answers that could be read: ")
    assert report.health_notes(run) == []


def test_display_tables_are_for_people(runs):
    run = runs["reader"]
    tables = {
        "table1": report.table1(run),
        "table2": report.table2(run),
        "consistency": report.consistency_table(run),
        "table3": report.table3(run),
        "agreement": report.agreement_table(run),
        "flagged": report.flagged_summary(run),
        "customers": report.customers_table(run),
        "time": report.time_cost(run),
        "unparsed": report.unparsed_summary(run),
        "copied": report.copied_from_examples(run),
    }
    for name, table in tables.items():
        assert len(table.columns) <= 7, name
        assert not [c for c in table.columns if "_" in str(c)], name  # headers in words
        cells = table.astype(str).to_numpy().ravel()
        assert not [c for c in cells if c in {"inf", "nan", "None"}], name
    for name in ("table2", "table3", "agreement"):
        assert set(tables[name]["Source"]) == {"ours", "paper"}, name
    t2 = tables["table2"].set_index(["Verdicts", "Source"])
    assert t2.loc[("adjudicated pairs", "ours"), "Co-occurrence wins %"].startswith("100.0 [")
    assert t2.loc[("adjudicated pairs", "paper"), "Co-occurrence wins %"] == "51.5"
    assert t2.loc[("human labels, merged", "paper"), "Ties %"] == "58.0"
    t3 = tables["table3"]
    assert t3["Evaluator"].tolist()[:4] == ["generic prompt (v1)"] * 2 + ["SAER refined prompt (v3)"] * 2
    ag = tables["agreement"]
    assert ag.loc[ag["Source"] == "paper", "Weighted κ [95 % CI]"].tolist() == ["0.38", "0.58", "0.13", "0.43"]


def test_headline_intervals_and_the_paper_interval(runs):
    count, n = 176, 200
    low, high = proportion_confint(count, n, method="wilson")
    assert report.paper_interval(88.0, n) == pytest.approx((100 * low, 100 * high))
    frame = report.headline(runs["reader"])
    assert set(frame["source"]) == {"ours", "paper"} and len(frame) == 2 * (2 + 3 + 1 + len(CONFIG.prompt_versions))
    assert ((frame["low"] <= frame["value"] + 1e-9) & (frame["value"] <= frame["high"] + 1e-9)).all()
    ours = frame.loc[frame["source"] == "ours"].set_index("measure")
    cons = runs["reader"].position.loc["position consistency"]
    assert ours.loc["position consistency", ["value", "low", "high"]].tolist() == pytest.approx(
        [cons["pct"], cons["low"], cons["high"]]
    )


def _hatches(fig: Figure) -> set[str]:
    return {p.get_hatch() for ax in fig.axes for p in ax.patches if p.get_hatch()}


def test_figures_draw_ours_beside_the_paper_with_hatches_and_whiskers(runs):
    run = runs["stamp"]
    labels = report.plot_label_shares(run)
    assert len(labels.axes) == 2 and len(_hatches(labels)) == 3  # one hatch per label
    for ax in labels.axes:
        ticks = [t.get_text() for t in ax.get_yticklabels()]
        assert ticks[0] == f"ours ({N_CUSTOMERS} lists)" and ticks[1].startswith("paper: SAER")
        assert len(ax.containers) >= 1  # our whiskers (error bars)
    detection = report.plot_detection(run)
    (ax,) = detection.axes
    bars = [p for p in ax.patches if p.get_height() > 0]
    assert len(bars) == 2 * len(CONFIG.prompt_versions) + 2  # ours and the paper's per version, two humans
    assert any(line.get_linestyle() == "--" for line in ax.get_lines())  # the always-Set-1 line
    position = report.plot_position(run)
    legend = [t.get_text() for t in position.axes[0].get_legend().get_texts()]
    assert f"first-shown list won both times ({N_CUSTOMERS})" in legend
    assert isinstance(report.plot_forest(run), Figure)


def test_kappa_exercise_solution_is_the_computed_kappa():
    text = report.kappa_exercise().text
    a, b = (eval(m) for m in re.findall(r"^[ab] = (\[.*\])$", text, re.M))  # the lists the reader is given
    expected = cohen_kappa_score(a, b, labels=list(POINTWISE_LABELS), weights="quadratic")
    assert f"`weighted_kappa` returns {expected:.3f}" in text
    assert ":class: dropdown" in text  # the solution is hidden
    worst = re.search(r"lowers kappa most, to (-?[0-9.]+)", text)
    assert worst is not None
    changes = [
        cohen_kappa_score(a, [*b[:i], lab, *b[i + 1 :]], labels=list(POINTWISE_LABELS), weights="quadratic")
        for i in range(len(b))
        for lab in POINTWISE_LABELS
        if lab != b[i]
    ]
    assert float(worst.group(1)) == pytest.approx(np.nanmin(changes), abs=5e-4)


def test_notes_are_admonitions(runs):
    run = runs["reader"]
    assert report.context_note(run).text.startswith("```{admonition} What the judge saw")
    notes = report.run_notes(run).text
    assert "Both presentation orders agreed for 12 of 12 customers" in notes
    assert isinstance(report.example_lists(run), pd.DataFrame)
