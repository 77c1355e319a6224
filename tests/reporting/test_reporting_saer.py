"""Chapter 4's display layer: captioned tables for people (headers in words, estimate and interval in one cell, ours
and the paper's in one table), the figures, the weighted-kappa exercise showing the computed numbers, and takeaways
that claim only what the intervals allow, on two constructed runs: a judge that reads (its intervals separate) and a
rubber stamp that always names the first list (they do not). The numbers themselves are tested in
test_experiment_saer.py."""

from __future__ import annotations

import dataclasses
import re

import pytest
from claims import (
    counts_in,
    has_number,
    interval_after,
    intervals_in,
    numbers_in,
    says_apart,
    says_higher,
    says_no_ranking,
    says_overlap,
)
from matplotlib.figure import Figure
from test_experiment_saer import WORDS, _toy_dataset

from recjudge_utils.experiments import saer
from recjudge_utils.experiments.kappa_exercise import KAPPA_EXERCISE, kappa_by_hand
from recjudge_utils.experiments.saer import SaerConfig, SaerRun
from recjudge_utils.judge.types import JudgeRequest
from recjudge_utils.reporting import saer as report
from recjudge_utils.reporting.figures import MARKERS

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
    v3 = reads.detection.loc[reads.detection["prompt_version"] == "v3"].set_index("measure")
    assert v3.loc["correct", "value"] == 100.0  # the constructed judge
    items = report.takeaways_items(reads)
    assert len(items) == 5
    labels, wins, consistency, detection, prompts = items
    assert "Good Match" in labels
    assert interval_after(labels, "co-occurrence") == (100.0, 75.8, 100.0)
    assert interval_after(labels, "embedding")[0] == 0
    assert says_apart(labels) and says_higher(labels, "co-occurrence", "embedding")
    assert not says_higher(labels, "embedding", "co-occurrence")
    assert numbers_in(labels)[-2:] == [12.5, 1.5]  # the paper's shares
    assert says_apart(wins) and says_higher(wins, "co-occurrence", "embedding")
    assert numbers_in(wins)[-2:] == [51.5, 33.0]
    # 12 of 12 consistent: [75.8, 100] overlaps the paper's 176 / 200 interval, so no difference is claimed
    assert says_overlap(consistency) and says_no_ranking(consistency) and not says_apart(consistency)
    assert (176, 200) in counts_in(consistency) and (88.0, 82.8, 91.8) in intervals_in(consistency)
    assert says_higher(detection, "interval", "50 %") and not says_no_ranking(detection)
    assert says_apart(prompts) and says_higher(prompts, "v3", "v1") and not says_higher(prompts, "v1", "v3")
    assert numbers_in(prompts)[-2:] == [91.0, 74.0]

    first = 100 * float((stamp.adversarial.query("prompt_version == 'v3'")["genuine_position"] == 1).mean())
    labels, wins, consistency, detection, prompts = report.takeaways_items(stamp)
    for tie in (labels, wins, prompts):  # 0 % Good for both; every pair a tie; both versions score the same positions
        assert says_overlap(tie) and says_no_ranking(tie) and not says_apart(tie), tie
        assert not says_higher(tie, "co-occurrence", "embedding") and not says_higher(tie, "embedding", "co-occurrence")
    assert consistency.startswith("Position consistency") and intervals_in(consistency)[0][:2] == (0.0, 0.0)
    # apart, and ours the less consistent: "this judge's verdicts depend on the order more often than the paper's"
    assert says_apart(consistency) and says_higher(consistency, "this judge", "Claude 4.5 Sonnet")
    assert "v3" in detection and interval_after(detection, "v3")[0] == round(first, 1)
    assert says_no_ranking(detection) and has_number(detection, 50)  # the interval includes a coin flip


