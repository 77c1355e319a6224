"""The "Judges compared" chapter's layout: every run described in words (the running one included), tables that put
our judges beside the papers', and takeaways that claim only what the intervals allow."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from test_experiment_judges_compared import NOTEBOOK, judged_run, stored_run

from recjudge_utils.experiments.judges_compared import StoredRun, compare, load_runs
from recjudge_utils.experiments.run import result
from recjudge_utils.paper_tables import paper_table
from recjudge_utils.reporting import judges_compared as report


def test_every_run_is_described_in_words(scripted_judge, isolated_runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    judged_run(scripted_judge, isolated_runs, "finished", "judge-a", [1, 2, 3, 4, 5, 5], finished=True)
    judged_run(scripted_judge, isolated_runs, "running", "judge-b", [1, 2, 3], finished=False)
    judged_run(scripted_judge, isolated_runs, "other", "judge-c", [1, 2, 3], finished=False)
    judged_run(scripted_judge, isolated_runs, "no-manifest", "judge-d", [1, 2, 3], finished=None)
    judged_run(scripted_judge, isolated_runs, "adhoc-x", "judge-e", [1, 2, 3], finished=None)
    adhoc = {"run": "adhoc-x", "adhoc": True, "judge": {"name": "judge-e", "model": "judge-e"}, "notebooks": []}
    (isolated_runs / "adhoc-x" / "manifest.json").write_text(json.dumps(adhoc))
    monkeypatch.setenv("RECJUDGE_RUN_DIR", str(isolated_runs / "running"))  # the runner executes this chapter there
    runs = load_runs()
    runs.append(StoredRun("broken", {"judge": {"name": "x"}, "status": "failed",
                                     "notebooks": [{"notebook": "03_recsys_arena.ipynb", "status": "failed"}]},
                          runs[0].results))  # fmt: skip
    c = compare(runs, isolated_runs / "running")
    table = report.frame(c, "runs").set_index("run")
    assert table["state"].to_dict() == {
        "adhoc-x": "ad hoc: notebooks executed outside the book runner", "finished": "finished",
        "no-manifest": "unknown (no manifest)", "other": "still executing when this page was made",
        "running": "this run, still executing when this page was made", "broken": "finished; chapter 3 failed",
    }  # fmt: skip
    # scale and parameters come from the manifest the runner writes before the first notebook, not from its end
    assert table.loc["running", "scale and parameters"] == "demo (each notebook's defaults); top_k = 10"
    assert table.loc["finished", "scale and parameters"] == "paper (the papers' sizes); no other parameter set"
    assert table.loc["adhoc-x", "scale and parameters"] == "each notebook's own parameters cell (no runner)"
    assert table.loc["no-manifest", ["judge profile", "scale and parameters"]].tolist() == ["unknown (no manifest)"] * 2
    usage = report.frame(c, "usage").set_index("run")
    assert usage.loc["finished", ["judgments", "paid calls", "wall time (minutes)"]].tolist() == ["6", "6", "1.5"]
    assert usage.loc["running", "wall time (minutes)"] == "this run, still executing when this page was made"
    assert usage.loc["adhoc-x", "wall time (minutes)"] == "not recorded (ad hoc)"
    assert usage.loc["no-manifest", "wall time (minutes)"] == "not recorded"
    data = report.frame(c, "runs_data").set_index("run")
    assert data.loc["finished"].tolist() == ["scripted judge (judge-a)", "1", "toy data"]
    assert str(report.opening(c)[0]).startswith("6 runs: adhoc-x: scripted judge, finished: scripted judge")


def test_a_result_of_another_judge_is_named_in_the_runs_table() -> None:
    run = stored_run("mixed", {NOTEBOOK: []})
    run.foreign = {"04_saer": "judge-a"}
    (row,) = report.frame(compare([run]), "runs").to_dict("records")
    assert row["left out (made by another judge)"] == "04_saer (judge-a)" and row["judge"] == "model-mixed"


def test_the_opening_names_each_caveat_and_each_stand_in_once() -> None:
    runs = [stored_run(n, {NOTEBOOK: [], "04_saer": []}) for n in ("a", "b")]
    for run in runs:  # two runs of one small model on the same stand-in: one caveat, one note
        run.results[NOTEBOOK]["judge"]["model_name"] = "SmolLM2-135M-Instruct (Q4_1 GGUF)"
        run.results[NOTEBOOK]["data"] = "toy data [STAND-IN]"
    opening = [str(x) for x in report.opening(compare(runs))]
    assert len(opening) == 3 and opening[0].startswith("2 runs: a: SmolLM2-135M-Instruct")
    assert "135-million-parameter" in opening[1] and "**toy data [STAND-IN]**" in opening[2]
    assert "Chapter 1's rows below ran on it." in opening[2]
    assert str(report.opening(compare([]))[0]).startswith("No run under `runs/` has results yet")


def serendipity_run(name: str, mae: tuple[float, float, float], kind: str = "llm") -> StoredRun:
    """A run whose only result is chapter 1's MAE on the CoT template, ``mae`` = (value, low, high)."""
    return stored_run(name, {NOTEBOOK: [result("mae", *mae, 10, "95% percentile bootstrap", template="cot")]}, kind)


