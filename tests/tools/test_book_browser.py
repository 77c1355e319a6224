"""The book in a real browser (Debian's Chromium through Playwright).

The test of the test runs the checker on two fixture pages: one with every problem it must report (an over-wide
table, a clipped table, a broken image, broken links, TeX MathJax never saw, a console error), one with wide
content that is fine (a scroll box, a code block, typeset math, a sidebar beside the column). The ``browser``
test checks every page of the built book (``book/_build/html``, after ``make book``) and saves screenshots.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from locations import FIXTURES, ROOT

from recjudge_utils.book.chromium import find_chromium
from tools.page_checks.book_pages import book_pages, check_pages
from tools.page_checks.core import Link, Report, link_problems, report_text

FIXTURES = FIXTURES / "browser"
BOOK_HTML = ROOT / "book" / "_build" / "html"

needs_browser = pytest.mark.skipif(
    find_chromium() is None or importlib.util.find_spec("playwright") is None,
    reason="needs Chromium (apt-get install -y chromium) and Playwright (the dev extra)",
)


@pytest.fixture(scope="module")
def fixture_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Report]:
    pages = [FIXTURES / "broken.html", FIXTURES / "ok.html"]
    reports = check_pages(FIXTURES, pages=pages, screenshots=tmp_path_factory.mktemp("shots"))
    return {r.name: r for r in reports}


@needs_browser
def test_every_planted_problem_is_reported(fixture_reports: dict[str, Report]) -> None:
    problems = fixture_reports["broken.html"].problems
    found = {(p.kind, p.detail) for p in problems}

    def has(kind: str, *words: str) -> bool:
        return any(k == kind and all(w in detail for w in words) for k, detail in found)

    assert has("overflow", "table#too-wide", "600 px past the column"), report_text([fixture_reports["broken.html"]])
    assert has("overflow", "the page scrolls sideways")
    assert has("clipped", "table#cut-off")
    assert has("image", "no-such-image.png")
    assert has("console", "fixture: a script error the check must report")
    assert has("math", "$$", "\\(", "$\\alpha + 1$")
    assert has("link", "no-such-page.html: no such file")
    assert has("link", "broken.html#no-such-anchor")
    assert has("link", "ok.html#no-such-section")
    assert not has("link", "section-one")  # the good link to the other page


@needs_browser
def test_wide_content_that_scrolls_or_is_typeset_is_no_problem(fixture_reports: dict[str, Report]) -> None:
    ok = fixture_reports["ok.html"]
    assert ok.problems == [], report_text([ok])
    assert [text for text in ok.notes if "table#scrolls" in text]  # listed for the reader, not a problem
    assert len(ok.screenshots) == 1 and ok.screenshots[0].read_bytes().startswith(b"\x89PNG")


@needs_browser
@pytest.mark.browser
@pytest.mark.skipif(not (BOOK_HTML / "intro.html").exists(), reason="the book is not built (make book)")
def test_built_book_in_a_browser() -> None:
    screenshots = BOOK_HTML.parent / "screenshots"
    reports = check_pages(BOOK_HTML, screenshots=screenshots)
    assert {r.name for r in reports} == {p.relative_to(BOOK_HTML).as_posix() for p in book_pages(BOOK_HTML)}
    unshot = [r.name for r in reports if not r.screenshots or not r.screenshots[0].exists()]
    assert all('http-equiv="refresh"' in (BOOK_HTML / page).read_text().lower() for page in unshot), unshot
    assert not any(r.problems for r in reports), report_text(reports)


def test_links_to_a_missing_file_or_anchor_are_problems_each_once(tmp_path: Path) -> None:
    page, missing = tmp_path / "a.html", tmp_path / "b.html"
    page.write_text('<h1 id="top">A</h1>', encoding="utf-8")
    links = [Link("a.html#top", page, "top"), Link("a.html#gone", page, "gone"), Link("b.html", missing)]
    found = link_problems([*links, Link("b.html", missing)], anchors=lambda path: {"top"})
    assert [str(p) for p in found] == ["link: a.html#gone: no anchor 'gone' on that page", "link: b.html: no such file"]
    assert [str(p) for p in link_problems(links)] == ["link: b.html: no such file"]  # no anchors given: files only
