"""The "Judges compared" chapter's tables: runs found (the running one included and described in words), judges
named from manifests, usage, agreement, and takeaways that claim only what the intervals allow."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import pytest

from recjudge_utils.judge.types import JudgeRequest
from recjudge_utils.metrics.agreement import agreement
from recjudge_utils.reporting import judges_compared as compare
from recjudge_utils.reporting.results import USAGE_FILE, result, write_results

NOTEBOOK = "01_serendipity_prompt_selection"


def judged_run(
    scripted_judge,
    runs: Path,
    name: str,
    model: str,
    scores: list[int],
    finished: bool | None,
    manifest_judge: str | None = None,
) -> None:
    """A run folder with one notebook's results.json and usage.json, and the runner's manifest: the final one
    (``finished``), the one it writes before the first notebook (False), or none (None)."""
    judge = scripted_judge(lambda request: json.dumps({"score": scores[int(request.metadata["item"])]}), model=model)
    requests = [
        JudgeRequest(({"role": "user", "content": f"item {i}"},), "serendipity/cot", "1", metadata={"item": i})
        for i in range(len(scores))
    ]
    judged = judge.judge_many(requests, lambda text: json.loads(text)["score"])
    items = [{"template": "cot", "item": i, "label": r.value} for i, r in enumerate(judged)]
    results = [result("mae", 1.0, 0.5, 1.5, len(scores), "95% percentile bootstrap", template="cot")]
    write_results(NOTEBOOK, "prompt_selection", judge, "toy data", results, {"scores": items}, runs / name / NOTEBOOK)
    judge_dict = {"name": manifest_judge or model, "backend": "openai", "model": manifest_judge or model}
    if finished:
        final = {"run": name, "judge": judge_dict, "scale": "paper", "parameters": {}, "status": "ok", "seconds": 90}
        (runs / name / "manifest.json").write_text(json.dumps(final))
    elif finished is False:  # the runner's manifest before its first notebook: judge, scale, -p parameters
        started = {"run": name, "judge": judge_dict, "scale": "demo", "parameters": {"top_k": 10}, "status": "running"}
        (runs / name / "manifest.json").write_text(json.dumps(started | {"seconds": 0.0}))


def test_the_running_run_is_shown_beside_finished_ones(scripted_judge, isolated_runs: Path) -> None:
    judged_run(scripted_judge, isolated_runs, "finished", "judge-a", [1, 2, 3, 4, 5, 5], finished=True)
    judged_run(scripted_judge, isolated_runs, "running", "judge-b", [1, 2, 3, 4, 4, 5], finished=False)
    runs = compare.load_runs()
    assert [r.name for r in runs] == ["finished", "running"]
    assert str(compare.runs_sentence(runs)) == "2 runs: finished: scripted judge, running: scripted judge"
    usage = compare.usage_table(runs).set_index("run")
    assert usage.loc["finished", "judgments"] == "6" and usage.loc["finished", "paid calls"] == "6"
    assert usage.loc["finished", "wall time (minutes)"] == "1.5"
    assert usage.loc["running", "wall time (minutes)"] == compare.OTHER_RUN_EXECUTING
    assert json.loads((isolated_runs / "running" / NOTEBOOK / USAGE_FILE).read_text())["api_calls"] == 6
    judges = compare.judges_table(runs).set_index("run")
    assert judges.loc["running", "judge profile"] == "judge-b"
    assert judges.loc["running", "state"] == "still executing when this page was made"
    # scale and parameters come from the manifest the runner writes before the first notebook, not from its end
    assert judges.loc["running", "scale and parameters"] == "demo (each notebook's defaults); top_k = 10"
    assert judges.loc["finished", "scale and parameters"] == "paper (the papers' sizes); no other parameter set"
    assert judges.loc["finished", "state"] == "finished"
    assert "running" not in " ".join(judges["state"])  # never the manifest's status code


def test_the_run_executing_this_chapter_is_called_this_run(
    scripted_judge, isolated_runs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    judged_run(scripted_judge, isolated_runs, "finished", "judge-a", [1, 2, 3], finished=True)
    judged_run(scripted_judge, isolated_runs, "running", "judge-b", [1, 2, 3], finished=False)
    assert compare.this_run_folder() is None
    monkeypatch.setenv("RECJUDGE_RUN_DIR", str(isolated_runs / "running"))  # what the runner sets for its notebooks
    runs = compare.load_runs()
    here = compare.this_run_folder()
    judges = compare.judges_table(runs, here).set_index("run")
    assert judges.loc["running", "state"] == "this run, still executing when this page was made"
    assert judges.loc["finished", "state"] == "finished"
    usage = compare.usage_table(runs, here).set_index("run")
    assert usage.loc["running", "wall time (minutes)"] == compare.THIS_RUN_EXECUTING
    notebooks = [{"notebook": "03_recsys_arena.ipynb", "status": "failed"}, {"notebook": "01_x.ipynb", "status": "ok"}]
    failed = compare.Run("broken", {"judge": {"name": "x"}, "status": "failed", "notebooks": notebooks})
    assert compare.state_in_words(failed) == "finished; chapter 3 failed"


def test_every_judge_is_named_from_its_manifest(scripted_judge, isolated_runs: Path) -> None:
    judged_run(scripted_judge, isolated_runs, "no-manifest", "judge-a", [1, 2, 3], finished=None)
    judged_run(scripted_judge, isolated_runs, "adhoc-gpt", "judge-b", [1, 2, 3], finished=None)
    adhoc = {"run": "adhoc-gpt", "adhoc": True, "judge": {"name": "judge-b", "model": "judge-b"}, "notebooks": []}
    (isolated_runs / "adhoc-gpt" / "manifest.json").write_text(json.dumps(adhoc))
    runs = {r.name: r for r in compare.load_runs()}
    assert runs["no-manifest"].judge == compare.UNKNOWN_JUDGE  # not guessed from whichever results.json comes first
    table = compare.judges_table(list(runs.values())).set_index("run")
    assert table.loc["no-manifest", "judge profile"] == "unknown (no manifest)"
    assert table.loc["no-manifest", "scale and parameters"] == "unknown (no manifest)"
    assert table.loc["no-manifest", "state"] == "unknown (no manifest)"
    assert table.loc["adhoc-gpt", "judge profile"] == "judge-b" and table.loc["adhoc-gpt", "state"].startswith("ad hoc")
    usage = compare.usage_table(list(runs.values())).set_index("run")
    assert usage.loc["adhoc-gpt", "wall time (minutes)"] == "not recorded (ad hoc)"


def test_results_of_another_judge_are_left_out_and_said_so(scripted_judge, isolated_runs: Path) -> None:
    # the runner's manifest says gpt; the one results.json present was written by judge-a (an older run's)
    judged_run(scripted_judge, isolated_runs, "mixed", "judge-a", [1, 2, 3], finished=True, manifest_judge="gpt")
    judged_run(scripted_judge, isolated_runs, "clean", "judge-b", [1, 2, 3], finished=True)
    runs = compare.load_runs()
    assert [r.name for r in runs] == ["clean"]  # nothing of "mixed" is its judge's
    (isolated_runs / "mixed" / "other").mkdir()
    results = json.loads((isolated_runs / "clean" / NOTEBOOK / "results.json").read_text())
    results["judge"] = {"name": "gpt", "model_name": "gpt (remote)", "kind": "llm"}
    (isolated_runs / "mixed" / "other" / "results.json").write_text(json.dumps(results))
    mixed = next(r for r in compare.load_runs() if r.name == "mixed")
    assert list(mixed.results) == ["other"] and mixed.foreign == {NOTEBOOK: "judge-a"}
    assert mixed.judge == "gpt (remote)"
    row = compare.judges_table([mixed]).iloc[0]
    assert row["left out (made by another judge)"] == f"{NOTEBOOK} (judge-a)"


def test_judge_names_are_short_and_unique(scripted_judge, isolated_runs: Path) -> None:
    assert compare.short_judge_name("SmolLM2-135M-Instruct (Q4_1 GGUF, embedded llama.cpp)") == "SmolLM2-135M-Instruct"
    judged_run(scripted_judge, isolated_runs, "one", "same", [1, 2, 3], finished=True)
    judged_run(scripted_judge, isolated_runs, "two", "same", [1, 2, 3], finished=True)
    shown = [r.shown_as for r in compare.load_runs()]
    assert shown == ["scripted judge [run one]", "scripted judge [run two]"]  # two runs of one judge stay apart
    table = compare.serendipity_table(compare.load_runs())
    assert {"scripted judge [run one]", "scripted judge [run two]"} <= set(table["judge"])


def test_agreement_on_the_items_both_judged(scripted_judge, isolated_runs: Path) -> None:
    judged_run(scripted_judge, isolated_runs, "a", "judge-a", [1, 2, 3, 4, 5, 5, 1, 2], finished=True)
    judged_run(scripted_judge, isolated_runs, "b", "judge-b", [1, 2, 3, 4, 4, 5, 2, 2], finished=True)
    row = compare.agreement_table(compare.load_runs()).iloc[0]
    assert row["n both labelled"] == 8
    assert row["raw_agreement"] == pytest.approx(6 / 8)
    assert 0.5 < row["kappa"] < 1 and row["low"] < row["kappa"] < row["high"]
    # chapter 4's agreement (metrics.agreement.agreement): kappa with its CI and SE, raw agreement with its CI
    ref = agreement([1, 2, 3, 4, 5, 5, 1, 2], [1, 2, 3, 4, 4, 5, 2, 2], [1, 2, 3, 4, 5], n_boot=2000, seed=0)
    assert (row["kappa"], row["low"], row["high"], row["se"]) == (ref.kappa, *ref.kappa_ci, ref.kappa_se)
    assert (row["raw_low"], row["raw_high"]) == ref.raw_ci and row["raw_low"] < 6 / 8 < row["raw_high"]
    cell = compare.agreement_display(compare.agreement_table(compare.load_runs()))["raw agreement, % [95 % CI]"]
    assert cell.tolist() == [f"75.0 [{100 * ref.raw_ci[0]:.1f}, {100 * ref.raw_ci[1]:.1f}]"]


def arena_run(name: str, data: str) -> compare.Run:
    """A run whose only result is one arena comparison (NRMS vs FM), on ``data``."""
    group = {"x": "NRMS", "y": "FM", "source": "adjudicated"}
    results = [
        result("win_pct", 60.0, 50.0, 70.0, 100, "Wilson", **group),
        result("Q", 1.5, 1.2, 1.9, 100, "bootstrap", **group),
    ]
    res = {
        "data": data,
        "judge": {"kind": "llm", "model_name": f"model-{name}", "name": name},
        "results": [asdict(r) for r in results],
    }
    return compare.Run(name, {"judge": {"name": name, "model": f"model-{name}"}}, {"03_recsys_arena": res})


@pytest.mark.parametrize(
    ("data", "datasets"),
    [("MIND small (real, Microsoft News)", {"MIND"}), ("MovieLens-100K (real, GroupLens)", {"MovieLens"})],
)
def test_arena_paper_rows_follow_the_run_dataset(data: str, datasets: set[str]) -> None:
    table = compare.arena_table([arena_run("a", data)])
    paper = table[table["kind"] == "paper"]
    expected = compare.paper_table("arena_table2")
    expected = expected[expected["dataset"].isin(datasets)]
    assert len(paper) == len(expected) > 0
    assert set(paper["Win % [95 % CI]"]) == {f"{w:.1f}" for w in expected["win"]}


def serendipity_run(name: str, mae: tuple[float, float, float], kind: str = "llm") -> compare.Run:
    """A run whose only result is chapter 1's MAE on the CoT template, ``mae`` = (value, low, high)."""
    res = {
        "data": "toy data",
        "judge": {"kind": kind, "model_name": f"model-{name}", "name": name},
        "results": [asdict(result("mae", *mae, 10, "95% percentile bootstrap", template="cot"))],
    }
    return compare.Run(name, {"judge": {"name": name, "model": f"model-{name}"}}, {NOTEBOOK: res})