def arena_run(name: str, data: str, win: tuple[float, float, float] = (60.0, 50.0, 70.0)) -> StoredRun:
    """A run whose only result is one adjudicated arena comparison (MiniLM-content vs FM), on ``data``."""
    group = {"x": "minilm-content", "y": "fm", "source": "adjudicated"}
    rows = [result("win_pct", *win, 100, "Wilson", **group), result("Q", 1.5, 1.2, 1.9, 100, "bootstrap", **group)]
    run = stored_run(name, {"03_recsys_arena": rows})
    run.results["03_recsys_arena"]["data"] = data
    return run


def test_tables_put_ours_beside_the_papers() -> None:
    c = compare([serendipity_run("a", (0.5, 0.3, 0.7), kind="simulated"), arena_run("b", "MIND small (real)")])
    table = report.frame(c, "serendipity")
    cot = table[table["prompt template"] == "CoT"]
    assert cot["judge"].tolist() == ["model-a", "GPT-4o-mini (paper)", "Llama-3.1-70B-Instruct (4-bit) (paper)"]
    assert cot["kind"].tolist() == ["simulated judge", "paper", "paper"]  # never shown as an LLM
    assert cot["MAE [95 % CI]"].tolist() == ["0.500 [0.300, 0.700]", "0.847", "1.117"]
    assert cot["weighted kappa [95 % CI]"].tolist() == ["n/a", "not reported", "not reported"]
    assert cot["judged pairs"].tolist() == ["10", "2,150", "2,150"]
    assert table["prompt template"].tolist() == ["Base"] * 2 + ["LS"] * 2 + ["CoT"] * 3 + ["LtM"] * 2
    arena = report.frame(c, "arena")
    nrms = arena[arena["recommender"].str.contains("NRMS")]
    assert nrms["recommender"].iloc[0] == "MiniLM-content (for NRMS)" and nrms["kind"].iloc[0] == "LLM"
    assert nrms[["Win % [95 % CI]", "Q [95 % CI]", "judged comparisons"]].iloc[0].tolist() == [
        "60.0 [50.0, 70.0]", "1.500 [1.200, 1.900]", "100"]  # fmt: skip
    expected = paper_table("arena_table2").query("dataset == 'MIND' and rs == 'NRMS'")
    assert nrms["judge"].tolist()[1:] == [f"{llm} (paper, MIND)" for llm in expected["llm"]]
    assert nrms["Q [95 % CI]"].tolist()[1:] == [f"{q:.4f}" for q in expected["q"]]
    assert not any("_" in column for name in ("serendipity", "arena") for column in report.frame(c, name))
    empty = report.table(compare([]), "saer_detection", "Table 6.9: position consistency and adversarial detection")
    assert str(empty) == "*Table 6.9: position consistency and adversarial detection*: no run has results for this " \
        "table yet."  # fmt: skip


