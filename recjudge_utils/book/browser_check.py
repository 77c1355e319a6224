"""The built book read in a real browser: ``python -m recjudge_utils.book.browser_check [HTML_DIR]``.

Chromium (Debian's ``/usr/bin/chromium``, driven by Playwright) opens every page of a built book (every ``.html``
but ``genindex``, ``search`` and the build's own folders), scrolls through it as a reader would (lazy images and
lazily typeset math appear), waits for MathJax, saves a full-page screenshot, and reports:

- ``console``: an error in the browser console, or an uncaught script error;
- ``math``: TeX left as text after MathJax ran (``$$``, ``\\(``, ``\\[``, ``\\begin{``, ``$...\\cmd...$``
  outside code), or a formula MathJax could not typeset;
- ``image``: an image that did not load;
- ``overflow``: an element running past the right edge of the content column (``.bd-article``, else ``main``,
  else ``body``) with no scroll box of its own, or the page itself scrolling sideways;
- ``clipped``: an element cut off at the edge of a box that hides its overflow (``overflow: hidden``/``clip``):
  the reader cannot see the rest at all;
- ``link``: a link to a file of the build that does not exist, or to an anchor that page does not have.

Elements wider than the column inside a box that scrolls (``overflow-x: auto``/``scroll``, as myst-nb's output
areas and code blocks do) are allowed: they are listed per page as ``scrolling`` (what the reader must scroll
sideways to see), not as problems. Exit code of the command line: 0 no problem, 1 problems, 2 no browser.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    from playwright.sync_api import ConsoleMessage

__all__ = ["PageReport", "Problem", "book_pages", "check_pages", "find_chromium", "main", "report_text", "run_check"]

#: the build's own folders and Sphinx's generated pages, which are not pages of the book
_SKIPPED_DIRS = ("_static", "_sources", "_images", "_downloads")
_SKIPPED_PAGES = ("genindex.html", "search.html", "py-modindex.html")
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
VIEWPORT = (1400, 1000)
#: milliseconds to wait for a page, and for MathJax to finish
_TIMEOUT_MS = 30_000
NO_BROWSER = (
    "the browser check needs Playwright (pip install playwright; the dev extra has it) and Chromium "
    "(Debian/Ubuntu: apt-get install -y chromium)"
)
#: TeX delimiters, and a $...$ pair holding a TeX command (prose has dollars, rarely with a backslash between)
_RAW_TEX = re.compile(r"\$\$|\\\(|\\\)|\\\[|\\\]|\\begin\{|\$(?=[^$]*\\[A-Za-z])[^$\s][^$]*?\$")

# Runs in the page after loading, scrolling and typesetting: what a reader would see wrong. Returns plain data.
PAGE_SCRIPT = r"""
() => {
  const column = document.querySelector('.bd-article') || document.querySelector('main') || document.body;
  const cs = getComputedStyle(column);
  const box = column.getBoundingClientRect();
  const right = box.right - parseFloat(cs.paddingRight) - parseFloat(cs.borderRightWidth);
  const tol = 1;
  const where = (el) => {
    const section = el.closest('section');
    const heading = section && section.querySelector('h1, h2, h3, h4');
    return heading ? ` in "${heading.textContent.replace(/#$/, '').trim().slice(0, 80)}"` : '';
  };
  const name = (el) => {
    let s = el.tagName.toLowerCase();
    if (el.id) s += '#' + el.id;
    const cls = [...el.classList].slice(0, 3).join('.');
    if (cls) s += '.' + cls;
    const text = (el.innerText || '').replace(/\s+/g, ' ').trim().slice(0, 60);
    return text ? `${s} "${text}"` : s;
  };
  const overflow = [], clipped = [], scrolling = [];
  const reported = [];
  const boxes = new Set();
  for (const el of column.querySelectorAll('*')) {
    if (el.closest('mjx-assistive-mml')) continue;  // MathJax's off-screen copy for screen readers
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || r.right <= right + tol) continue;
    const st = getComputedStyle(el);
    if (st.visibility === 'hidden' || st.position === 'fixed') continue;
    if (reported.some((o) => o.contains(el))) continue;
    let holder = null;
    for (let a = el.parentElement; a && a !== column; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== 'visible') { holder = a; break; }
    }
    const past = Math.round(r.right - right);
    if (holder && holder.getBoundingClientRect().right <= right + tol) {
      if (boxes.has(holder)) continue;
      boxes.add(holder);
      if (holder.closest('pre, .highlight')) continue;  // code scrolls by design: not worth a note
      const ox = getComputedStyle(holder).overflowX;
      const hidden = Math.round(holder.scrollWidth - holder.clientWidth);
      const text = `${name(el)}${where(el)}: ${Math.round(r.width)} px wide, ${hidden} px beyond its box`;
      (ox === 'auto' || ox === 'scroll' ? scrolling : clipped).push(text);
      continue;
    }
    reported.push(el);
    overflow.push(`${name(el)}${where(el)}: ${Math.round(r.width)} px wide, ${past} px past the column's right edge`);
  }
  const page = document.documentElement;
  if (page.scrollWidth > page.clientWidth + tol) {
    overflow.push(`the page scrolls sideways: ${page.scrollWidth} px wide in a ${page.clientWidth} px window`);
  }
  const skip = 'pre, code, script, style, textarea, kbd, samp, mjx-container, .highlight';
  const walker = document.createTreeWalker(column, NodeFilter.SHOW_TEXT);
  const rawTex = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const parent = n.parentElement;
    if (!parent || parent.closest(skip) || !parent.checkVisibility()) continue;
    rawTex.push(n.textContent);
  }
  const images = [...document.images]
    .filter((img) => img.complete && img.naturalWidth === 0 && img.checkVisibility())
    .map((img) => `${img.getAttribute('src').slice(0, 120)}${where(img)}`);
  const mathErrors = [...document.querySelectorAll('mjx-merror')]
    .map((e) => `${(e.getAttribute('data-mjx-error') || e.textContent).slice(0, 100)}${where(e)}`);
  const links = [...document.querySelectorAll('a[href]')].map((a) => a.href);
  const ids = [...document.querySelectorAll('[id]')].map((e) => e.id)
    .concat([...document.querySelectorAll('a[name]')].map((e) => e.getAttribute('name')));
  return {overflow, clipped, scrolling, texts: rawTex, images, mathErrors, links, ids};
}
"""

_WAIT_FOR_MATHJAX = """
() => !document.querySelector('script[src*="mathjax" i]')
  || !!(window.MathJax && window.MathJax.startup && window.MathJax.startup.promise)