def test_a_takeaway_ranks_two_judges_only_where_their_intervals_separate() -> None:
    apart = [serendipity_run("a", (0.5, 0.3, 0.7)), serendipity_run("b", (1.5, 1.2, 1.8))]
    (mae,) = [t for t in compare.takeaways_items(apart) if t.startswith("Chapter 1")]
    assert "(CoT: model-a 0.500 [0.300, 0.700] vs model-b 1.500 [1.200, 1.800])" in mae
    assert "ranks that judge first" in mae and "cannot" not in mae

    overlapping = [serendipity_run("a", (0.9, 0.6, 1.2)), serendipity_run("b", (1.0, 0.8, 1.3))]
    (mae,) = [t for t in compare.takeaways_items(overlapping) if t.startswith("Chapter 1")]
    assert "on CoT the intervals overlap, so this run cannot rank the judges there" in mae
    assert "ranks that judge first" not in mae


def test_a_takeaway_tells_judges_apart_only_where_their_win_rates_separate() -> None:
    def arena(name: str, win: tuple[float, float, float]) -> compare.Run:
        run = arena_run(name, "MovieLens-100K (real, GroupLens)")
        row = run.results["03_recsys_arena"]["results"][0]
        row["value"], row["low"], row["high"] = win
        return run

    (wins,) = [
        t for t in compare.takeaways_items([arena("a", (20, 10, 30)), arena("b", (60, 50, 70))]) if "Chapter 3" in t
    ]
    assert "lie apart, so the judges disagree there" in wins
    (wins,) = [
        t for t in compare.takeaways_items([arena("a", (55, 45, 65)), arena("b", (60, 50, 70))]) if "Chapter 3" in t
    ]
    assert "cannot tell the judges apart" in wins