def test_health_table_flags_a_chapter_with_more_than_a_fifth_unusable() -> None:
    runs = [stored_run("good", {"01_x": [], "03_y": []}), stored_run("bad", {"01_x": [], "03_y": []})]
    for run, counts in zip(runs, ({"01_x": 40, "03_y": 32}, {"01_x": 0, "03_y": 31}), strict=True):
        for nb, parsed in counts.items():
            run.results[nb]["judgments"] = {"n": 40, "parsed": parsed}
    c = compare(runs)
    table = report.frame(c, "health").set_index("run")
    assert table.loc["good"].tolist() == ["model-good", "40 of 40", "32 of 40"]  # exactly a fifth: not flagged
    assert table.loc["bad"].tolist() == ["model-bad", "0 of 40 ⚠", "31 of 40 ⚠"]
    (flagged,) = [t for t in report.takeaways_items(c) if t.startswith("More than a fifth")]
    assert "in bad (chapter 1: 0 of 40; chapter 3: 31 of 40 readable):" in flagged
    assert not [t for t in report.takeaways_items(compare(runs[:1])) if t.startswith("More than a fifth")]


def test_a_takeaway_ranks_two_judges_only_where_their_intervals_separate() -> None:
    def mae(*runs: StoredRun) -> str:
        (text,) = [t for t in report.takeaways_items(compare(list(runs))) if t.startswith("Chapter 1")]
        return text

    text = mae(serendipity_run("a", (1.5, 1.2, 1.8)), serendipity_run("b", (0.5, 0.3, 0.7)))
    assert "on CoT the lowest value's interval lies apart from every other judge's" in text  # lower MAE is better
    assert text.endswith("(CoT: model-b 0.500 [0.300, 0.700] vs model-a 1.500 [1.200, 1.800]).")
    text = mae(serendipity_run("a", (0.9, 0.6, 1.2)), serendipity_run("b", (1.0, 0.8, 1.3)))
    assert "on CoT the intervals overlap, so this run cannot rank the judges there" in text and "first" not in text
    no_ci = [serendipity_run("a", (0.5, 0.3, 0.7)), stored_run("b", {NOTEBOOK: [result("mae", 1.5, template="cot")]})]
    assert not [t for t in report.takeaways_items(compare(no_ci)) if t.startswith("Chapter 1")]  # nothing to rank


def test_a_takeaway_tells_judges_apart_only_where_their_win_rates_separate() -> None:
    data = "MovieLens-100K (real, GroupLens)"

    def wins(a: tuple[float, float, float], b: tuple[float, float, float]) -> str:
        runs = [arena_run("a", data, a), arena_run("b", data, b)]
        (text,) = [t for t in report.takeaways_items(compare(runs)) if t.startswith("Chapter 3")]
        return text

    assert "lie apart, so the judges disagree there" in wins((20, 10, 30), (60, 50, 70))
    assert "cannot tell the judges apart" in wins((55, 45, 65), (60, 50, 70))


