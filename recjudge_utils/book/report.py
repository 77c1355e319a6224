"""One run as one self-contained HTML file and its PDF: ``python -m recjudge_utils.book report RUN``.

The report is the book's own rendering of one run: the same Sphinx/MyST configuration (so admonitions, citations,
glued numbers, captions and tables look as they do in the book) builds the run's executed notebooks as a single
page, code inputs removed, the run manifest (judge, parameters, scale, commit, judge health, plan beside actual
usage) first. That page is then made self-contained: stylesheets inlined, images and fonts embedded as data URIs,
every script and every link to another file removed, so it opens from an e-mail attachment without network.

Math: a self-contained file cannot load MathJax's fonts and extensions, so MathJax runs once, in headless Chromium,
while the report is assembled; the typeset result (MathJax's HTML, its stylesheet, its fonts as data URIs) is what
the file keeps, and it shows math with no script at all. The PDF is that file printed by the same Chromium.
Without Chromium the HTML is still written, with the math left as its TeX source, and no PDF
(:data:`NO_CHROMIUM_MESSAGE` says how to install it).
"""

from __future__ import annotations

import base64
import json
import mimetypes
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import yaml

from recjudge_utils._extras import optional_imports
from recjudge_utils.book.chromium import CHROMIUM_NAMES, find_chromium
from recjudge_utils.book.run_logs import health_from_logs
from recjudge_utils.manifest import MANIFEST_FILE, RunManifest, manifest_markdown

with optional_imports("book"):
    from bs4 import BeautifulSoup

__all__ = ["NO_CHROMIUM_MESSAGE", "NO_PDF_EXIT", "ReportFiles", "load_manifest", "report_command", "write_report"]

#: exit code of ``report`` when the HTML was written but no PDF could be printed (no Chromium)
NO_PDF_EXIT = 3
#: the page of the run manifest inside the book (``_toc.yml``); in the report it is the root, so it comes first
MANIFEST_PAGE = "executed/run_manifest"
NO_CHROMIUM_MESSAGE = (
    f"no Chromium found (looked for {', '.join(CHROMIUM_NAMES)} on PATH): the HTML report is written with its math "
    "as TeX source, and no PDF. Install Chromium (Debian/Ubuntu: apt-get install -y chromium) and run the report "
    "again."
)
#: the theme's navigation: a report is read top to bottom, with nothing to navigate to
_LAYOUT_SELECTORS = (
    "#jb-print-docs-body",  # a printed title and contents, which would come before the manifest
    "#pst-skip-link",
    ".bd-header",
    ".bd-sidebar-primary",
    ".bd-sidebar-secondary",
    ".bd-header-article",
    ".bd-footer",
    ".bd-footer-article",
    ".prev-next-area",
    ".search-button__wrapper",
    "dialog",
    "a.headerlink",
    "#pst-back-to-top",
)
_REPORT_CSS = """
.bd-page-width { max-width: 64rem; }
.bd-main .bd-content .bd-article-container { max-width: 100%; }
.bd-main .bd-content { justify-content: center; }
@page { size: A4; margin: 14mm 12mm; }
@media print {
  html { font-size: 10pt; }
  .bd-article { padding: 0 !important; }
  /* the theme hides the first heading on paper, where its printed title (removed: see LAYOUT_SELECTORS) was */
  .bd-main .bd-content .bd-article h1:first-of-type { display: block !important; }
  /* paper has no scroll bar: what scrolls on screen wraps on paper instead of being cut at the box's edge */
  div.cell_output .output, .pst-scrollable-table-container, .table-wrapper { overflow: visible !important; }
  pre { white-space: pre-wrap !important; overflow-wrap: anywhere; }
  table { font-size: 0.8em; }
  th, td { overflow-wrap: anywhere; padding: 0.2em 0.4em !important; }
  img, figure, tr { break-inside: avoid; }
  h1, h2, h3 { break-after: avoid; }
}
"""
#: virtual milliseconds Chromium may spend loading MathJax and typesetting (fast-forwarded when idle)
MATH_BUDGET_MS = 120_000
TYPESET_MARK = "data-report-math"
_URL_IN_CSS = re.compile(r"""url\(\s*(['"]?)([^'")]+)\1\s*\)""")
_IMPORT_IN_CSS = re.compile(r"""@import\s+(?:url\()?\s*['"]?([^'");]+)['"]?\s*\)?\s*;""")
#: a @font-face's fallbacks in older formats, left out: every browser that shows the report reads its WOFF/WOFF2
#: first choice, and the fallbacks are as large again
_FALLBACK_FONTS = (".ttf", ".otf", ".eot")
_MATHJAX_FONT_FACE = re.compile(r"@font-face\s*\{[^}]*?font-family:\s*([\w-]+);[^}]*\}")


