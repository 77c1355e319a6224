"""The whole book at demo scale against the fake OpenAI server, as a user reruns it with new judges.

One module-scoped world runs, in order: a plan (calls nothing), run ``first`` with profile ``fake-a`` (429s and
500s injected), run ``again`` with the same profile (every answer reused), run ``other`` with profile ``fake-b``
(trains nothing) and exports ``other``. The tests then assert on what those runs left behind, replay the
archive into an empty cache with every server stopped, and check that damaged archives import nothing.

The fake server answers every prompt in the format it asks for (the simulated judge's renderers, driven by the
request body alone), so the real parsers run on every answer.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fake_openai_server import FakeOpenAIServer
from format_aware_script import FormatAwareScript

from recjudge_utils import book
from recjudge_utils.book import cli
from recjudge_utils.book.archive import export_run
from recjudge_utils.book.runner import select_notebooks
from recjudge_utils.book.usage import read_jsonl
from recjudge_utils.judge.backends.sim import UNPARSEABLE_ANSWER
from recjudge_utils.judge.profiles import JudgeProfile, load_profile
from recjudge_utils.paths import project_root

ROOT = project_root()
#: in the runner's order: the chapter reading every other chapter's results last
NOTEBOOKS = [p.stem for p in select_notebooks(ROOT / "notebooks", None) if p.stem[:2].isdigit()] if ROOT else []
pytestmark = [pytest.mark.slow, pytest.mark.skipif(ROOT is None, reason="needs a checkout with notebooks/")]


def profile_for(server: FakeOpenAIServer, name: str) -> JudgeProfile:
    return load_profile(
        {"name": name, "model": server.model, "base_url": server.base_url, "max_concurrency": 4, "retries": 6}
    )


def artifact_state(runs: Path) -> dict[str, tuple[int, int]]:
    """Every stored artifact file with its size and modification time: training anything changes it."""
    root = runs / "artifacts"
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


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


@dataclass
class World:
    runs: Path
    plan: dict[str, Any]
    script_a: FormatAwareScript
    requests_a: int = 0
    requests_a_after_again: int = 0
    requests_b: int = 0
    artifacts: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)
    archive: Path | None = None


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    runs = tmp_path_factory.mktemp("book-runs")
    saved = os.environ.get("RECJUDGE_RUNS_DIR")
    os.environ["RECJUDGE_RUNS_DIR"] = str(runs)
    try:
        script_a = FormatAwareScript(every_429=9, every_500=13)
        with FakeOpenAIServer(script=script_a, model="fake-model-a") as server_a:
            profile_a = profile_for(server_a, "fake-a")
            profile_a.check(preflight=True)
            plan = book.plan(profile_a, "first", root=ROOT)
            assert not server_a.requests, "the plan called the model"
            book.run(profile_a, "first", build=False, root=ROOT)
            w = World(runs, plan, script_a, requests_a=len(server_a.requests))
            w.artifacts["first"] = artifact_state(runs)
            book.run(profile_a, "again", build=False, root=ROOT)
            w.requests_a_after_again = len(server_a.requests)
            w.artifacts["again"] = artifact_state(runs)
        with FakeOpenAIServer(script=FormatAwareScript(), model="fake-model-b") as server_b:
            book.run(profile_for(server_b, "fake-b"), "other", build=False, root=ROOT)
            w.requests_b = len(server_b.requests)
            w.artifacts["other"] = artifact_state(runs)
        w.archive = export_run(runs / "other")
        yield w
    finally:
        if saved is None:
            os.environ.pop("RECJUDGE_RUNS_DIR", None)
        else:
            os.environ["RECJUDGE_RUNS_DIR"] = saved


def test_whole_book_survives_injected_429_and_500(world: World) -> None:
    assert world.script_a.injected[429] >= 5 and world.script_a.injected[500] >= 5
    manifest = json.loads((world.runs / "first" / "manifest.json").read_text())
    assert [Path(n["notebook"]).stem for n in manifest["notebooks"]] == NOTEBOOKS
    assert all(n["status"] == "ok" for n in manifest["notebooks"])
    for log in (world.runs / "first").glob("*/judgments.jsonl"):
        records = read_jsonl(log)
        assert records and not [r for r in records if r.get("status") == "error"], log.parent.name
        # chapter 5's panel study gives its simulated judges a share of deliberately unparseable answers
        failed = [r for r in records if r.get("status") == "unparsed" and UNPARSEABLE_ANSWER not in json.dumps(r)]
        assert not failed, f"{log.parent.name}: a sim answer failed"
    # every notebook that judges with the profile wrote its headline numbers
    assert {
        "01_serendipity_prompt_selection",
        "02_rs_reevaluation",
        "03_recsys_arena",
        "04_saer",
        "07_your_recommenders",
    } <= set(results_of(world.runs / "first"))


def test_second_run_reuses_every_answer_and_trains_nothing(world: World) -> None:
    assert world.requests_a > 0
    assert world.requests_a_after_again == world.requests_a  # not one HTTP request more
    manifest = json.loads((world.runs / "again" / "manifest.json").read_text())
    total = next(r for r in manifest["actual"]["notebooks"] if r["notebook"] == "TOTAL")
    assert total["calls"] == 0 and total["cache_hits"] > 0
    assert world.artifacts["again"] == world.artifacts["first"]
    assert results_of(world.runs / "again") == results_of(world.runs / "first")


def test_another_judge_profile_trains_nothing(world: World) -> None:
    assert world.requests_b > 0  # the new judge was asked ...
    assert world.artifacts["first"]  # ... the first run stored trained models (the plan stores nothing) ...
    assert world.artifacts["other"] == world.artifacts["first"]  # ... and no later run trained any
    for name in ("again", "other"):
        assert json.loads((world.runs / name / "manifest.json").read_text())["training_seconds"] == 0.0, name


def test_runs_coexist_and_the_judges_chapter_shows_both(world: World) -> None:
    for name, judge in (("first", "fake-a"), ("other", "fake-b")):
        assert json.loads((world.runs / name / "manifest.json").read_text())["judge"]["name"] == judge
        assert (world.runs / name / "executed" / "06_judges_compared.ipynb").exists()
    shown = executed_text(world.runs / "other", "06_judges_compared")
    assert "3 runs: again: fake-model-a" in shown  # the running run included, with no manifest yet
    assert "fake-model-a" in shown and "fake-model-b" in shown


def test_plan_matches_actual_calls_of_unchained_notebooks(world: World) -> None:
    planned = {r["notebook"]: r for r in world.plan["notebooks"]}
    manifest = json.loads((world.runs / "first" / "manifest.json").read_text())
    actual = {r["notebook"]: r for r in manifest["actual"]["notebooks"]}
    # the manifest shows the plan beside the actual usage
    pd.testing.assert_frame_equal(pd.DataFrame(manifest["plan"]["notebooks"]), pd.DataFrame(world.plan["notebooks"]))
    for nb in ("03_recsys_arena", "04_saer"):
        assert planned[nb]["estimated_calls"] == 0
        assert planned[nb]["calls"] == actual[nb]["calls"] > 0, nb
    # the plan came before any recommender was stored: notebook 02 judges each distinct (user, item) pair once, so its
    # count depends on how much trained lists overlap, and stand-in lists (which never overlap) give about the most
    reeval = "02_rs_reevaluation"
    assert planned[reeval]["requests"].startswith("stand-in lists for:")
    assert planned[reeval]["calls"] >= actual[reeval]["calls"] > 0
    # LtM chains prompts: its later stages are estimates, but every call is counted
    assert planned["01_serendipity_prompt_selection"]["estimated_calls"] > 0
    assert planned["01_serendipity_prompt_selection"]["calls"] == actual["01_serendipity_prompt_selection"]["calls"]


def test_replay_rebuilds_the_run_with_no_cache_and_no_server(
    world: World, isolated_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a reader's machine: an empty judge cache, no server, no key; trained models copied to save test time
    shutil.copytree(world.runs / "artifacts", isolated_runs / "artifacts")
    assert world.archive is not None
    archived = [json.loads(line) for line in gzip.decompress(world.archive.read_bytes()).splitlines()]
    notebooks = {a["notebook"] for a in archived if a["type"] == "answer"}
    # the run's judge's answers only: chapter 5's simulated judge recomputes its own offline
    assert notebooks == {nb for nb in NOTEBOOKS if nb[:2] in {"00", "01", "02", "03", "04", "07"}}
    assert cli.main(["replay", str(world.archive), "--no-build"]) == 0
    assert "every results.json equals the archived one" in capsys.readouterr().out
    assert results_of(isolated_runs / "other") == results_of(world.runs / "other")
    manifest = json.loads((isolated_runs / "other" / "manifest.json").read_text())
    total = next(r for r in manifest["actual"]["notebooks"] if r["notebook"] == "TOTAL")
    assert total["calls"] == 0 and total["errors"] == 0


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
    manifest = json.loads((isolated_runs / "batch" / "manifest.json").read_text())
    total = next(r for r in manifest["actual"]["notebooks"] if r["notebook"] == "TOTAL")
    assert total["calls"] == submitted and total["errors"] == 0