def test_the_agreement_table_and_takeaway_say_where_alpha_is_above_chance() -> None:
    runs = [serendipity_run("a", (0.5, 0.3, 0.7)), serendipity_run("b", (1.5, 1.2, 1.8))]
    c = compare(runs)
    c.agreement = pd.DataFrame(
        [
            {"items": "03_recsys_arena/pairwise", "judge A": "a", "judge B": "b", "n both labelled": 50,
             "metric": "nominal", "alpha": 0.4, "se": 0.1, "low": 0.2, "high": 0.6, "dropped": 0, "n_boot": 2000,
             "raw_agreement": 0.7, "raw_low": 0.6, "raw_high": 0.8},
            {"items": "04_saer/pointwise", "judge A": "a", "judge B": "b", "n both labelled": 8, "metric": "ordinal",
             "alpha": 0.1, "se": 0.2, "low": -0.3, "high": 0.5, "dropped": 12, "n_boot": 2000, "raw_agreement": 0.5,
             "raw_low": 0.25, "raw_high": 0.75},
            {"items": "04_saer/adversarial", "judge A": "a", "judge B": "b", "n both labelled": 3,
             "metric": "nominal", "alpha": 0.2, "se": None, "low": None, "high": None, "raw_agreement": 0.5},
            {"items": "04_saer/adversarial", "judge A": "a", "judge B": "c", "n both labelled": 1, "metric": "nominal"},
        ]
    ).assign(kind="llm")  # fmt: skip
    (text,) = [t for t in report.takeaways_items(c) if t.startswith("Agreement")]
    assert text.startswith("Agreement of a with b (Krippendorff's alpha, 95 % CI): above chance on chapter 3: pairwise")
    assert "; not distinguishable from chance on chapter 4: list labels (0.100 [-0.300, 0.500])" in text
    assert text.endswith("; no interval on chapter 4: adversarial pairs (0.200), so no claim against chance there.")
    shown = report.frame(c, "agreement")
    assert list(shown.columns) == [
        "items", "judges", "items both labelled", "Krippendorff's alpha [95 % CI]", "metric", "SE",
        "raw agreement, % [95 % CI]"
    ]  # fmt: skip
    assert shown["Krippendorff's alpha [95 % CI]"].tolist() == [
        "0.400 [0.200, 0.600]", "0.100 [-0.300, 0.500] (12 of 2,000 resamples undefined, left out)", "0.200",
        "undefined"]  # fmt: skip
    assert shown["metric"].tolist() == ["nominal", "ordinal", "nominal", "nominal"]
    assert shown["raw agreement, % [95 % CI]"].tolist() == ["70.0 [60.0, 80.0]", "50.0 [25.0, 75.0]", "50.0", "n/a"]
    assert report.frame(c, "agreement_simulated").empty  # no simulated judge among them
    first = report.takeaways_items(compare([serendipity_run("a", (0.5, 0.3, 0.7), kind="simulated"), runs[1]]))[0]
    assert first == "2 runs compared (a: model-a, b: model-b); run a used the {term}`simulated judge`, whose numbers " \
        "show what the tables detect, not what an LLM thinks."  # fmt: skip


def scored_run(
    name: str, labels: list[int], kind: str, members: dict[str, list[int | None]] | None = None
) -> StoredRun:
    """A run whose chapter 1 scored items 0..n-1 with ``labels`` (g = 1, 2, 3, 4, 5, 1, ...), with a panel's
    ``members`` (member -> its labels; each answer 100 tokens) when given."""
    items = {"scores": [{"template": "base", "user": 1, "item": i, "label": v, "truth": i % 5 + 1}
                        for i, v in enumerate(labels)]}  # fmt: skip
    if members:
        items["member_scores"] = [{"template": "base", "user": 1, "item": i, "member": m, "label": v,
                                   "truth": i % 5 + 1, "tokens": 100} for m, vs in members.items()
                                  for i, v in enumerate(vs)]  # fmt: skip
    return stored_run(name, {NOTEBOOK: []}, kind, items=items)


