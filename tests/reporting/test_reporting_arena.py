"""Chapter 3's display layer: tables for people (headers in words, estimate and interval in one cell, ∞ with its
note, no index), the figures (hatched Win / Tie / Lose bars, Q beside the paper's, position bias), and takeaways
that say what each interval allows, on a run where the intervals separate and on one where they do not."""

from __future__ import annotations

import json
import re

import matplotlib

matplotlib.use("Agg")

import pytest
from claims import about, affirms, clauses, has_number, intervals_in, says_no_ranking, says_overlap
from test_experiment_arena import toy_dataset

from recjudge_utils.answer_formats.arena_verdicts import OVERALL, aspect_key
from recjudge_utils.experiments import arena
from recjudge_utils.judge.types import JudgeRequest
from recjudge_utils.metrics.intervals import wilson
from recjudge_utils.protocols.arena import resolve_aspects
from recjudge_utils.reporting import arena as report
from recjudge_utils.reporting.cells import estimate_cell

KEYS = [aspect_key(a) for a in resolve_aspects()]
ABSOLUTE = json.dumps({"analysis": "fine", "score": 0.5})
#: the column names of the run's frames that must never reach a reader
MACHINE_NAMES = {"x", "y", "source", "n", "n_unjudged", "value", "low", "high", "llm", "rs", "q"}


def _answer(verdict: str) -> str:
    """A pair-wise answer giving ``verdict`` on every aspect and overall."""
    return json.dumps({**{k: {"analysis": "fine", "verdict": verdict} for k in KEYS}, OVERALL: verdict})


def taste_judge(req: JudgeRequest) -> str:
    """Prefers pop to fm (a tie for every third user) and fm to random, in whichever order they are shown: a judge
    without position bias whose preferences the intervals can separate; bprmf ties with fm."""
    if req.template_id == "arena/absolute":
        return ABSOLUTE
    meta = req.metadata
    shown = {meta["A"]: "A", meta["B"]: "B"}  # type: ignore[index]
    user = int(meta["user"])  # type: ignore[index,arg-type]
    if "pop" in shown and "fm" in shown:
        return _answer("Tie" if user % 3 == 0 else f"{shown['pop']} wins")
    if "random" in shown and "fm" in shown:
        return _answer(f"{shown['fm']} wins")
    return _answer("Tie")


def first_list_judge(req: JudgeRequest) -> str:
    """Names the list shown first whatever it holds: adjudication turns every comparison into a tie."""
    return ABSOLUTE if req.template_id == "arena/absolute" else _answer("A wins")


def _run(scripted_judge, answer, recommenders=("fm", "pop", "random", "bprmf")) -> arena.ArenaRun:
    config = arena.ArenaConfig(recommenders=recommenders, baseline="fm", n_users=12, n_boot=300)
    return arena.run(scripted_judge(answer), toy_dataset(), config)


def _no_index(styler) -> bool:
    return "row_heading" not in styler.to_html()


def test_takeaways_say_what_separating_intervals_allow(scripted_judge):
    run = _run(scripted_judge, taste_judge)
    q = run.versus("adjudicated").query("measure == 'Q'").set_index("x")
    assert q.loc["pop", "low"] > 1 and q.loc["random", "high"] < 1 and q.loc["bprmf", "value"] == 1.0
    items = report.takeaways_items(run)
    q_line = items[0]
    above, below = q_line.split("lies above 1")[0], q_line.split("lies above 1")[1].split("lies below 1")[0]
    assert "pop" in above and "random" not in above and "random" in below
    assert "bprmf" in q_line.split("lies below 1")[1] and "cannot tell these from fm" in q_line
    assert any(t.startswith("Ranking: pop's interval lies above every other") for t in items)
    # the judge follows the lists, not the position: the 'A wins' share's interval contains 0.5
    position = next(t for t in items if "position consistency" in t)
    assert "contains 0.5" in position and "cannot show a preference for either position" in position