@dataclass(frozen=True)
class ReportFiles:
    """What :func:`write_report` wrote: the HTML, the PDF (None without Chromium), and how long it took."""

    html: Path
    pdf: Path | None
    math_typeset: bool
    seconds: float


def load_manifest(run_folder: Path) -> RunManifest:
    """The run's ``manifest.json`` as a :class:`RunManifest` (ValueError when missing or still running)."""
    path = run_folder / MANIFEST_FILE
    if not path.exists():
        raise ValueError(f"{path} does not exist: run the notebooks first (python -m recjudge_utils.book run)")
    data = json.loads(path.read_text())
    if data.get("status") == "running":
        raise ValueError(f"run {run_folder.name!r} is still running (its manifest says so): report it when finished")
    if "judge_health" not in data and (data.get("actual") or {}).get("notebooks"):
        # a run made before manifests held the judge's health: counted now from its logs, so the report shows it too
        data["judge_health"] = health_from_logs(run_folder, data["actual"]["notebooks"])
    return RunManifest.from_json(data)


#: the book's "Using recjudge" pages: how to use the tool, not what a run found, so a run's report leaves them out
MANUAL_DIR = "using"


def report_toc(toc: dict[str, Any]) -> dict[str, Any]:
    """The book's table of contents with the manifest as its root (first) and the book's root as first chapter,
    without the manual's pages (:data:`MANUAL_DIR`)."""
    first = {"file": toc["root"]}

    def without_manifest(chapters: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            c
            for c in chapters
            if c.get("file") != MANIFEST_PAGE and not str(c.get("file", "")).startswith(f"{MANUAL_DIR}/")
        ]

    out: dict[str, Any] = {k: v for k, v in toc.items() if k not in ("root", "parts", "chapters")}
    out["root"] = MANIFEST_PAGE
    if "parts" in toc:
        parts = [{**p, "chapters": without_manifest(p.get("chapters", []))} for p in toc["parts"]]
        parts = [p for p in parts if p["chapters"]]
        parts[0]["chapters"].insert(0, first)
        out["parts"] = parts
    else:
        out["chapters"] = [first, *without_manifest(toc.get("chapters", []))]
    return out


def _prepare_sources(book_dir: Path, run_folder: Path, manifest: RunManifest, work: Path) -> Path:
    """A copy of the book's sources with the run's executed notebooks, the manifest page, and the report's
    configuration (code sources removed, the manifest first)."""
    source = work / "book"
    shutil.copytree(book_dir, source, ignore=shutil.ignore_patterns("_build", "executed", MANUAL_DIR))
    shutil.copytree(run_folder / "executed", source / "executed")
    (source / f"{MANIFEST_PAGE}.md").write_text(manifest_markdown(manifest))
    config = yaml.safe_load((source / "_config.yml").read_text()) or {}
    sphinx = config.setdefault("sphinx", {}).setdefault("config", {}) or {}
    sphinx["nb_remove_code_source"] = True
    config["sphinx"]["config"] = sphinx
    config["title"] = f"{config.get('title', 'recjudge')}: run {manifest.run}"
    (source / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    toc = yaml.safe_load((source / "_toc.yml").read_text())
    (source / "_toc.yml").write_text(yaml.safe_dump(report_toc(toc), sort_keys=False))
    return source


def _build_single_page(source: Path) -> Path:
    """Build ``source`` with Jupyter Book's ``singlehtml`` builder; its output folder. The one page is
    ``<folder>/<MANIFEST_PAGE>.html``, and every URL in it is relative to the folder, wherever the page is."""
    jb = Path(sys.executable).with_name("jupyter-book")
    command = [str(jb) if jb.exists() else "jupyter-book", "build", str(source), "--builder", "singlehtml"]
    done = subprocess.run(command, capture_output=True, text=True)
    out = source / "_build" / "singlehtml"
    if done.returncode != 0 or not (out / f"{MANIFEST_PAGE}.html").exists():
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-30:])
        raise RuntimeError(f"the report's single-page build failed (exit {done.returncode}):\n{tail}")
    return out


def data_uri(path: Path) -> str:
    """``path`` as a base64 ``data:`` URI."""
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode()}"


def _local_file(base: Path, url: str) -> Path | None:
    """The file a relative URL (or ``file:`` URL) names, when it exists; None for remote URLs and fragments."""
    parts = urlsplit(url)
    if parts.scheme not in ("", "file") or not parts.path:
        return None
    path = Path(unquote(parts.path)) if parts.scheme == "file" else base / unquote(parts.path)
    return path if path.is_file() else None


