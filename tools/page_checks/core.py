"""What the book check and the Lab check share: headless Chromium, a page with its console, problems and reports.

- :class:`Problem`: one thing a reader would see wrong (a kind and a detail);
- :class:`Report`: what the browser found in one page of the book or one notebook in Lab, and :func:`report_text`;
- :func:`headless_chromium`: Debian's Chromium started through Playwright (RuntimeError, saying how to install what
  is missing, when it cannot start);
- :func:`open_page`: a fresh browser context and page, with a :class:`Console` collecting its errors;
- :class:`Link` and :func:`link_problems`: links to a file that is not there, or to an anchor its page lacks;
- :func:`run_check`: a check's command line (the report, a count, the exit status).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from recjudge_utils.book.chromium import find_chromium

if TYPE_CHECKING:
    from playwright.sync_api import Browser, ConsoleMessage, Page

__all__ = [
    "NO_BROWSER",
    "VIEWPORT",
    "Console",
    "Link",
    "Problem",
    "Report",
    "headless_chromium",
    "link_problems",
    "open_page",
    "report_text",
    "run_check",
]

#: the window: wide enough for the chapters' tables (CSS pixels)
VIEWPORT = (1400, 1000)
NO_BROWSER = (
    "the browser check needs Playwright (pip install playwright; the dev extra has it) and Chromium "
    "(Debian/Ubuntu: apt-get install -y chromium)"
)


@dataclass(frozen=True)
class Problem:
    """One thing a reader would see wrong; the kinds are listed in each check's module docstring."""

    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


@dataclass
class Report:
    """What the browser found in one page or notebook: problems, notes that are no problem (the book's content
    scrolling inside its own box), screenshots, and for Lab the solutions looked for and the seconds taken."""

    name: str  # the page's path in the built book, or the notebook's file name
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    screenshots: list[Path] = field(default_factory=list)
    solutions: int | None = None
    seconds: float | None = None


def report_text(reports: Sequence[Report]) -> str:
    """The reports as text: a line per page or notebook, then its problems and its notes."""
    lines = []
    for r in reports:
        head = f"{r.name}: {len(r.problems)} problem(s)"
        if r.solutions is not None:
            head += f", {r.solutions} solution(s) looked for"
        if r.seconds is not None:
            head += f", {r.seconds:.1f} s"
        if r.screenshots:
            head += f", screenshot {', '.join(str(p) for p in r.screenshots)}"
        lines.append(head)
        lines += [f"  {p}" for p in r.problems]
        lines += [f"  {note}" for note in r.notes]
    return "\n".join(lines)


class Console:
    """A page's console errors and uncaught script errors, each text once with how often it came (jupyterlab-myst
    logs the references it cannot resolve again at every rendering)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def message(self, msg: ConsoleMessage) -> None:
        """Count a console message of type error, with the URL of the script or resource it names."""
        if msg.type == "error":
            text = " ".join(msg.text.split())
            self._count(f"{text[:300]} ({msg.location.get('url', '')})")

    def uncaught(self, exc: Exception) -> None:
        """Count an uncaught script error."""
        self._count(f"uncaught: {exc}")

    def _count(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1

    @property
    def problems(self) -> list[Problem]:
        return [Problem("console", text + (f" ({n} times)" if n > 1 else "")) for text, n in self.counts.items()]


@contextlib.contextmanager
def headless_chromium(executable: str | None = None) -> Iterator[Browser]:
    """Chromium (``executable``, else the first on PATH) driven by Playwright, closed on exit. RuntimeError when
    Playwright or Chromium is missing or Chromium does not start."""
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        raise RuntimeError(NO_BROWSER) from exc
    executable = executable or find_chromium()
    if executable is None:
        raise RuntimeError(NO_BROWSER)
    with sync_playwright() as pw:
        try:
            browser = pw.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        except PlaywrightError as exc:
            raise RuntimeError(f"{NO_BROWSER}; Chromium did not start: {exc}") from exc
        try:
            yield browser
        finally:
            browser.close()


@contextlib.contextmanager
def open_page(browser: Browser, viewport: tuple[int, int] = VIEWPORT) -> Iterator[tuple[Page, Console]]:
    """A page in a context of its own (no cookies or storage shared between pages), and its console."""
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    try:
        page = context.new_page()
        console = Console()
        page.on("console", console.message)
        page.on("pageerror", console.uncaught)
        yield page, console
    finally:
        context.close()


@dataclass(frozen=True)
class Link:
    """A link into the checked files: how the report names it, the file it points at and its anchor."""

    shown: str  # e.g. "chapter.html#section", or "cell 0: 'chapter 2' links to 02_rs_reevaluation"
    path: Path
    fragment: str = ""


def link_problems(links: Iterable[Link], anchors: Callable[[Path], set[str]] | None = None) -> list[Problem]:
    """The links to a file that is not there and, given ``anchors`` (a page's ids), to an anchor an HTML page does
    not have; each link once."""
    problems: dict[str, Problem] = {}
    for link in links:
        if not link.path.exists():
            problems[link.shown] = Problem("link", f"{link.shown}: no such file")
        elif (
            anchors is not None
            and link.fragment
            and link.path.suffix == ".html"
            and link.fragment not in anchors(link.path)
        ):
            problems[link.shown] = Problem("link", f"{link.shown}: no anchor '{link.fragment}' on that page")
    return list(problems.values())


def run_check(check: Callable[[], Sequence[Report]], what: str) -> int:
    """A check's command line: run ``check``, print its reports and a count of ``what`` and of the problems; the exit
    status is 1 if any problem, 2 when the check could not run (no browser, no server)."""
    started = time.perf_counter()
    try:
        reports = check()
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(report_text(reports))
    problems = sum(len(r.problems) for r in reports)
    print(f"{len(reports)} {what}, {problems} problem(s), {time.perf_counter() - started:.1f} s")
    return 1 if problems else 0
