"""The execution cache: a notebook, a plan or a book is made again only when what it is made from changed.

Runs of a tiny two-notebook book (real kernels, through the runner) with the simulated judge, which needs no
server: a second run executes nothing, and each input of the key (the notebook, a parameter, the judge, the package,
the data, another run's results for the chapter that reads every run) makes exactly the notebooks it should execute.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import nbformat
import pytest
from test_book import write_notebook

from recjudge_utils import book
from recjudge_utils.book import build, execution_cache
from recjudge_utils.judge.loading import load_profile

pytestmark = pytest.mark.slow


def sim(name: str = "sim") -> Any:
    return load_profile({"name": name, "backend": "sim", "model": "sim"})


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "notebooks").mkdir(parents=True)
    (root / "book").mkdir()
    for name in ("01_first", "02_second", "06_judges_compared"):
        write_notebook(root / "notebooks" / f"{name}.ipynb", 'judge = "embedded"\nn: int = 3', [f"print({name!r}, n)"])
    return root


def executed(runs: Path, run: str = "r") -> dict[str, int]:
    """Modification time of each executed copy: a notebook executed again writes its copy again."""
    return {p.name: p.stat().st_mtime_ns for p in sorted((runs / run / "executed").glob("*.ipynb"))}


def manifest(runs: Path, run: str = "r") -> dict[str, Any]:
    return json.loads((runs / run / "manifest.json").read_text())


def test_a_second_run_executes_nothing_and_keeps_its_manifest(
    project: Path, isolated_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    book.run(sim(), "r", build=False, root=project)
    first, first_manifest = executed(isolated_runs), manifest(isolated_runs)
    assert all(nb["cache_key"] and not nb["reused"] for nb in first_manifest["notebooks"])
    capsys.readouterr()
    again = book.run(sim(), "r", build=False, root=project)
    assert "nothing to execute" in capsys.readouterr().out
    assert executed(isolated_runs) == first
    assert manifest(isolated_runs) == first_manifest  # the run is the run it was
    assert [nb.notebook for nb in again.notebooks] == [nb["notebook"] for nb in first_manifest["notebooks"]]

    book.run(sim(), "r", build=False, root=project, force=True)  # --force: every notebook again
    assert all(executed(isolated_runs)[nb] != first[nb] for nb in first)


def test_an_edited_notebook_executes_with_every_later_one_and_earlier_ones_are_reused(
    project: Path, isolated_runs: Path
) -> None:
    book.run(sim(), "r", build=False, root=project)
    first = executed(isolated_runs)
    write_notebook(project / "notebooks" / "02_second.ipynb", 'judge = "embedded"\nn: int = 3', ["print('edited')"])
    book.run(sim(), "r", build=False, root=project)
    now = executed(isolated_runs)
    assert now["01_first.ipynb"] == first["01_first.ipynb"]
    assert now["02_second.ipynb"] != first["02_second.ipynb"]
    assert now["06_judges_compared.ipynb"] != first["06_judges_compared.ipynb"]  # may read what 02 wrote
    rows = {nb["notebook"]: nb for nb in manifest(isolated_runs)["notebooks"]}
    assert rows["01_first.ipynb"]["reused"] and not rows["02_second.ipynb"]["reused"]
    assert "01_first.ipynb | ok (reused" in (isolated_runs / "r" / "run_manifest.md").read_text()


@pytest.mark.parametrize("change", ["parameter", "judge", "package", "data", "offline"])
def test_each_input_of_the_key_executes_the_notebooks_again(
    change: str, project: Path, isolated_runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("RECJUDGE_DATA_DIR", str(data))
    book.run(sim(), "r", build=False, root=project)
    first = executed(isolated_runs)
    options: dict[str, Any] = {}
    profile = sim()
    if change == "parameter":
        options["parameters"] = {"n": 4}
    elif change == "judge":
        profile = sim("another-sim")
    elif change == "package":
        monkeypatch.setattr(execution_cache, "package_digest", lambda: "an edited package")
    elif change == "data":
        (data / "new.csv").write_text("user,item\n1,2\n")
    else:
        options["offline"] = True
    book.run(profile, "r", build=False, root=project, **options)
    assert all(executed(isolated_runs)[nb] != first[nb] for nb in first), change


def test_the_chapter_reading_every_run_executes_again_when_another_run_changes(
    project: Path, isolated_runs: Path
) -> None:
    book.run(sim(), "r", build=False, root=project)
    first = executed(isolated_runs)
    other = isolated_runs / "other"
    (other / "01_first").mkdir(parents=True)
    (other / "manifest.json").write_text(json.dumps({"judge": {"name": "x", "model": "x"}, "status": "ok"}))
    (other / "01_first" / "results.json").write_text("[1]\n")
    book.run(sim(), "r", build=False, root=project)
    now = executed(isolated_runs)
    assert now["01_first.ipynb"] == first["01_first.ipynb"] and now["02_second.ipynb"] == first["02_second.ipynb"]
    assert now["06_judges_compared.ipynb"] != first["06_judges_compared.ipynb"]


def test_a_failed_notebook_is_executed_again(project: Path, isolated_runs: Path) -> None:
    write_notebook(project / "notebooks" / "02_second.ipynb", "n = 1", ["raise ValueError('boom')"])
    with pytest.raises(book.NotebookFailed):
        book.run(sim(), "r", build=False, root=project)
    first = executed(isolated_runs)
    write_notebook(project / "notebooks" / "02_second.ipynb", "n = 1", ["print('fixed')"])
    book.run(sim(), "r", build=False, root=project)
    assert executed(isolated_runs)["02_second.ipynb"] != first["02_second.ipynb"]
    assert manifest(isolated_runs)["status"] == "ok"


def test_the_plan_is_kept_while_its_inputs_are_unchanged(
    project: Path, isolated_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = book.plan(sim(), "r", root=project)
    assert first["cache_key"]
    plan_file = isolated_runs / "r" / "plan.json"
    written = plan_file.stat().st_mtime_ns
    assert book.plan(sim(), "r", root=project)["cache_key"] == first["cache_key"]
    assert "it is kept" in capsys.readouterr().out and plan_file.stat().st_mtime_ns == written
    assert book.plan(sim(), "r", parameters={"n": 5}, root=project)["cache_key"] != first["cache_key"]
    assert book.plan(sim(), "r", parameters={"n": 5}, root=project, force=True)["cache_key"]
    assert plan_file.stat().st_mtime_ns != written


def test_the_book_is_built_again_only_when_its_sources_or_the_run_changed(
    project: Path, isolated_runs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "book" / "_toc.yml").write_text("format: jb-book\nroot: intro\n")
    (project / "book" / "intro.md").write_text("# Intro\n")
    builds: list[list[str]] = []
    real_run = subprocess.run

    def jupyter_book(command: list[str], **kwargs: Any) -> Any:
        if "build" not in command:  # git, asked for the manifest's commit
            return real_run(command, **kwargs)
        builds.append(command)
        html = project / "book" / "_build" / "html"
        html.mkdir(parents=True, exist_ok=True)
        (html / "index.html").write_text("<html></html>")
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(build.subprocess, "run", jupyter_book)
    book.run(sim(), "r", build=True, root=project)
    assert len(builds) == 1
    assert build.build_book(project, "r") is False and len(builds) == 1  # nothing changed
    (project / "book" / "intro.md").write_text("# Intro, edited\n")
    assert build.build_book(project, "r") is True and len(builds) == 2
    nb = nbformat.read(isolated_runs / "r" / "executed" / "01_first.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("a changed output"))
    nbformat.write(nb, isolated_runs / "r" / "executed" / "01_first.ipynb")
    assert build.build_book(project, "r") is True and len(builds) == 3
    assert build.build_book(project, "r", force=True) is True and len(builds) == 4


def test_a_folder_dataset_written_into_the_data_folder_changes_only_the_keys_that_read_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    (data / "ml-100k").mkdir(parents=True)
    (data / "ml-100k" / "ml-100k.inter").write_text("user_id:token\titem_id:token\n1\t2\n")
    monkeypatch.setenv("RECJUDGE_DATA_DIR", str(data))
    before = execution_cache.data_digest()
    books = data / "shelf-reads"  # make book writes the books example here after the simulated run
    books.mkdir()
    (books / "interactions.csv").write_text("user,item\n1,2\n")
    (books / "recjudge.yaml").write_text("name: shelf-reads\n")
    assert execution_cache.data_digest() == before  # the other notebooks' keys are unchanged
    keyed = execution_cache.dataset_folder_digest({"dataset": str(books)})
    (books / "interactions.csv").write_text("user,item\n1,2\n3,4\n")
    assert execution_cache.data_digest() == before
    assert execution_cache.dataset_folder_digest({"dataset": str(books)}) != keyed  # the notebook reading it is
    (data / "ml-100k" / "ml-100k.inter").write_text("user_id:token\titem_id:token\n1\t3\n")
    assert execution_cache.data_digest() != before  # a named dataset's files still count