def _inline_css(css: str, base: Path) -> str:
    """The stylesheet with its ``@import``s inlined and every ``url()`` embedded (a missing file becomes empty)."""

    def imported(match: re.Match[str]) -> str:
        path = _local_file(base, match.group(1))
        return _inline_css(path.read_text(encoding="utf-8"), path.parent) if path else ""

    def embedded(match: re.Match[str]) -> str:
        url = match.group(2).strip()
        if url.startswith(("data:", "#")):
            return match.group(0)
        path = _local_file(base, url)
        if path is None or path.suffix in _FALLBACK_FONTS:
            return 'url("data:,")'
        return f'url("{data_uri(path)}")'

    return _URL_IN_CSS.sub(embedded, _IMPORT_IN_CSS.sub(imported, css))


def _self_contained(base: Path) -> tuple[BeautifulSoup, dict[str, Any]]:
    """The single page of the build in ``base`` with stylesheets and images embedded, scripts, navigation and
    links to other files removed; and the page's MathJax configuration (empty when the page has no math)."""
    itself = f"{MANIFEST_PAGE}.html"
    soup = BeautifulSoup((base / itself).read_text(encoding="utf-8"), "html.parser")
    mathjax: dict[str, Any] = {}
    for script in soup.find_all("script"):
        text = script.string or ""
        if text.strip().startswith("window.MathJax"):
            mathjax = json.loads(text.split("=", 1)[1].strip().rstrip(";"))
        script.decompose()
    for link in soup.find_all("link"):
        path = _local_file(base, str(link.get("href", "")))
        if "stylesheet" in (link.get("rel") or []) and path is not None:
            style = soup.new_tag("style")
            style.string = _inline_css(path.read_text(encoding="utf-8"), path.parent)
            link.replace_with(style)
        else:
            link.decompose()
    article = soup.select_one(".bd-article") or soup.body
    anchor = f"document-{MANIFEST_PAGE}"  # singlehtml gives every inlined page this anchor but the root page
    if article is not None and soup.find(id=anchor) is None:
        article.insert(0, soup.new_tag("span", id=anchor))
    for selector in _LAYOUT_SELECTORS:
        for node in soup.select(selector):
            node.decompose()
    for img in soup.find_all("img"):
        path = _local_file(base, str(img.get("src", "")))
        if path is not None:
            img["src"] = data_uri(path)
    for a in soup.find_all("a", href=True):
        href = urlsplit(str(a["href"]))
        if href.scheme in ("", "file") and href.path:
            if href.path == itself and href.fragment:
                a["href"] = f"#{href.fragment}"
            else:
                a.unwrap()  # another file of the build: not in a one-file report
    style = soup.new_tag("style")
    style.string = _REPORT_CSS
    (soup.head or soup).append(style)
    if soup.html is not None:  # the theme's colours are keyed on data-theme, which its (removed) script set
        soup.html["data-theme"] = "light"
        soup.html["data-mode"] = "light"
    return soup, mathjax


def _has_math(soup: BeautifulSoup) -> bool:
    """Whether the page holds TeX for MathJax (Sphinx marks it with the ``math`` class)."""
    return soup.select_one(".math") is not None