def test_takeaways_say_what_the_judge_returned_when_nothing_parsed(scripted_judge):
    run = saer.run(scripted_judge(lambda req: "no idea"), _toy_dataset(), CONFIG)
    (only,) = report.takeaways_items(run)  # one item: a takeaways callout with none raises
    assert counts_in(only)[0] == (0, 72)  # nothing usable of the 72 answers
    assert "72 unparsed" in only and "no REASONING/CATEGORY/FLAGGED ITEMS/VERDICT field" in only
    assert "No answer of this run parsed" in report.run_notes(run).text
    assert run.top_label is None and run.position.loc["named Set 1", "n"] == 0
    (warning,) = report.health_notes(run)
    assert "No usable judgments" in warning.text


def test_takeaways_lead_with_the_unusable_share_when_more_than_a_fifth_failed(scripted_judge):
    answers = iter(range(10**6))
    half = scripted_judge(lambda req: "no idea" if next(answers) % 2 else reader(req))
    run = saer.run(half, _toy_dataset(), CONFIG)
    items = report.takeaways_items(run)
    usable, n = counts_in(items[0])[0]  # the usable share said first
    assert n == len(run.pointwise) + len(run.pairwise) + len(run.adversarial) and 0 < usable < 0.8 * n
    assert report.health_notes(run) == []


def test_display_tables_are_for_people(runs):
    run, toy = runs["reader"], _toy_dataset()
    title, first = run.title_suffix, run.sample.users[0]
    stylers = {
        "table1": report.table1(run, f"Table 1, ours and the paper's: pointwise labels — {title}"),
        "table2": report.table2(run, f"Table 2, ours and the paper's: pairwise wins and ties — {title}"),
        "consistency": report.consistency_table(run, f"Position consistency — {title}"),
        "table3": report.table3(run, f"Table 3, ours and the paper's: adversarial outcomes — {title}"),
        "agreement": report.agreement_table(run, f"Agreement between labelers, ours and the paper's — {title}"),
        "flagged": report.flagged_summary(run, f"Flagged items per list (prompt {run.config.main_version}) — {title}"),
        "customers": report.customers_table(run, f"Sampled customers — {run.data_label}"),
        "time": report.time_cost(run, f"Time and cost — {title}"),
        "unparsed": report.unparsed_summary(run, f"Unparsed answers — {title}"),
        "copied": report.copied_table(run, f"Answers copying a few-shot example — {title}"),
        "lists": report.example_lists(run, f"Top-{run.config.top_k} lists, customer {first} — {run.data_label}"),
        "substitutions": report.substitutions_table(
            toy, f"SAER customer context and what is used here — {toy.display_label}"
        ),
    }  # the notebook's captions
    for name, styler in stylers.items():  # captioned with the run (or the data) they show
        label = "toy (stand-in)" if name == "substitutions" else run.data_label
        assert label in styler.caption and styler.caption.split(" — ")[0], name
    tables = {name: styler.data for name, styler in stylers.items()}
    assert run.judge_name in stylers["table1"].caption and run.judge_name not in stylers["customers"].caption
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
    assert ag.loc[ag["Source"] == "paper", "Cases"].tolist() == ["not stated", "not stated", "200", "200"]
    cons = tables["consistency"].set_index("Measure")["Paper"]
    assert cons.iloc[0] == "176 of 200: 88.0" and cons.iloc[1] == "not reported"
    assert tables["copied"].columns[-1] == f"Repeating ≥ {saer.COPY_MIN_CHARS} characters of an example"
    assert tables["copied"]["Few-shot answers"].tolist() == run.copied["shots"].tolist()
    time = tables["time"].set_index("Quantity")
    assert time.iloc[0].tolist() == [f"{run.cost.calls} ({run.cost.fresh} fresh, 0 from cache)", "1100"]
    assert "extrapolated" in time.index[-1] and numbers_in(time.index[-1]) == [saer.PAPER_CALLS]
    assert (
        time.iloc[-1, 0] == f"{run.cost.minutes_at(saer.PAPER_CALLS):.1f} min, $0.00"
    )  # the scripted judge costs nothing