def test_the_agreement_takeaway_says_whether_kappa_is_above_chance() -> None:
    runs = [serendipity_run("a", (0.5, 0.3, 0.7)), serendipity_run("b", (1.5, 1.2, 1.8))]
    agreement = pd.DataFrame(
        [
            {"items": "03_recsys_arena/pairwise", "judge A": "a", "judge B": "b", "n both labelled": 50,
             "kappa": 0.4, "se": 0.1, "low": 0.2, "high": 0.6, "raw_agreement": 0.7, "raw_low": 0.6,
             "raw_high": 0.8},
            {"items": "04_saer/pointwise", "judge A": "a", "judge B": "b", "n both labelled": 8,
             "kappa": 0.1, "se": 0.2, "low": -0.3, "high": 0.5, "raw_agreement": 0.5, "raw_low": 0.25,
             "raw_high": 0.75},
        ]
    )  # fmt: skip
    (text,) = [t for t in compare.takeaways_items(runs, agreement) if t.startswith("Agreement")]
    assert "above chance on chapter 3: pairwise verdicts (0.400 [0.200, 0.600])" in text
    assert "not distinguishable from chance on chapter 4: list labels (0.100 [-0.300, 0.500])" in text
    shown = compare.agreement_display(agreement)
    assert list(shown.columns) == [
        "items", "judges", "items both labelled", "weighted kappa [95 % CI]", "SE", "raw agreement, % [95 % CI]"
    ]  # fmt: skip
    assert shown["raw agreement, % [95 % CI]"].tolist() == ["70.0 [60.0, 80.0]", "50.0 [25.0, 75.0]"]
    assert compare.agreement_display(agreement.drop(columns=["raw_low", "raw_high"]))[
        "raw agreement, % [95 % CI]"
    ].tolist() == ["70.0", "50.0"]  # a frame without the bounds shows the bare estimate