"""
# Scroll a window's height at a time, as a reader does: lazily loaded images and lazily typeset math appear.
_SCROLL_THROUGH = """
async () => {
  document.querySelectorAll('img[loading="lazy"]').forEach((img) => { img.loading = 'eager'; });
  const step = window.innerHeight;
  for (let y = 0; y < document.documentElement.scrollHeight; y += step) {
    window.scrollTo(0, y);
    await new Promise((done) => requestAnimationFrame(() => setTimeout(done, 30)));
  }
  window.scrollTo(0, 0);
  await Promise.all([...document.images].map((img) => img.decode().catch(() => null)));
  if (window.MathJax && window.MathJax.startup && window.MathJax.startup.promise) {
    await window.MathJax.startup.promise;
  }
  await document.fonts.ready;
}
"""


@dataclass(frozen=True)
class Problem:
    """One thing a reader would see wrong on a page."""

    kind: str  # console | math | image | overflow | clipped | link
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


@dataclass
class PageReport:
    """What the browser found on one page: problems, content scrolling inside its own box, the screenshot."""

    page: str
    problems: list[Problem] = field(default_factory=list)
    scrolling: list[str] = field(default_factory=list)
    screenshot: Path | None = None


class _ConsoleErrors:
    """What a page writes to the console as errors, and the exceptions its scripts leave uncaught."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def message(self, msg: ConsoleMessage) -> None:
        """Keep a console message of type error, with the URL of the script or resource it names."""
        if msg.type == "error":
            self.problems.append(Problem("console", f"{msg.text} ({msg.location.get('url', '')})"))

    def uncaught(self, exc: Exception) -> None:
        """Keep an uncaught script error."""
        self.problems.append(Problem("console", f"uncaught: {exc}"))