def test_simulated_judges_are_compared_only_with_simulated_judges() -> None:
    g = [i % 5 + 1 for i in range(30)]
    noisy = [min(5, v + (i % 3 == 0)) for i, v in enumerate(g)]
    runs = [scored_run("llm-1", g, "llm"), scored_run("llm-2", noisy, "llm"), scored_run("sim-1", g, "simulated"),
            scored_run("sim-2", noisy, "simulated"), scored_run("sim-3", g[::-1], "simulated")]  # fmt: skip
    c = compare(runs)
    assert set(c.agreement["kind"]) == {"llm", "simulated"}
    pairs = {frozenset((r["judge A"].split(":")[0], r["judge B"].split(":")[0])) for _, r in c.agreement.iterrows()}
    assert pairs == {frozenset(p) for p in (("llm-1", "llm-2"), ("sim-1", "sim-2"), ("sim-1", "sim-3"),
                                            ("sim-2", "sim-3"))}  # fmt: skip
    llm, sim = (report.frame(c, n) for n in ("agreement", "agreement_simulated"))
    assert len(llm) == 1 and "sim" not in llm["judges"].iloc[0] and len(sim) == 3
    # alpha over every judge of a kind, three or more: only the simulated ones are three
    assert report.frame(c, "all_judges").empty and report.frame(c, "all_judges_simulated")["judges"].tolist() == [3]
    # the agreement figure draws the LLM judges' pair only
    assert [t.get_text() for t in report.figure(c, "agreement").axes[0].get_legend().get_texts()] == [
        "chance agreement", "llm-1 vs llm-2"]  # fmt: skip
    # and the takeaways never rank a simulated judge beside an LLM
    mixed = compare([serendipity_run("s", (0.2, 0.1, 0.3), kind="simulated"), serendipity_run("l", (1.5, 1.2, 1.8))])
    assert not [t for t in report.takeaways_items(mixed) if t.startswith("Chapter 1")]


def test_a_panel_is_shown_beside_its_members_in_its_kinds_table() -> None:
    g = [i % 5 + 1 for i in range(30)]
    members = {"m1": g, "m2": [None, *g[1:]], "m3": [min(5, v + 1) for v in g]}
    c = compare([scored_run("panel", g, "simulated", members), scored_run("llm", g, "llm")])
    table = report.frame(c, "panel_simulated")
    assert list(table["judge"]) == ["m1", "m2", "m3", "the panel's verdict"]
    assert table["scores given"].tolist() == ["30", "29", "30", "30"]
    assert table["weighted kappa with g [95 % CI]"].iloc[0] == "1.000 [1.000, 1.000]"
    assert table["tokens (× a member's)"].tolist() == ["3,000 (1.0 ×)", "3,000 (1.0 ×)", "3,000 (1.0 ×)",
                                                       "9,000 (3.0 ×)"]  # fmt: skip
    alpha = table["members' agreement: ordinal Krippendorff's alpha [95 % CI]"]
    assert alpha.iloc[:3].tolist() == ["-"] * 3 and alpha.iloc[3].endswith(" on 30 scores of 30 (user, item) pairs")
    assert report.frame(c, "panel").empty  # no panel of LLM judges: a sentence says so
    assert "no panel of LLM judges" in str(report.table(c, "panel", "Table 6.13: each panel of LLM judges"))


def test_the_headline_forest_plot_has_one_row_per_measure_and_judge() -> None:
    c = compare([serendipity_run("a", (0.5, 0.3, 0.7)), arena_run("b", "MovieLens-100K (real, GroupLens)")])
    fig = report.figure(c, "headlines")
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["ch. 3: Win %, MiniLM-content vs FM"]
    assert report.figure(compare([]), "headlines").axes[0].texts  # nothing to draw: a figure that says so, never None
    mae = report.figure(c, "mae").axes[0]
    assert [t.get_text() for t in mae.get_yticklabels()] == ["CoT"]
    assert [t.get_text() for t in mae.get_legend().get_texts()] == [
        "model-a", "GPT-4o-mini (paper)", "Llama-3.1-70B-Instruct (4-bit) (paper)"]  # fmt: skip


def test_stand_in_chapters_are_named_in_the_takeaways() -> None:
    runs = [stored_run("a", {NOTEBOOK: [], "04_saer": []})]
    for nb in runs[0].results:
        runs[0].results[nb]["data"] = "toy [STAND-IN]"
    items = report.takeaways_items(compare(runs))
    assert items[1].startswith("With one run there is nothing to compare")
    assert items[-1].startswith("Chapters 1 and 4 ran on {term}`stand-in data`")
    assert report.takeaways_items(compare([])) == [
        "No run has results yet: nothing to compare. Run a chapter with any judge profile and rebuild."]  # fmt: skip