def _typeset_math(soup: BeautifulSoup, config: dict[str, Any], mathjax_js: Path, chromium: str, work: Path) -> str:
    """The page with its math typeset by MathJax in headless Chromium, MathJax's stylesheet and fonts embedded
    and its scripts removed (RuntimeError when MathJax did not finish)."""
    fonts = mathjax_js.parent / "output" / "chtml" / "fonts" / "woff-v2"
    config = {**config, "chtml": {**config.get("chtml", {}), "fontURL": fonts.as_uri()}}
    # after typesetting, MathJax's stylesheet (built through the CSSOM, which a DOM dump does not show) is
    # written out as text and every script removed, so the dumped page needs neither
    finish = (
        "async () => { await MathJax.startup.defaultPageReady();"
        " for (const s of document.querySelectorAll('style')) { if (s.id.startsWith('MJX') && s.sheet)"
        " s.textContent = [...s.sheet.cssRules].map(r => r.cssText).join('\\n'); }"
        " document.querySelectorAll('script').forEach(s => s.remove());"
        f" document.documentElement.setAttribute('{TYPESET_MARK}', 'done'); }}"
    )
    head = soup.head or soup
    setup = soup.new_tag("script")
    setup.string = f"window.MathJax = {json.dumps(config)}; window.MathJax.startup = {{pageReady: {finish}}};"
    head.append(setup)
    head.append(soup.new_tag("script", src=mathjax_js.as_uri()))
    page = work / "typeset.html"
    page.write_text(str(soup), encoding="utf-8")
    done = subprocess.run(
        [*_chromium_command(chromium, work), "--dump-dom", f"--virtual-time-budget={MATH_BUDGET_MS}", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=600,
    )
    dom = done.stdout
    if f'{TYPESET_MARK}="done"' not in dom:
        raise RuntimeError(f"MathJax did not finish in Chromium (exit {done.returncode}): {done.stderr[-500:]}")
    typeset = BeautifulSoup(dom, "html.parser")
    # MathJax declares every font of its TeX set; the page needs the two defaults and the variants it uses
    variants = {c for node in typeset.find_all(re.compile("^mjx-")) for c in node.get("class") or []}
    used = {"MJXZERO", "MJXTEX"} | {f"MJX{c}" for c in variants if c.startswith("TEX-")}
    for style in typeset.find_all("style"):
        if str(style.get("id", "")).startswith("MJX"):
            css = _MATHJAX_FONT_FACE.sub(lambda m: m.group(0) if m.group(1) in used else "", style.get_text())
            style.string = _inline_css(css, fonts)
    for script in typeset.find_all("script"):
        script.decompose()
    return _html_document(typeset)


def _html_document(soup: BeautifulSoup) -> str:
    """The page as text, with the doctype that keeps browsers out of quirks mode (a DOM dump may lack it)."""
    text = str(soup).lstrip()
    return text if text[:9].upper() == "<!DOCTYPE" else "<!DOCTYPE html>\n" + text


def _chromium_command(chromium: str, work: Path) -> list[str]:
    """Headless Chromium with a profile of its own (a second Chromium on the machine does not lock it)."""
    profile = work / "chromium-profile"
    return [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}"]


def _print_pdf(html: Path, pdf: Path, chromium: str, work: Path) -> None:
    """Print ``html`` to ``pdf`` with headless Chromium (RuntimeError when no PDF appears)."""
    pdf.unlink(missing_ok=True)
    done = subprocess.run(
        [
            *_chromium_command(chromium, work),
            "--no-pdf-header-footer",
            "--generate-pdf-document-outline",  # the headings as the PDF's bookmarks: its table of contents
            f"--print-to-pdf={pdf}",
            html.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if not pdf.exists() or pdf.stat().st_size == 0:
        raise RuntimeError(f"Chromium printed no PDF (exit {done.returncode}): {done.stderr[-500:]}")


def write_report(
    run_folder: Path, book_dir: Path, out_dir: Path | None = None, chromium: str | None = None
) -> ReportFiles:
    """Write ``<out_dir>/<run>.html`` (self-contained) and, with Chromium, ``<out_dir>/<run>.pdf``;
    ``out_dir`` defaults to ``<run_folder>/report``."""
    started = time.perf_counter()
    if not (run_folder / "executed").is_dir():
        raise ValueError(f"{run_folder / 'executed'} does not exist: run the notebooks first")
    manifest = load_manifest(run_folder)
    out_dir = out_dir or run_folder / "report"
    out_dir.mkdir(parents=True, exist_ok=True)
    html_path, pdf_path = out_dir / f"{manifest.run}.html", out_dir / f"{manifest.run}.pdf"
    with tempfile.TemporaryDirectory(prefix="recjudge-report-") as tmp:
        work = Path(tmp)
        built = _build_single_page(_prepare_sources(book_dir, run_folder, manifest, work))
        soup, mathjax = _self_contained(built)
        mathjax_js = next(iter(sorted(built.glob("**/mathjax/tex-chtml.js"))), None)
        typeset = False
        if chromium and _has_math(soup) and mathjax_js is not None:
            html_path.write_text(_typeset_math(soup, mathjax, mathjax_js, chromium, work), encoding="utf-8")
            typeset = True
        else:
            html_path.write_text(_html_document(soup), encoding="utf-8")
        if chromium:
            _print_pdf(html_path, pdf_path, chromium, work)
        else:
            pdf_path.unlink(missing_ok=True)  # a PDF of an earlier report would not match this HTML
    return ReportFiles(html_path, pdf_path if chromium else None, typeset, round(time.perf_counter() - started, 1))


def report_command(run_folder: Path, book_dir: Path, out_dir: Path | None) -> int:
    """``python -m recjudge_utils.book report RUN``: write the report, say where and how long it took; the exit
    code (0 done, 1 the build or Chromium failed, :data:`NO_PDF_EXIT` HTML only: no Chromium)."""
    chromium = find_chromium()
    try:
        files = write_report(run_folder, book_dir, out_dir, chromium)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    size = files.html.stat().st_size / 1e6
    print(f"report written: {files.html} ({size:.1f} MB, self-contained)")
    if files.pdf is None:
        print(f"warning: {NO_CHROMIUM_MESSAGE}", file=sys.stderr)
        print(f"{files.seconds:.0f} s")
        return NO_PDF_EXIT
    print(f"PDF written: {files.pdf} ({files.pdf.stat().st_size / 1e6:.1f} MB); {files.seconds:.0f} s")
    return 0