def test_takeaways_do_not_claim_what_overlapping_intervals_do_not_show(scripted_judge):
    run = _run(scripted_judge, first_list_judge)
    items = report.takeaways_items(run)
    assert intervals_in(items[0]) == [(1.0, 1.0, 1.0)] * 3  # every Q against fm
    (untold,) = [c for c in clauses(items[0]) if says_no_ranking(c)]
    assert "fm" in untold
    assert "lies above 1" not in items[0] and "lies below 1" not in items[0]
    ranking = about(items, "Ranking")
    assert says_overlap(ranking) and says_no_ranking(ranking) and "random" in ranking and "bprmf" in ranking
    assert not any("it ranks first here" in t for t in items)
    position = next(t for t in items if "position consistency" in t)
    assert "prefers the list shown first" in position
    correlation = about(items, "correlation")  # every adjudicated Q is 1: no correlation to compute
    assert affirms(correlation, "same") and has_number(correlation, 3) and "r =" not in correlation
    # 12 users x 4 comparisons (3 against fm, 1 close pair): none consistent; all 96 answers name A
    assert report.headline_cells(run) == {
        "consistency": estimate_cell(0.0, *wilson(0, 48), digits=2),
        "a_share": estimate_cell(1.0, *wilson(96, 96), digits=2),
    }


def test_tables_are_for_people(scripted_judge):
    run = _run(scripted_judge, taste_judge)
    t2 = report.table2(run, "Table 2")
    assert list(t2.data.columns) == [
        "recommender",
        "order",
        "judged",
        "Win % [95 % CI]",
        "Tie % [95 % CI]",
        "Lose % [95 % CI]",
        "Q [95 % CI]",
        "rank",
    ]
    assert t2.data["order"].tolist()[:3] == ["paper's order", "swapped", "adjudicated"]
    pop = t2.data[(t2.data["recommender"] == "pop") & (t2.data["order"] == "adjudicated")].iloc[0]
    assert pop["Q [95 % CI]"].startswith("3.00 [")  # 8 wins and 4 ties in 12: Q = 12 / 4
    assert "∞" not in t2.caption  # no Q is infinite here, so no note
    random = t2.data[(t2.data["recommender"] == "random") & (t2.data["order"] == "adjudicated")].iloc[0]
    assert random["Lose % [95 % CI]"].startswith("100.0 [") and random["Q [95 % CI]"] == "0.00 [0.00, 0.00]"
    for styler in (
        t2,
        report.table2_beside_paper(run, "Table 2 beside the paper"),
        report.position_table(run, "Position bias"),
        report.close_pairs_table(run, "Close pairs"),
        report.aspect_table(run, "Q per aspect"),
        report.table4(run, "Table 4"),
        report.table3(run, "Table 3 (ours)"),
        report.relative_table(run, "Relative against absolute evaluation"),
        report.separation_table(run),
        report.unparsed_summary(run, "Unparsed answers"),
        report.table1(run, "Table 1."),
        report.setup_table(
            run,
            "The setting of the authors' code (anonyProjects/RecSys-Arena, prompt_template_gpt.py) beside this run's",
        ),
    ):
        assert _no_index(styler), styler.caption
        assert not set(styler.data.columns) & MACHINE_NAMES, styler.caption
        assert len(styler.data.columns) <= 8, styler.caption
        cells = [str(c) for c in styler.data.to_numpy().ravel()]
        assert not any(re.search(r"\binf\b", c) for c in cells), styler.caption
    position = report.position_table(run, "Position bias").data.set_index("comparison")
    n = int(run.consistency.iloc[0]["n"])  # the overall consistency's games judged in both orders
    expected = estimate_cell(1.0, *wilson(n, n), digits=2)
    assert position.loc["all comparisons", "position consistency [95 % CI]"] == expected