class _Ids(HTMLParser):
    """The ``id``/``name`` anchors of a page not opened in the browser, and where it redirects (meta refresh)."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.refresh: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        self.ids.update(v for k, v in attrs if k in ("id", "name") and v)
        if tag == "meta" and (values.get("http-equiv") or "").lower() == "refresh":
            target = re.search(r"url\s*=\s*['\"]?([^'\"]+)", values.get("content") or "", re.IGNORECASE)
            self.refresh = target.group(1).strip() if target else None


def _static(path: Path) -> _Ids:
    parser = _Ids()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return parser


def find_chromium() -> str | None:
    """The first Chromium (or Chrome) executable on PATH."""
    for name in CHROMIUM_NAMES:
        if found := shutil.which(name):
            return found
    return None


def book_pages(html_dir: Path) -> list[Path]:
    """Every page of the built book under ``html_dir``, sorted."""
    return sorted(
        p
        for p in html_dir.rglob("*.html")
        if p.name not in _SKIPPED_PAGES and not any(part in _SKIPPED_DIRS for part in p.relative_to(html_dir).parts)
    )


def _target(url: str, root: Path) -> tuple[Path, str] | None:
    """The file and fragment a link points at, when it is a link into the build (``file:`` URL under root)."""
    parts = urlsplit(url)
    if parts.scheme != "file":
        return None
    path = Path(unquote(parts.path))
    if path.is_dir():
        path = path / "index.html"
    try:
        path.relative_to(root)
    except ValueError:
        return None
    return path, unquote(parts.fragment)


def _link_problems(links: list[str], root: Path, ids: dict[Path, set[str]]) -> list[Problem]:
    problems: dict[str, Problem] = {}
    for url in links:
        target = _target(url, root)
        if target is None:
            continue
        path, fragment = target
        shown = path.relative_to(root).as_posix() + (f"#{fragment}" if fragment else "")
        if not path.exists():
            problems[shown] = Problem("link", f"{shown}: no such file")
        elif fragment and path.suffix == ".html":
            known = ids.get(path)
            if known is None:
                known = ids[path] = _static(path).ids
            if fragment not in known:
                problems[shown] = Problem("link", f"{shown}: no anchor '{fragment}' on that page")
    return list(problems.values())


def _text_problems(data: dict[str, Any]) -> list[Problem]:
    problems = [Problem("overflow", text) for text in data["overflow"]]
    problems += [Problem("clipped", text) for text in data["clipped"]]
    problems += [Problem("image", f"did not load: {src}") for src in data["images"]]
    problems += [Problem("math", f"MathJax error: {text}") for text in data["mathErrors"]]
    for text in data["texts"]:
        found = list(_RAW_TEX.finditer(text))
        if found:
            tokens = ", ".join(dict.fromkeys(m.group(0)[:12] for m in found))
            start = max(0, found[0].start() - 30)
            context = " ".join(text[start : found[0].end() + 50].split())
            problems.append(Problem("math", f"TeX left as text ({tokens}): ...{context}..."))
    return problems


def check_pages(
    html_dir: Path,
    pages: list[Path] | None = None,
    screenshots: Path | None = None,
    viewport: tuple[int, int] = VIEWPORT,
    executable: str | None = None,
) -> list[PageReport]:
    """Open each page (default: :func:`book_pages`) in headless Chromium and report what is wrong on it;
    with ``screenshots``, save a full-page PNG of each there. RuntimeError when no browser can be started."""
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        raise RuntimeError(NO_BROWSER) from exc
    executable = executable or find_chromium()
    if executable is None:
        raise RuntimeError(NO_BROWSER)
    root = html_dir.resolve()
    pages = [p.resolve() for p in (pages if pages is not None else book_pages(root))]
    if screenshots is not None:
        screenshots.mkdir(parents=True, exist_ok=True)
    reports: list[PageReport] = []
    links: dict[Path, list[str]] = {}
    ids: dict[Path, set[str]] = {}
    with sync_playwright() as pw:
        try:
            browser = pw.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        except PlaywrightError as exc:
            raise RuntimeError(f"{NO_BROWSER}; Chromium did not start: {exc}") from exc
        for path in pages:
            name = path.relative_to(root).as_posix()
            report = PageReport(name)
            reports.append(report)
            redirect = _static(path).refresh
            if redirect is not None:  # a redirect stub (index.html): its target is a link like any other
                links[path] = [(path.parent / redirect.split("#")[0]).resolve().as_uri()]
                continue
            context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
            page = context.new_page()
            console = _ConsoleErrors()
            page.on("console", console.message)
            page.on("pageerror", console.uncaught)
            try:
                page.goto(path.as_uri(), wait_until="load", timeout=_TIMEOUT_MS)
                page.wait_for_function(_WAIT_FOR_MATHJAX, timeout=_TIMEOUT_MS)
                page.evaluate(_SCROLL_THROUGH)
                data = page.evaluate(PAGE_SCRIPT)
                if screenshots is not None:
                    report.screenshot = screenshots / (name.replace("/", "__").removesuffix(".html") + ".png")
                    page.screenshot(path=str(report.screenshot), full_page=True)
            except PlaywrightError as exc:
                report.problems.append(Problem("console", f"the page did not finish loading: {exc}"))
                context.close()
                continue
            report.problems += console.problems + _text_problems(data)
            report.scrolling = data["scrolling"]
            links[path] = data["links"]
            ids[path] = set(data["ids"])
            context.close()
        browser.close()
    for report in reports:
        page_path = root / report.page
        report.problems += _link_problems(links.get(page_path, []), root, ids)
    return reports


def report_text(reports: list[PageReport]) -> str:
    """The reports as text: each page's problems, then what scrolls inside its own box."""
    lines = []
    for r in reports:
        lines.append(
            f"{r.page}: {len(r.problems)} problem(s)" + (f", screenshot {r.screenshot}" if r.screenshot else "")
        )
        lines += [f"  {p}" for p in r.problems]
        lines += [f"  (scrolls in its own box) {text}" for text in r.scrolling]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Check every page of a built book; print the problems per page (exit 1 if any, 2 without a browser)."""
    parser = argparse.ArgumentParser(prog="python -m recjudge_utils.book.browser_check", description=__doc__)
    parser.add_argument("html_dir", nargs="?", default="book/_build/html", help="the built book")
    parser.add_argument(
        "--screenshots", default=None, help="folder for the screenshots (default: screenshots/ beside HTML_DIR)"
    )
    parser.add_argument("--width", type=int, default=VIEWPORT[0], help="window width in CSS pixels")
    args = parser.parse_args(argv)
    html_dir = Path(args.html_dir)
    if not html_dir.is_dir():
        print(f"error: {html_dir} does not exist: build the book first (make book)", file=sys.stderr)
        return 2
    screenshots = Path(args.screenshots or html_dir.parent / "screenshots")
    return run_check(lambda: check_pages(html_dir, screenshots=screenshots, viewport=(args.width, VIEWPORT[1])),
                     report_text, "pages")  # fmt: skip


def run_check(check: Callable[[], Sequence[Any]], text: Callable[[Any], str], what: str) -> int:
    """A browser check's command line: run ``check``, print its reports (``text``) and a count of ``what`` and of the
    problems; the exit status is 1 if any problem, 2 when the check could not run (no browser, no server)."""
    started = time.perf_counter()
    try:
        reports = check()
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(text(reports))
    problems = sum(len(r.problems) for r in reports)
    print(f"{len(reports)} {what}, {problems} problem(s), {time.perf_counter() - started:.1f} s")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