def test_the_forest_plot_draws_every_headline_share_with_its_interval(runs):
    frame = runs["reader"].headline()
    assert set(frame["source"]) == {"ours", "paper"} and len(frame) == 2 * (2 + 3 + 1 + len(CONFIG.prompt_versions))
    assert ((frame["low"] <= frame["value"] + 1e-9) & (frame["value"] <= frame["high"] + 1e-9)).all()
    (ax,) = report.plot_forest(runs["reader"]).axes
    assert [t.get_text() for t in ax.get_yticklabels()] == list(dict.fromkeys(frame["measure"]))
    drawn = sorted(x for line in ax.get_lines() for x in line.get_xdata() if line.get_marker() in MARKERS)
    assert drawn == pytest.approx(sorted(frame["value"]))


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
    legend = [t.get_text() for t in detection.axes[0].get_legend().get_texts()]
    first = run.detection.set_index(["prompt_version", "measure"]).loc[("v3", "genuine_first"), "value"]
    assert legend[-1].startswith("paper") and numbers_in(legend[-1])[-1] == 100  # the paper's pairs
    assert f"a judge always naming Set 1 ({first:.0f} %)" in legend
    position = report.plot_position(run)
    legend = [t.get_text() for t in position.axes[0].get_legend().get_texts()]
    assert f"first-shown list won both times ({N_CUSTOMERS})" in legend
    assert [re.match(r"paper: (\w+)", t)[1] for t in legend[-2:]] == ["consistent", "inconsistent"]
    assert [numbers_in(t) for t in legend[-2:]] == [[176], [24]]
    assert isinstance(report.plot_forest(run), Figure)


def test_kappa_exercise_shows_the_computed_working():
    k = kappa_by_hand()
    text = report.kappa_exercise(k).text
    a, b = (eval(m) for m in re.findall(r"^[ab] = (\[.*\])$", text, re.M))  # the lists the reader is given
    assert (a, b) == (k.a, k.b) == tuple(map(list, KAPPA_EXERCISE))
    assert ":class: dropdown" in text  # the solution is hidden
    assert f"`weighted_kappa` returns {k.package:.3f}" in text and f"= {k.kappa:.3f}$" in text
    assert f"Codes: a = {k.codes_a}, b = {k.codes_b}" in text and f"differences {k.costs} average" in text
    assert f"setting list {k.where + 1} to {k.to} lowers kappa most, to {k.worst:.3f}" in text
    assert f"cost {k.steps_before**2} → {k.steps_after**2}" in text
    assert "$\\sum_{ij} p_a(i)" in text and "{term}`weighted kappa`" in text  # LaTeX and MyST pass through


def test_notes_are_admonitions(runs):
    run = runs["reader"]
    assert report.context_note(run).text.startswith("```{admonition} What the judge saw")
    notes = report.run_notes(run).text.splitlines()[2:-1]
    assert "Set 1" in notes[0] and numbers_in(notes[0])[-2:] == [50, 24]  # named Set 1 in 50 % of 24 answers
    assert counts_in(notes[1]) == [(12, 12)] and numbers_in(notes[1])[-1] == 0  # 12 of 12 agreed, 0 others
    v1 = run.detection.loc[run.detection["prompt_version"] == "v1"].set_index("measure")["value"]
    assert "v1" in notes[2] and numbers_in(notes[2])[:2] == [0, round(v1["genuine_first_parsed"])]
    assert "v3" in notes[-1] and counts_in(notes[-1]) == [(12, 24), (0, 24)]  # labels, unparsed answers
    assert list(report.example_lists(run, "Top lists").data.columns) == ["Rank", "Co-occurrence", "Embedding"]


def test_a_stand_in_gets_its_note_and_the_paper_domain_none():
    toy = _toy_dataset()
    (note,) = report.data_notes(toy)
    assert f"**{toy.display_label}**" in note.text and "Amazon Beauty" in note.text  # ours, and the paper's data
    assert "3-5 stars" in note.text and "purchases" in note.text  # what stands in for what
    assert report.data_notes(dataclasses.replace(toy, name="amazon-beauty")) == []