def test_paper_rows_sit_beside_ours_and_q_figure_draws_them(scripted_judge):
    run = _run(scripted_judge, first_list_judge, recommenders=("fm", "deepfm", "lightgcn"))
    beside = report.table2_beside_paper(run, "Table 2 beside the paper").data
    deepfm = beside[beside["recommender"] == "deepfm"]
    assert deepfm["setting"].tolist() == [
        "this run, paper's order",
        "this run, adjudicated",
        "paper, GPT-4o",
        "paper, DeepSeek-V2.5",
        "paper, Llama3.1-8B",
    ]
    gpt = deepfm[deepfm["setting"] == "paper, GPT-4o"].iloc[0]
    assert (gpt["Win %"], gpt["Q [95 % CI]"], gpt["rank"]) == ("59.1", "1.72", "4")
    # the first-list judge: every tested model only wins in the paper's order (Q = ∞) and only loses swapped (Q = 0)
    assert deepfm.iloc[0]["Q [95 % CI]"] == "∞ [∞, ∞]"
    assert "∞: only wins (no loss, no tie)" in report.table2(run, "Table 2").caption
    ax = report.q_figure(run).axes[0]
    assert ax.get_xscale() == "log"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "paper, GPT-4o" in legend and "this run, paper's order" in legend
    assert {t.get_text() for t in ax.get_yticklabels()} == {"deepfm", "lightgcn"}


def test_figures_read_in_grey_scale(scripted_judge):
    run = _run(scripted_judge, taste_judge)
    for fig in (report.table2_figure(run), report.close_pairs_figure(run)):
        ax = fig.axes[0]
        hatches = {p.get_hatch() for p in ax.patches}
        assert len(hatches - {None}) == 3  # win, tie and lose differ by hatch, not colour alone
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["Win", "Tie", "Lose"]
    ax = report.table2_figure(run).axes[0]
    assert len(ax.get_yticklabels()) == 3 * 3  # three recommenders, three orders
    position = report.position_figure(run).axes[0]
    assert len({line.get_marker() for line in position.get_lines()} - {"None", "|", None, ""}) == 2
    bars = report.figure6(run).axes[0]
    assert len({p.get_hatch() for p in bars.patches} - {None}) == 3


def test_single_order_run_says_position_bias_cannot_be_measured(scripted_judge):
    config = arena.ArenaConfig(
        recommenders=("fm", "pop", "random"), baseline="fm", n_users=6, both_orders=False, absolute=False, n_boot=100
    )
    run = arena.run(scripted_judge(taste_judge), toy_dataset(), config)
    items = report.takeaways_items(run)
    assert any(t.startswith("Only the paper's order was judged") for t in items)
    assert report.table2(run, "Table 2").data["order"].unique().tolist() == ["paper's order"]
    assert report.headline_cells(run)["consistency"] == "n/a"


@pytest.mark.parametrize("dataset, expected", [("ml-100k", "MovieLens"), ("mind-small", "MIND")])
def test_paper_dataset(dataset: str, expected: str) -> None:
    class _Run:
        dataset_name = dataset

    assert report.paper_dataset(_Run()) == expected  # type: ignore[arg-type]


def test_paper_r_rounding_lays_out_the_runs_numbers_per_judge_and_dataset(scripted_judge) -> None:
    run = _run(scripted_judge, first_list_judge, recommenders=("fm", "deepfm", "lightgcn"))
    table = run.paper_correlation
    lines = report.paper_r_rounding(run).splitlines()
    assert len(lines) == len(table) == 6
    for line, r in zip(lines, table.to_dict("records"), strict=True):
        assert line.startswith(f"- {r['llm']}, {r['dataset']}: ")
        numbers = [float(v) for v in re.findall(r"-?\d+\.\d{4}", line)]
        assert numbers == pytest.approx([r["r"], r["r_low"], r["r_high"]], abs=5e-5)
        assert ("**inside**" in line) == (r["r_low"] <= r["r"] <= r["r_high"])
    beside = report.paper_table3(run, "Table 3 (paper)").data
    assert list(beside.columns) == ["judge", "dataset", "r (printed)", "p (printed)", "r from Tables 1-2",
                                    "p from Tables 1-2"]  # fmt: skip
    assert beside["r from Tables 1-2"].tolist() == table["r_recomputed"].tolist()


def test_one_recommender_besides_the_baseline_has_no_pair_to_separate(scripted_judge):
    # a folder dataset may leave all but one model out: the separation table says so instead of failing
    run = _run(scripted_judge, taste_judge, recommenders=("fm", "pop"))
    assert run.closest_pair is None
    styler = report.separation_table(run)
    assert styler.data.empty and "No pair to separate" in styler.caption and "fm" in styler.caption
