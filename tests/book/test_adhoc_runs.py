"""Notebooks executed outside the book runner (papermill, JupyterLab, nbclient) write to runs of their own.

Never into the book's ``runs/default/``: a named run (``run_name``) or ``runs/adhoc-<judge>-<UTC time>/``, each with
a manifest naming its judge, so the "Judges compared" chapter names every run's judge from its manifest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from recjudge_utils import paths
from recjudge_utils.experiments.results import SCHEMA
from recjudge_utils.paths import RUN_DIR_ENV, current_run_dir, ensure_run_dir, project_root

SIM = {"name": "sim", "backend": "sim", "model": "sim"}
GPT = {"name": "gpt-4o-mini", "backend": "openai", "model": "gpt-4o-mini", "api_key_env": "OPENAI_API_KEY"}


@pytest.fixture(autouse=True)
def outside_the_runner(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No runner's RECJUDGE_RUN_DIR, and whatever ensure_run_dir sets is undone after the test."""
    monkeypatch.setenv(RUN_DIR_ENV, "set so that monkeypatch restores the variable's absence afterwards")
    monkeypatch.delenv(RUN_DIR_ENV)
    monkeypatch.setattr(paths, "_adhoc", {})
    yield


def manifest(folder: Path) -> dict[str, object]:
    return json.loads((folder / "manifest.json").read_text(encoding="utf-8"))


def test_an_adhoc_run_is_named_after_its_judge_and_remembered(
    isolated_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = ensure_run_dir(judge=GPT, notebook="03_recsys_arena")
    assert folder.parent == isolated_runs and folder.name.startswith("adhoc-gpt-4o-mini-")
    assert len(folder.name) == len("adhoc-gpt-4o-mini-YYYYmmdd-HHMMSS")
    said = capsys.readouterr().out
    assert "not run by the book runner" in said and folder.name in said  # and where it writes
    saved = manifest(folder)
    assert saved["adhoc"] is True and saved["run"] == folder.name and saved["judge"] == GPT
    assert saved["notebooks"] == ["03_recsys_arena"]
    assert {"package_version", "git_commit", "python", "started_utc"} <= set(saved)
    # the same kernel agrees everywhere afterwards, and another notebook of the run is added to its manifest
    assert current_run_dir() == folder
    assert ensure_run_dir(judge=GPT, notebook="04_saer") == folder
    assert manifest(folder)["notebooks"] == ["03_recsys_arena", "04_saer"]
    assert capsys.readouterr().out == ""  # said once, when the folder was chosen
    # another judge in the same kernel gets an ad-hoc run of its own
    other = ensure_run_dir(judge=SIM, notebook="01_x")
    assert other != folder and other.name.startswith("adhoc-sim-") and manifest(other)["judge"] == SIM


def test_without_the_runner_nothing_falls_back_to_runs_default(isolated_runs: Path) -> None:
    folder = current_run_dir()
    assert folder.name.startswith("adhoc-") and folder.name != "default"
    assert manifest(folder)["judge"] is None
    assert not (isolated_runs / "default").exists()


def test_a_named_run_and_what_is_refused(isolated_runs: Path) -> None:
    mine = ensure_run_dir(run="mine", judge=SIM, notebook="03_recsys_arena")
    assert mine == isolated_runs / "mine" and manifest(mine)["judge"] == SIM
    with pytest.raises(ValueError, match="one run, one judge"):
        ensure_run_dir(run="mine", judge=GPT)
    with pytest.raises(ValueError, match="the book's own run"):
        ensure_run_dir(run="default", judge=SIM)
    (isolated_runs / "gpt").mkdir()
    (isolated_runs / "gpt" / "manifest.json").write_text(json.dumps({"run": "gpt", "judge": GPT, "scale": "demo"}))
    with pytest.raises(ValueError, match="a run of the book runner"):
        ensure_run_dir(run="gpt", judge=GPT)
    with pytest.raises(ValueError, match="plain folder name"):
        ensure_run_dir(run="../elsewhere")


def test_the_runners_folder_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RUN_DIR_ENV, str(tmp_path / "runner-run"))
    assert ensure_run_dir(run="mine", judge=SIM, notebook="03") == tmp_path / "runner-run"
    assert not (tmp_path / "runner-run" / "manifest.json").exists()  # the runner writes its own manifest


def test_a_new_runs_root_gets_a_new_adhoc_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = ensure_run_dir(judge=SIM)
    monkeypatch.setenv("RECJUDGE_RUNS_DIR", str(tmp_path / "other-runs"))
    second = current_run_dir()
    assert second.parent == tmp_path / "other-runs" and first.parent != second.parent


