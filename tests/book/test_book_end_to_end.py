"""The whole book as ``make book`` left it: the lane ``make test-book`` runs after ``make book`` (CI does).

``make book`` executes a run with the simulated judge (``runs/sim``, which trains every recommender), a plan of
the default run, then the default run with the embedded judge (``runs/default``, every chapter, the judges chapter
reading all runs). These tests read what those runs left behind instead of training and executing again; the one
that executes is the replay, which rebuilds the default run from its archive with an empty cache and no server.
A batch-API judge killed mid-way is the other whole-notebook world here (chapter 0 against the fake server).

Every test fails, naming ``make book``, when the runs are not there: a lane that skipped would pass for nothing.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fake_openai_server import FakeOpenAIServer
from format_aware_script import FormatAwareScript

from recjudge_utils import book
from recjudge_utils.book import cli
from recjudge_utils.book.archive import export_run
from recjudge_utils.book.notebooks import select_notebooks
from recjudge_utils.judge.loading import load_profile
from recjudge_utils.paths import project_root
from recjudge_utils.recommenders.artifacts import compute_log

ROOT = project_root()
#: the runs ``make book`` wrote (read before conftest points every test at a folder of its own)
BOOK_RUNS = Path(os.environ.get("RECJUDGE_RUNS_DIR") or (ROOT / "runs" if ROOT else "runs"))
#: in the runner's order: the chapter reading every other chapter's results last
NOTEBOOKS = [p.stem for p in select_notebooks(ROOT / "notebooks", None) if p.stem[:2].isdigit()] if ROOT else []
#: the chapters that judge with the run's profile and write their headline numbers
JUDGING = ["00_introduction", "01_serendipity_prompt_selection", "02_rs_reevaluation", "03_recsys_arena", "04_saer",
           "07_your_recommenders"]  # fmt: skip
pytestmark = [pytest.mark.book, pytest.mark.skipif(ROOT is None, reason="needs a checkout with notebooks/")]


def book_run(name: str) -> Path:
    folder = BOOK_RUNS / name
    if not (folder / "manifest.json").is_file():
        pytest.fail(f"{folder} has no manifest.json: run make book before make test-book")
    return folder


def manifest_of(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "manifest.json").read_text())


def results_of(run_folder: Path) -> dict[str, Any]:
    return {p.parent.name: json.loads(p.read_text()) for p in sorted(run_folder.glob("*/results.json"))}


def executed_text(run_folder: Path, notebook: str) -> str:
    nb = json.loads((run_folder / "executed" / f"{notebook}.ipynb").read_text())
    parts = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            parts.append("".join(out.get("text", "")))
            for value in (out.get("data") or {}).values():
                parts.append(value if isinstance(value, str) else "".join(value) if isinstance(value, list) else "")
    return "\n".join(parts)


def total(manifest: dict[str, Any]) -> dict[str, Any]:
    return next(r for r in manifest["actual"]["notebooks"] if r["notebook"] == "TOTAL")


def test_every_chapter_ran_and_every_judging_chapter_wrote_its_counts() -> None:
    folder = book_run("default")
    manifest = manifest_of(folder)
    assert manifest["status"] == "ok" and manifest["judge"]["name"] == "embedded"
    assert [Path(n["notebook"]).stem for n in manifest["notebooks"]] == NOTEBOOKS
    assert all(n["status"] == "ok" and n["cache_key"] for n in manifest["notebooks"])
    results = results_of(folder)
    for notebook in JUDGING:
        counts = results[notebook]["judgments"]
        assert counts["n"] == counts["parsed"] + counts["unparsed"] + counts["error"] > 0, notebook
        assert counts["error"] == 0, notebook  # the embedded server answered every call
    health = {row["notebook"]: row for row in manifest["judge_health"]}
    assert set(JUDGING) <= set(health)


def test_the_plan_made_before_the_run_matches_its_judgments() -> None:
    folder = book_run("default")
    manifest = manifest_of(folder)
    plan = json.loads((folder / "plan.json").read_text())
    # the manifest shows the plan beside the actual usage
    pd.testing.assert_frame_equal(pd.DataFrame(manifest["plan"]["notebooks"]), pd.DataFrame(plan["notebooks"]))
    planned = {r["notebook"]: r for r in plan["notebooks"]}
    actual = {r["notebook"]: r for r in manifest["actual"]["notebooks"]}
    for nb in ("03_recsys_arena", "04_saer"):  # no chained requests: the plan rendered exactly what was asked
        assert planned[nb]["estimated_calls"] == 0
        asked = planned[nb]["calls"] + planned[nb]["cached"]
        assert asked == actual[nb]["calls"] + actual[nb]["cache_hits"] > 0, nb
    # LtM chains prompts: its later stages are estimates, but every call is counted
    assert planned["01_serendipity_prompt_selection"]["estimated_calls"] > 0


def test_a_run_with_another_judge_trains_nothing_an_earlier_run_trained() -> None:
    sim, default = manifest_of(book_run("sim")), manifest_of(book_run("default"))
    assert sim["judge"]["name"] == "sim" and default["judge"]["name"] == "embedded"
    # every training or tuning is logged once with its run; the default run (made after the simulated one) may train
    # what only its own chapters use (chapter 5's models), never a model the simulated run stored
    computed = [e for e in compute_log(BOOK_RUNS / "artifacts") if not e["nested"]]
    keys = [(e["kind"], e["key"]) for e in computed]
    assert len(keys) == len(set(keys)), "an artifact was computed twice"
    by_run = {
        run: {(e["kind"], e["key"]) for e in computed if Path(e["run_dir"]).name == run} for run in ("sim", "default")
    }
    assert by_run["sim"] and not by_run["sim"] & by_run["default"]


def test_chapter_8_validated_both_runs_on_simulated_annotators_and_the_ratings() -> None:
    for run, notebook in (("sim", "07_your_recommenders"), ("default", "02_rs_reevaluation")):
        folder = book_run(run)
        shown = executed_text(folder, "08_validate_your_judge")
        files = folder / "08_validate_your_judge" / "annotation"
        # the simulated annotators went out as the two files a team hands in, and were read back from them
        assert (files / "SIMULATED-scores-label-studio-export.json").is_file(), run
        assert (files / "SIMULATED-scores-sheet.csv").is_file(), run
        assert (files / "scores-tasks.json").is_file() and (files / "scores-config.xml").is_file(), run
        assert (folder / notebook / "annotation" / "scores-sample.json").is_file(), run
        assert "SIMULATED annotators" in shown and "SIMULATED-annotator-1" in shown, run
        assert "held-out rating" in shown, run  # the users' own ratings were set against the judge
        assert "prediction-powered" in shown, run


def test_runs_coexist_and_the_judges_chapter_shows_each() -> None:
    folder = book_run("default")
    shown = executed_text(folder, "06_judges_compared")
    # every run under runs/ when the chapter executed, each named with its judge
    assert "default: SmolLM2-135M-Instruct" in shown and "sim: simulated judge" in shown


def test_replay_rebuilds_the_default_run_with_no_cache_and_no_server(
    isolated_runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = book_run("default")
    monkeypatch.setenv("RECJUDGE_RUNS_DIR", str(BOOK_RUNS))  # the book's cache holds the answers to export
    archive = export_run(source, tmp_path / "default.recjudge.jsonl.gz")
    monkeypatch.setenv("RECJUDGE_RUNS_DIR", str(isolated_runs))  # a reader's machine: an empty judge cache
    shutil.copytree(BOOK_RUNS / "artifacts", isolated_runs / "artifacts")  # trained models, to save the time
    assert cli.main(["replay", str(archive), "--no-build"]) == 0
    assert "every results.json equals the archived one" in capsys.readouterr().out
    assert results_of(isolated_runs / "default") == results_of(source)
    replayed = manifest_of(isolated_runs / "default")
    assert total(replayed)["calls"] == 0 and total(replayed)["errors"] == 0
    assert replayed["training_seconds"] == 0.0


def test_batch_profile_killed_mid_way_resumes_through_a_notebook_without_paying_twice(isolated_runs: Path) -> None:
    with FakeOpenAIServer(script=FormatAwareScript(), model="fake-batch-model", batch_polls=10**9) as server:
        profile = load_profile(
            {
                "name": "fake-batch",
                "model": server.model,
                "base_url": server.base_url,
                "batch": True,
                "options": {"poll_interval": 0.05, "batch_timeout": 1.0},
            }
        )
        # the batch never finishes in time: the notebook stops after submitting it, as a killed run would
        with pytest.raises(book.NotebookFailed, match="still 'in_progress'"):
            book.run(profile, "batch", only=["00"], build=False, root=ROOT)
        state = json.loads((isolated_runs / "batch" / "00_introduction" / "batches.json").read_text())
        assert len(state["batches"]) == 1 and not next(iter(state["batches"].values()))["folded"]
        submitted = len(next(iter(state["batches"].values()))["keys"])
        assert submitted > 0 and len(server.batches) == 1
        server.batch_polls = 1  # the provider finishes the batch while nobody is watching
        book.run(profile, "batch", only=["00"], build=False, root=ROOT)
    assert len(server.batches) == 1  # resumed the submitted batch, created no second one
    assert len(server.batch_lines) == submitted  # every submitted request answered (and paid) once
    assert not server.requests  # and none through the full-price chat route
    manifest = manifest_of(isolated_runs / "batch")
    assert total(manifest)["calls"] == submitted and total(manifest)["errors"] == 0
