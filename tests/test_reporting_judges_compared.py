"""The "Judges compared" chapter's tables: runs found (the running one included), names, usage, agreement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recjudge_utils.judge.types import JudgeRequest
from recjudge_utils.reporting import judges_compared as compare
from recjudge_utils.reporting.results import USAGE_FILE, result, write_results

NOTEBOOK = "01_serendipity_prompt_selection"


def judged_run(scripted_judge, runs: Path, name: str, model: str, scores: list[int], finished: bool) -> None:
    """A run folder with one notebook's results.json and usage.json, and (``finished``) a manifest."""
    judge = scripted_judge(lambda request: json.dumps({"score": scores[int(request.metadata["item"])]}), model=model)
    requests = [
        JudgeRequest(({"role": "user", "content": f"item {i}"},), "serendipity/cot", "1", metadata={"item": i})
        for i in range(len(scores))
    ]
    judged = judge.judge_many(requests, lambda text: json.loads(text)["score"])
    items = [{"template": "cot", "item": i, "label": r.value} for i, r in enumerate(judged)]
    results = [result("mae", 1.0, 0.5, 1.5, len(scores), "95% percentile bootstrap", template="cot")]
    write_results(NOTEBOOK, "prompt_selection", judge, "toy data", results, {"scores": items}, runs / name / NOTEBOOK)
    if finished:
        (runs / name / "manifest.json").write_text(json.dumps({"run": name, "judge": {"name": model}, "seconds": 90}))


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