def test_the_headline_forest_plot_has_one_row_per_measure_and_judge() -> None:
    runs = [serendipity_run("a", (0.5, 0.3, 0.7)), arena_run("b", "MovieLens-100K (real, GroupLens)")]
    rows = compare.headline_rows(runs)
    assert rows[["measure", "judge"]].values.tolist() == [["ch. 3: Win %, NRMS vs FM", "model-b"]]
    assert rows[["value", "low", "high"]].values.tolist() == [[60.0, 50.0, 70.0]]
    fig = compare.headline_figure(runs)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["ch. 3: Win %, NRMS vs FM"]
    assert compare.headline_figure([]).axes[0].texts  # nothing to draw: a figure that says so, never None


def test_tables_for_people_put_ours_beside_the_papers() -> None:
    table = compare.serendipity_table([serendipity_run("a", (0.5, 0.3, 0.7))])
    cot = table[table["prompt template"] == "CoT"]
    assert cot["judge"].tolist()[0] == "model-a" and cot["kind"].tolist()[1:] == ["paper", "paper"]
    assert cot["MAE [95 % CI]"].tolist()[0] == "0.500 [0.300, 0.700]"
    assert not any("_" in column for column in table.columns)
    assert compare.saer_detection_table([]).empty
    assert str(compare.shown(compare.saer_detection_table([]), "SAER")).startswith("*SAER*: no run")


def test_health_table_flags_a_chapter_with_more_than_a_fifth_unusable() -> None:
    def run(name: str, counts: dict[str, tuple[int, int]]) -> compare.Run:
        results = {
            nb: {"judgments": {"n": n, "parsed": p, "unparsed": n - p, "error": 0}} for nb, (p, n) in counts.items()
        }
        return compare.Run(name, {"judge": {"name": name, "model": name}}, results, shown_as=name)

    runs = [run("good", {"01_x": (40, 40), "03_y": (32, 40)}), run("bad", {"01_x": (0, 40), "03_y": (31, 40)})]
    table = compare.health_table(runs).set_index("run")
    assert (
        table.loc["good", "01"] == "40 of 40" and table.loc["good", "03"] == "32 of 40"
    )  # exactly a fifth: not flagged
    assert table.loc["bad", "01"] == "0 of 40 ⚠" and table.loc["bad", "03"] == "31 of 40 ⚠"
    sentence = compare._health_takeaway(runs)
    assert sentence is not None and sentence.startswith(
        "More than a fifth of the answers could not be read in bad (chapter 1: 0 of 40; chapter 3: 31 of 40 readable)"
    )
    assert compare._health_takeaway(runs[:1]) is None
