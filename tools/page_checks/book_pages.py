"""The built book read in a real browser: ``python -m tools.page_checks book [HTML_DIR]``.

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
areas and code blocks do) are allowed: they are listed per page as notes, "(scrolls in its own box) ..." (what the
reader must scroll sideways to see), not as problems.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from tools.page_checks.core import VIEWPORT, Link, Problem, Report, headless_chromium, link_problems, open_page

__all__ = ["PAGE_SCRIPT", "book_pages", "check_pages"]

#: the build's own folders and Sphinx's generated pages, which are not pages of the book
_SKIPPED_DIRS = ("_static", "_sources", "_images", "_downloads")
_SKIPPED_PAGES = ("genindex.html", "search.html", "py-modindex.html")
#: milliseconds to wait for a page, and for MathJax to finish
_TIMEOUT_MS = 30_000
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


def book_pages(html_dir: Path) -> list[Path]:
    """Every page of the built book under ``html_dir``, sorted."""
    return sorted(
        p
        for p in html_dir.rglob("*.html")
        if p.name not in _SKIPPED_PAGES and not any(part in _SKIPPED_DIRS for part in p.relative_to(html_dir).parts)
    )


def _link(url: str, root: Path) -> Link | None:
    """The file and fragment a link points at, when it is a link into the build (``file:`` URL under root)."""
    parts = urlsplit(url)
    if parts.scheme != "file":
        return None
    path = Path(unquote(parts.path))
    if path.is_dir():
        path = path / "index.html"
    try:
        relative = path.relative_to(root)
    except ValueError:
        return None
    fragment = unquote(parts.fragment)
    return Link(relative.as_posix() + (f"#{fragment}" if fragment else ""), path, fragment)


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
) -> list[Report]:
    """Open each page (default: :func:`book_pages`) in headless Chromium and report what is wrong on it;
    with ``screenshots``, save a full-page PNG of each there. RuntimeError when no browser can be started."""
    root = html_dir.resolve()
    pages = [p.resolve() for p in (pages if pages is not None else book_pages(root))]
    if screenshots is not None:
        screenshots.mkdir(parents=True, exist_ok=True)
    reports: list[Report] = []
    links: dict[Path, list[str]] = {}
    ids: dict[Path, set[str]] = {}
    with headless_chromium(executable) as browser:
        from playwright.sync_api import Error as PlaywrightError  # importable: the browser started

        for path in pages:
            name = path.relative_to(root).as_posix()
            report = Report(name)
            reports.append(report)
            redirect = _static(path).refresh
            if redirect is not None:  # a redirect stub (index.html): its target is a link like any other
                links[path] = [(path.parent / redirect.split("#")[0]).resolve().as_uri()]
                continue
            with open_page(browser, viewport) as (page, console):
                try:
                    page.goto(path.as_uri(), wait_until="load", timeout=_TIMEOUT_MS)
                    page.wait_for_function(_WAIT_FOR_MATHJAX, timeout=_TIMEOUT_MS)
                    page.evaluate(_SCROLL_THROUGH)
                    data = page.evaluate(PAGE_SCRIPT)
                    if screenshots is not None:
                        shot = screenshots / (name.replace("/", "__").removesuffix(".html") + ".png")
                        page.screenshot(path=str(shot), full_page=True)
                        report.screenshots.append(shot)
                except PlaywrightError as exc:
                    report.problems.append(Problem("console", f"the page did not finish loading: {exc}"))
                    continue
                report.problems += console.problems + _text_problems(data)
                report.notes = [f"(scrolls in its own box) {text}" for text in data["scrolling"]]
                links[path] = data["links"]
                ids[path] = set(data["ids"])

    def anchors(path: Path) -> set[str]:  # a page the browser did not open (a link's target) is read from its file
        if path not in ids:
            ids[path] = _static(path).ids
        return ids[path]

    for report in reports:
        found = (_link(url, root) for url in links.get(root / report.name, []))
        report.problems += link_problems((link for link in found if link is not None), anchors)
    return reports
