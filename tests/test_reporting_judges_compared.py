"""The "Judges compared" chapter's tables: runs found (the running one included), judges named from manifests,
usage, agreement."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from recjudge_utils.judge.types import JudgeRequest
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
        final = {"run": name, "judge": judge_dict, "scale": "paper", "status": "ok", "seconds": 90}
        (runs / name / "manifest.json").write_text(json.dumps(final))
    elif finished is False:
        started = {"run": name, "judge": judge_dict, "scale": "demo", "status": "running", "seconds": 0.0}
        (runs / name / "manifest.json").write_text(json.dumps(started))


def test_the_running_run_is_shown_beside_finished_ones(scripted_judge, isolated_runs: Path) -> None:
    judged_run(scripted_judge, isolated_runs, "finished", "judge-a", [1, 2, 3, 4, 5, 5], finished=True)
    judged_run(scripted_judge, isolated_runs, "running", "judge-b", [1, 2, 3, 4, 4, 5], finished=False)
    runs = compare.load_runs()
    assert [r.name for r in runs] == ["finished", "running"]
    usage = compare.usage_table(runs).set_index("run")
    assert usage.loc["finished", "judgments"] == 6 and usage.loc["finished", "paid"] == 6
    assert usage.loc["finished", "minutes"] == 1.5
    assert usage.loc["running", "minutes"] == "running"
    assert json.loads((isolated_runs / "running" / NOTEBOOK / USAGE_FILE).read_text())["api_calls"] == 6
    judges = compare.judges_table(runs).set_index("run")
    assert judges.loc["running", "profile"] == "judge-b" and judges.loc["running", "status"] == "running"
    assert judges.loc["running", "scale"] == "demo" and judges.loc["finished", "scale"] == "paper"
    assert judges.loc["finished", "status"] == "ok"


def test_every_judge_is_named_from_its_manifest(scripted_judge, isolated_runs: Path) -> None:
    judged_run(scripted_judge, isolated_runs, "no-manifest", "judge-a", [1, 2, 3], finished=None)
    judged_run(scripted_judge, isolated_runs, "adhoc-gpt", "judge-b", [1, 2, 3], finished=None)
    adhoc = {"run": "adhoc-gpt", "adhoc": True, "judge": {"name": "judge-b", "model": "judge-b"}, "notebooks": []}
    (isolated_runs / "adhoc-gpt" / "manifest.json").write_text(json.dumps(adhoc))
    runs = {r.name: r for r in compare.load_runs()}
    assert runs["no-manifest"].judge == compare.UNKNOWN_JUDGE  # not guessed from whichever results.json comes first
    table = compare.judges_table(list(runs.values())).set_index("run")
    assert table.loc["no-manifest", "profile"] == "unknown (no manifest)"
    assert table.loc["no-manifest", "scale"] == "unknown" and table.loc["no-manifest", "status"] == "no manifest"
    assert table.loc["adhoc-gpt", "profile"] == "judge-b" and table.loc["adhoc-gpt", "status"] == "adhoc"
    assert compare.usage_table(list(runs.values())).set_index("run").loc["adhoc-gpt", "minutes"] == "n/a (adhoc)"


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
    assert row["left out (another judge)"] == f"{NOTEBOOK} (judge-a)"


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
    assert set(paper["win % [95% CI]"]) == {f"{w:.1f}" for w in expected["win"]}
