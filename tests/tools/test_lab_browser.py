"""The chapters in a real JupyterLab (started from this environment, read through Debian's Chromium by Playwright).

The test of the test opens three fixture notebooks (``tests/fixtures/lab/``, written by ``make_fixtures.py``
there). ``broken.ipynb`` plants every problem the check must report: a citation jupyterlab-myst cannot find, a
glossary term it cannot resolve, a ``{doc}`` link to no file, MyST printed as text, a book-removed input shown, a
solution visible in an exercise cell's input, one in an open ``solution`` directive, and one no click reveals.
``no_kernel.ipynb`` asks for a kernel that exits as it starts. ``good.ipynb``, a chapter as phase 2 of issue 33
writes them, must pass with its two solutions looked for. The chapters test opens every executed chapter of the
book's run (``runs/default/executed``, after ``make book``) and saves a screenshot of each in
``runs/default/lab-screenshots``. The tests that start Lab are ``browser`` tests: CI runs them after ``make book``,
beside the book's own browser check; the two that read the fixtures without a browser run in ``make test``.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from locations import FIXTURES

from recjudge_utils.book.chromium import find_chromium
from tools.page_checks.core import Problem, Report, report_text, run_check
from tools.page_checks.lab import check_notebooks, default_folder
from tools.page_checks.notebook_source import notebook_solutions, raw_markup

FIXTURES = FIXTURES / "lab"
#: read at import: every test runs with a runs folder of its own (conftest's isolated_runs), not the book's
EXECUTED = default_folder()

needs_lab = pytest.mark.skipif(
    find_chromium() is None
    or importlib.util.find_spec("playwright") is None
    or importlib.util.find_spec("jupyterlab") is None,
    reason="needs Chromium (apt-get install -y chromium), Playwright (the dev extra) and JupyterLab (the book extra)",
)


def test_fixtures_are_current() -> None:
    """The fixtures hold the package's current outputs: run tests/fixtures/lab/make_fixtures.py after changing them."""
    spec = importlib.util.spec_from_file_location("make_lab_fixtures", FIXTURES / "make_fixtures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in module.FIXTURES:
        assert (FIXTURES / name).read_text(encoding="utf-8") == module.render(name), name


def test_solutions_and_raw_markup_are_read_from_the_notebook() -> None:
    good = json.loads((FIXTURES / "good.ipynb").read_text(encoding="utf-8"))
    solutions, public = notebook_solutions(good)
    assert [(s.cell, s.where) for s in solutions] == [(2, "markdown"), (4, "output")]
    assert all(s.probes(public) for s in solutions)
    gated = {
        "cells": [
            {"cell_type": "markdown", "source": "```{solution-start} ex-1\n```", "metadata": {}},
            {"cell_type": "code", "source": "answer = compute_the_whole_thing(seed=0)", "metadata": {}, "outputs": []},
            {"cell_type": "markdown", "source": "```{solution-end}\n```", "metadata": {}},
            {"cell_type": "code", "source": "not_a_solution_at_all_here()", "metadata": {}, "outputs": []},
        ]
    }
    assert [(s.cell, s.where) for s in notebook_solutions(gated)[0]] == [(1, "gated")]
    assert raw_markup("see {cite:p}`x` and {term}`y`, ```{note}, :::{tip} and :class: z") == [
        "{cite:",
        "{term}",
        "```{",
        ":::",
        ":class:",
    ]
    assert raw_markup("a dict {'cite': 1} and a time 12:30") == []


@pytest.fixture(scope="module")
def fixture_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Report]:
    names = ["broken.ipynb", "no_kernel.ipynb", "good.ipynb"]
    reports = check_notebooks(
        [FIXTURES / n for n in names],
        screenshots=tmp_path_factory.mktemp("lab-shots"),
        kernels=[FIXTURES / "kernels" / "broken-kernel"],
        kernel_timeout=20,
    )
    return {r.name: r for r in reports}


@needs_lab
@pytest.mark.browser
def test_every_planted_problem_is_reported(fixture_reports: dict[str, Report]) -> None:
    broken = fixture_reports["broken.ipynb"]
    found = [(p.kind, p.detail) for p in broken.problems]

    def has(kind: str, *words: str) -> bool:
        return any(k == kind and all(w in detail for w in words) for k, detail in found)

    text = report_text([broken])
    assert has("unresolved", "cell 0", "tokutake2025serendipity"), text
    assert has("console", "term-mae"), text
    assert has("link", "cell 0", "'chapter 2' links to 02_rs_reevaluation"), text
    assert has("raw", "cell 1 output", "```{", ":class:"), text
    assert has("input", "cell 2", "remove-input"), text
    assert has("solution", "cell 3 (output)", "cell 3's input"), text
    assert has("solution", "cell 4 (markdown)", "cell 4's Markdown cell"), text
    assert has("solution", "cell 5 (output)", "does not show when opened"), text
    assert not has("solution", "cell 3 (output)", "does not show"), text
    assert not has("kernel"), text
    assert broken.solutions == 3
    no_kernel = fixture_reports["no_kernel.ipynb"]
    assert [p.kind for p in no_kernel.problems] == ["kernel"], report_text([no_kernel])


@needs_lab
@pytest.mark.browser
def test_a_chapter_written_for_lab_passes(fixture_reports: dict[str, Report]) -> None:
    good = fixture_reports["good.ipynb"]
    assert good.problems == [], report_text([good])
    assert good.solutions == 2
    assert good.screenshots and good.screenshots[0].read_bytes().startswith(b"\x89PNG")


@needs_lab
@pytest.mark.browser
@pytest.mark.skipif(not list(EXECUTED.glob("*.ipynb")), reason="the book's run is not executed (make book)")
def test_executed_chapters_in_jupyterlab() -> None:
    notebooks = sorted(EXECUTED.glob("*.ipynb"))
    assert notebooks, EXECUTED
    reports = check_notebooks(notebooks, screenshots=EXECUTED.parent / "lab-screenshots")
    assert [r.name for r in reports] == [p.name for p in notebooks]
    assert all(r.screenshots for r in reports), report_text(reports)
    assert not any(r.problems for r in reports), report_text(reports)


def test_the_checks_exit_status_counts_problems_and_says_when_it_could_not_run(capsys: pytest.CaptureFixture) -> None:
    def no_browser() -> list[Report]:
        raise RuntimeError("no Chromium")

    clean = [Report("a"), Report("b")]
    assert run_check(lambda: clean, "notebooks") == 0
    assert "2 notebooks, 0 problem(s)" in capsys.readouterr().out
    assert run_check(lambda: [*clean, Report("c", [Problem("raw", "{cite")])], "pages") == 1
    out = capsys.readouterr().out
    assert "3 pages, 1 problem(s)" in out and "c: 1 problem(s)\n  raw: {cite" in out
    assert run_check(no_browser, "pages") == 2
    assert capsys.readouterr().err == "error: no Chromium\n"


def test_a_report_reads_the_same_for_a_page_and_a_notebook(tmp_path: Path) -> None:
    page = Report("intro.html", [Problem("math", "TeX")], ["(scrolls in its own box) table"], [tmp_path / "a.png"])
    notebook = Report("01.ipynb", [Problem("kernel", "dead")], solutions=2, seconds=7.0)
    assert report_text([page, notebook]).splitlines() == [
        f"intro.html: 1 problem(s), screenshot {tmp_path / 'a.png'}",
        "  math: TeX",
        "  (scrolls in its own box) table",
        "01.ipynb: 1 problem(s), 2 solution(s) looked for, 7.0 s",
        "  kernel: dead",
    ]
