"""The run manifest: one writer for the runner's runs and the ad-hoc ones, each with its keys; the commit it names."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from recjudge_utils.manifest import MANIFEST_FILE, MANIFEST_PAGE_FILE, NotebookRun, RunManifest, git_commit

RUNNER_KEYS = [
    "run", "judge", "scale", "parameters", "package_version", "git_commit", "python", "started_utc", "finished_utc",
    "seconds", "status", "notebooks", "plan", "actual", "training_seconds", "endpoint_adaptations", "judge_health",
]  # fmt: skip
ADHOC_KEYS = ["run", "adhoc", "judge", "notebooks", "package_version", "git_commit", "python", "started_utc"]


def test_a_runner_manifest_is_written_with_its_keys_and_page_and_read_back(tmp_path: Path) -> None:
    manifest = RunManifest("r", {"name": "sim", "model": "m"}, "demo", {"n_users": 3}, git_commit="abc")
    manifest.notebooks = [NotebookRun("00_introduction.ipynb", "out.ipynb", {"judge": {}}, status="ok")]
    manifest.write(tmp_path)
    saved = json.loads((tmp_path / MANIFEST_FILE).read_text(encoding="utf-8"))
    assert list(saved) == RUNNER_KEYS  # no "adhoc" key: a runner's manifest is as it always was
    assert "# Run manifest" in (tmp_path / MANIFEST_PAGE_FILE).read_text(encoding="utf-8")
    assert RunManifest.from_json(saved) == manifest
    assert sorted(p.name for p in tmp_path.iterdir()) == [MANIFEST_FILE, MANIFEST_PAGE_FILE]  # no temporary file


def test_an_adhoc_manifest_keeps_its_own_keys_and_names_its_notebooks(tmp_path: Path) -> None:
    manifest = RunManifest("adhoc-x", git_commit="abc", adhoc=True)
    manifest.notebooks.append(NotebookRun.from_json("03_recsys_arena"))
    manifest.write(tmp_path)
    saved = json.loads((tmp_path / MANIFEST_FILE).read_text(encoding="utf-8"))
    assert list(saved) == ADHOC_KEYS
    assert saved["adhoc"] is True and saved["judge"] is None and saved["notebooks"] == ["03_recsys_arena"]
    assert not (tmp_path / MANIFEST_PAGE_FILE).exists()  # an ad-hoc run has no book page
    assert RunManifest.from_json(saved).to_json() == saved


def test_an_entry_read_back_leaves_out_keys_it_does_not_know() -> None:
    run = NotebookRun.from_json({"notebook": "a", "output": "o", "parameters": {}, "later": 1}, reused=True)
    assert run == NotebookRun("a", "o", {}, reused=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_commit_says_dirty_when_tracked_files_changed(tmp_path: Path) -> None:
    assert git_commit(None) == "unknown" and git_commit(tmp_path) == "unknown"

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=tmp_path, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    git("init", "-q")
    (tmp_path / "a.txt").write_text("one")
    git("add", "a.txt")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    sha = git("rev-parse", "HEAD")
    (tmp_path / "untracked.txt").write_text("not part of the checkout")
    assert git_commit(tmp_path) == sha  # an untracked file changes nothing that was run
    (tmp_path / "a.txt").write_text("two")
    assert git_commit(tmp_path) == f"{sha}-dirty"