# -- a notebook executed by papermill directly ----------------------------------------------------------------
TINY_BODY = """
import json
from recjudge_utils.judge.loading import open_judge
from recjudge_utils.answer_formats.truth import ScoreTruth
from recjudge_utils.judge.types import JudgeRequest
from recjudge_utils.experiments.results import write_results
from recjudge_utils.experiments.run import result

client = open_judge(judge, run=run_name, run_name="01_tiny", progress=False)
requests = [
    JudgeRequest(({"role": "user", "content": f"item {i}"},), "tiny", "1", answer_format="json_levels",
                 truth=ScoreTruth((("score", 1 + i),)), metadata={"item": i})
    for i in range(4)
]
judged = client.judge_many(requests, lambda text: json.loads(text)["score"])
items = [{"item": i, "label": r.value} for i, r in enumerate(judged)]
write_results("01_tiny", "tiny", client, "toy data", [result("judged", len(items), n=len(items))], {"scores": items})
client.close()
"""


def write_tiny_notebook(path: Path) -> None:
    params = nbformat.v4.new_code_cell('judge = "sim"\nrun_name = None')
    params.metadata["tags"] = ["parameters"]
    nb = nbformat.v4.new_notebook(cells=[params, nbformat.v4.new_code_cell(TINY_BODY)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def hashes(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def papermill_run(notebook: Path, output: Path, parameters: dict[str, object]) -> str:
    import papermill

    papermill.execute_notebook(
        str(notebook), str(output), parameters=parameters, kernel_name="python3", progress_bar=False, cwd=str(root())
    )
    nb = nbformat.read(output, as_version=4)
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


def root() -> Path:
    found = project_root()
    if found is None:
        pytest.skip("needs a checkout (judges/sim.yaml)")
    return found


@pytest.mark.slow
def test_papermill_run_writes_a_run_of_its_own_never_runs_default(tmp_path: Path, isolated_runs: Path) -> None:
    default = isolated_runs / "default"
    (default / "01_tiny").mkdir(parents=True)
    (default / "manifest.json").write_text(json.dumps({"run": "default", "judge": {"name": "embedded"}}))
    embedded = {"name": "embedded", "model_name": "SmolLM2-135M-Instruct (embedded)", "kind": "llm"}
    results_default = {"schema": SCHEMA, "notebook": "01_tiny", "judge": embedded, "data": "toy", "results": []}
    (default / "01_tiny" / "results.json").write_text(json.dumps(results_default))
    (default / "01_tiny" / "judgments.jsonl").write_text('{"answer": "3"}\n')
    before = hashes(default)
    notebook = tmp_path / "01_tiny.ipynb"
    write_tiny_notebook(notebook)
    sim_profile = str(root() / "judges" / "sim.yaml")

    out = papermill_run(notebook, tmp_path / "out.ipynb", {"judge": sim_profile})
    assert hashes(default) == before  # every file of the book's own run is byte-identical
    (adhoc,) = [p for p in isolated_runs.iterdir() if p.name.startswith("adhoc-sim-")]
    assert f"writing to {adhoc}/" in out
    assert (adhoc / "01_tiny" / "judgments.jsonl").stat().st_size > 0
    results = json.loads((adhoc / "01_tiny" / "results.json").read_text())
    assert results["judge"]["name"] == "sim"
    saved = manifest(adhoc)
    assert saved["adhoc"] is True and saved["judge"]["name"] == "sim" and saved["judge"]["backend"] == "sim"
    assert saved["notebooks"] == ["01_tiny"]

    papermill_run(notebook, tmp_path / "out-mine.ipynb", {"judge": sim_profile, "run_name": "mine"})
    assert hashes(default) == before
    assert json.loads((isolated_runs / "mine" / "01_tiny" / "results.json").read_text())["judge"]["name"] == "sim"
    assert manifest(isolated_runs / "mine")["judge"]["name"] == "sim"
    assert (isolated_runs / "mine" / "01_tiny" / "judgments.jsonl").exists()

    # chapter 6 names both runs' judge from their manifests and the runner-less default run's from its own
    from recjudge_utils.experiments.judges_compared import compare, load_runs
    from recjudge_utils.reporting import judges_compared as report

    table = report.frame(compare(load_runs()), "runs").set_index("run")
    assert table.loc["mine", "judge profile"] == "sim" and table.loc[adhoc.name, "judge profile"] == "sim"
    assert table.loc[adhoc.name, "state"].startswith("ad hoc")
    assert table.loc["default", "judge profile"] == "embedded"
