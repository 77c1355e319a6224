"""The chapters read in a real JupyterLab: ``python -m tools.page_checks lab [FOLDER]``.

A student opens a chapter in JupyterLab (README, "Reading and editing the notebooks in JupyterLab"). This check
does the same: it starts JupyterLab from the project's environment (this Python's) on loopback with a random token
on a free port, serving a temporary copy of the folder's notebooks (default ``runs/default/executed``; the copy
keeps Lab from writing checkpoints or trust signatures into the run), opens each one through Playwright in
Debian's Chromium, waits for its kernel and for the rendering to settle, saves a screenshot of the whole notebook,
and reports:

- ``raw``: MyST markup visible as text (``{cite``, ``{term``, ``{doc``, ``{ref``, ``{numref``, ``{glue``,
  ``:::``, "```{", ``:class:``), in a rendered Markdown cell, an output or a code cell's input;
- ``unresolved``: what jupyterlab-myst could not render and marks as such (an unknown directive, a citation it
  cannot find), and a glued value (myst-nb's ``{glue:text}``) shown as its name;
- ``solution``: a solution visible without a click, or still out of sight with every dropdown opened. The
  solutions are read from the notebook itself (:mod:`tools.page_checks.notebook_source`). Each solution's prose
  phrases that appear nowhere else in the notebook are looked for in the visible text (whitespace and quotes
  ignored), code inputs included: an ``exercise(...)`` call shows its solution to anyone who reads the cell;
- ``input``: the input of a cell the book removes (tag ``remove-input`` or ``remove-cell``) shown in Lab; a cell
  with ``"jupyter": {"source_hidden": true}`` in its metadata has its input collapsed in Lab;
- ``link``: a link to a file of the notebook's folder that is not there (jupyterlab-myst turns ``{doc}`` into a
  link to the document's name, without ``.ipynb``: "404: Not Found" when clicked);
- ``kernel``: the notebook's kernel did not start (no session, a dead kernel, a kernel dialog) within the timeout;
- ``console``: an error in the browser console or an uncaught script error (jupyterlab-myst logs a reference it
  cannot resolve, a ``{term}`` or ``{ref}`` among them, as one);
- ``setup``: the notebook did not open, or jupyterlab-myst is not installed in the environment.

A notebook takes about 7 s once Lab runs (the book's eight chapters about a minute on 2 cores, Lab's start
included). The server is :mod:`tools.page_checks.lab_server`'s.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from recjudge_utils.paths import DEFAULT_RUN, runs_dir
from tools.page_checks.core import VIEWPORT, Link, Problem, Report, headless_chromium, link_problems, open_page
from tools.page_checks.lab_server import TIMEOUT, LabServer
from tools.page_checks.notebook_source import (
    RAW_MARKUP,
    Solution,
    cell_source,
    glued_keys,
    notebook_solutions,
    raw_markup,
    squeeze,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

__all__ = ["PAGE_SCRIPT", "check_notebooks", "default_folder"]

#: the cell tags with which the book hides a cell's input (its output stays, or the whole cell goes)
_BOOK_REMOVES_INPUT = ("remove-input", "remove-cell")
#: the tallest screenshot Chromium takes in one piece; a taller notebook is shot in parts (the window is VIEWPORT
#: wide; its height grows to the notebook's for the screenshot)
_MAX_SHOT_HEIGHT = 16_000
#: seconds for a notebook's kernel to be idle: the project's Python kernel takes 1-3 s on 2 busy cores, and a kernel
#: that dies as it starts stays "starting" on the server for a minute, so the check cannot tell sooner
_KERNEL_TIMEOUT = 30.0
_SETTLE = 1.0
_NO_MYST = (
    "jupyterlab-myst is not installed in this environment, so Lab shows MyST (roles, directives) as raw text: "
    "pip install jupyterlab-myst"
)

# Runs in the page: per cell, its type, tags, and the visible text of its rendered Markdown, outputs and input;
# what jupyterlab-myst marks as unrendered; whether the input is shown. Returns plain data.
PAGE_SCRIPT = r"""
() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  if (!panel) return null;
  const visibleText = (root) => {
    const parts = [];
    if (!root) return '';
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const p = n.parentElement;
      if (!p || !n.textContent.trim()) continue;
      if (!p.checkVisibility({contentVisibilityAuto: true, opacityProperty: true, visibilityProperty: true})) continue;
      if (p.closest('details:not([open]) > :not(summary)')) continue;
      parts.push(n.textContent);
    }
    return parts.join('\n');
  };
  const shown = (el) => !!el && el.checkVisibility() && el.getBoundingClientRect().height > 0;
  const cells = [...panel.querySelectorAll('.jp-Notebook .jp-Cell')].map((cell, index) => {
    const markdown = cell.classList.contains('jp-MarkdownCell');
    const editor = cell.querySelector('.jp-InputArea-editor');
    const unresolved = [];
    for (const el of cell.querySelectorAll('[title="Citation Not Found"]')) {
      if (el.checkVisibility()) unresolved.push(el.textContent.trim().slice(0, 80));
    }
    for (const el of cell.querySelectorAll('.myst-exercise-title, .myst-admonition-header-text')) {
      const t = el.textContent.replace(/\s+/g, ' ').trim();
      if (/ - Unknown (Directive|Role)$/.test(t) && el.checkVisibility()) unresolved.push(t.slice(0, 80));
    }
    return {
      index,
      markdown,
      markdownText: markdown ? visibleText(cell.querySelector('.jp-Cell-inputWrapper')) : '',
      inputShown: !markdown && shown(editor),
      outputs: visibleText(cell.querySelector('.jp-OutputArea')),
      links: [...cell.querySelectorAll('.jp-Cell-inputWrapper a[href], .jp-OutputArea a[href]')]
        .filter((a) => a.checkVisibility())
        .map((a) => [a.textContent.trim().slice(0, 60), a.href]),
      unresolved: [...new Set(unresolved)],
    };
  });
  const scroller = panel.querySelector('.jp-WindowedPanel-outer') || panel.querySelector('.jp-Notebook');
  const dialogs = [...document.querySelectorAll('.jp-Dialog')].filter((d) => d.checkVisibility())
    .map((d) => d.innerText.replace(/\s+/g, ' ').trim().slice(0, 300));
  const status = panel.querySelector('.jp-Notebook-ExecutionIndicator');
  return {
    cells,
    height: scroller ? scroller.scrollHeight : 0,
    dialogs,
    kernelName: (panel.querySelector('.jp-KernelName') || {}).textContent || '',
    kernelStatus: status ? status.getAttribute('data-status') : null,
  };
}
"""
# What a student's click on every closed dropdown does: jupyterlab-myst's dropdowns and solutions, and the package's
# HTML ones, are <details> elements.
_OPEN_DROPDOWNS = """
() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  for (const s of panel.querySelectorAll('.jp-Notebook details:not([open]) > summary')) s.click();
}
"""
_SIZE_SCRIPT = """
() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const el = panel && (panel.querySelector('.jp-WindowedPanel-outer') || panel.querySelector('.jp-Notebook'));
  return el ? {scroll: el.scrollHeight, client: el.clientHeight, text: panel.innerText.length} : null;
}
"""
_SCROLL_TO = """
(y) => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const el = panel && (panel.querySelector('.jp-WindowedPanel-outer') || panel.querySelector('.jp-Notebook'));
  if (el) el.scrollTop = y;
}
"""


def _settle(page: Page, timeout: float) -> dict[str, Any] | None:
    """Wait until the notebook's size and text stop changing for :data:`SETTLE` seconds (renderers are
    asynchronous); its last size."""
    deadline = time.monotonic() + timeout
    last: dict[str, Any] | None = None
    stable_since = time.monotonic()
    while time.monotonic() < deadline:
        now = page.evaluate(_SIZE_SCRIPT)
        if now != last:
            last, stable_since = now, time.monotonic()
        elif time.monotonic() - stable_since >= _SETTLE:
            break
        page.wait_for_timeout(200)
    return last


def _wait_for_kernel(server: LabServer, name: str, page: Page, timeout: float) -> Problem | None:
    deadline = time.monotonic() + timeout
    state: str | None = None
    while time.monotonic() < deadline:
        state = server.kernel_state(name)
        if state == "idle":
            return None
        if state == "dead":
            break
        dialogs = [d for d in page.locator(".jp-Dialog").all_inner_texts() if d.strip()]
        if dialogs:
            return Problem("kernel", "a dialog instead of a kernel: " + " ".join(dialogs[0].split())[:300])
        page.wait_for_timeout(300)
    if state is None:
        return Problem("kernel", f"no kernel started within {timeout:.0f} s (no session for the notebook)")
    return Problem("kernel", f"the kernel is {state!r}, not idle, after {timeout:.0f} s")


def _screenshots(page: Page, height: int, target: Path) -> list[Path]:
    """The whole notebook in one PNG (the window as tall as the notebook), or in parts when too tall."""
    chrome = VIEWPORT[1] - page.evaluate(_SIZE_SCRIPT)["client"]
    window = min(height + chrome, _MAX_SHOT_HEIGHT)
    page.set_viewport_size({"width": VIEWPORT[0], "height": window})
    page.wait_for_timeout(300)
    step = window - chrome
    shots = []
    for part, y in enumerate(range(0, max(height, 1), step)):
        page.evaluate(_SCROLL_TO, y)
        page.wait_for_timeout(150)
        path = target if part == 0 else target.with_name(f"{target.stem}-{part + 1}{target.suffix}")
        page.screenshot(path=str(path))
        shots.append(path)
    page.evaluate(_SCROLL_TO, 0)
    return shots


def _regions(data: dict[str, Any], nb: dict[str, Any]) -> list[tuple[int, str, str]]:
    """What the page shows of each cell, as (cell index, "Markdown cell" | "input" | "output", text). A shown input
    is the cell's source (what the student reads on scrolling through it: the editor puts only the lines near the
    window in the page)."""
    cells = nb.get("cells", [])
    regions = []
    for cell in data["cells"]:
        index = cell["index"]
        regions.append((index, "Markdown cell", cell["markdownText"]))
        if cell["inputShown"] and index < len(cells):
            regions.append((index, "input", cell_source(cells[index].get("source"))))
        regions.append((index, "output", cell["outputs"]))
    return [r for r in regions if r[2].strip()]


def _links(data: dict[str, Any], origin: str, folder: Path) -> Iterator[Link]:
    """The links to a file of the notebook's folder (Lab serves them under ``/files/`` and ``/lab/tree/``), which
    :func:`~tools.page_checks.core.link_problems` reports when the file is not there: jupyterlab-myst turns
    ``{doc}`chapter 2 <02_rs_reevaluation>``` into a link to ``02_rs_reevaluation``, which Lab answers with
    "404: Not Found"."""
    for cell in data["cells"]:
        for text, href in cell["links"]:
            parts = urlsplit(href)
            if f"{parts.scheme}://{parts.netloc}" != origin:
                continue
            path = unquote(parts.path)
            prefix = next((p for p in ("/files/", "/lab/tree/") if path.startswith(p)), None)
            if prefix is None:
                continue
            target = path.removeprefix(prefix)
            yield Link(f"cell {cell['index']}: {text!r} links to {target}", folder / target)


def _page_problems(data: dict[str, Any], nb: dict[str, Any]) -> list[Problem]:
    cells = nb.get("cells", [])
    problems: list[Problem] = []
    if len(data["cells"]) != len(cells):
        problems.append(Problem("setup", f"Lab shows {len(data['cells'])} cells of the notebook's {len(cells)}"))
    for index, where, text in _regions(data, nb):
        if tokens := raw_markup(text):
            at = RAW_MARKUP.search(text)
            start = max(0, at.start() - 40) if at else 0
            context = " ".join(text[start : start + 110].split())
            problems.append(Problem("raw", f"cell {index} {where}: {', '.join(tokens)} in ...{context}..."))
    for cell in data["cells"]:
        index = cell["index"]
        source = cells[index] if index < len(cells) else {}
        if source.get("cell_type") == "markdown":
            for key in glued_keys(cell_source(source.get("source"))):
                if re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", cell["markdownText"]):
                    problems.append(Problem("unresolved", f"cell {index}: a glued value shows as its name, {key}"))
        if cell["unresolved"]:
            shown = "; ".join(cell["unresolved"][:5])
            problems.append(Problem("unresolved", f"cell {index}: jupyterlab-myst could not render: {shown}"))
        tags = source.get("metadata", {}).get("tags", [])
        if cell["inputShown"] and any(t in _BOOK_REMOVES_INPUT for t in tags):
            first = cell_source(source.get("source")).strip().splitlines()[:1]
            problems.append(
                Problem(
                    "input",
                    f"cell {index} (tags {', '.join(tags)}): its input, which the book removes, is shown in Lab "
                    f"({first[0][:60] if first else ''}...); collapse it: metadata jupyter.source_hidden = true",
                )
            )
    return problems


def _solution_problems(
    data: dict[str, Any], nb: dict[str, Any], solutions: Sequence[Solution], public: str
) -> list[Problem]:
    texts = [(index, where, squeeze(text)) for index, where, text in _regions(data, nb)]
    problems = []
    for solution in solutions:
        for probe in solution.probes(public):
            seen = next(((i, w) for i, w, t in texts if probe in t), None)
            if seen is not None:
                problems.append(
                    Problem(
                        "solution",
                        f"the solution in cell {solution.cell} ({solution.where}) is visible without a click, in "
                        f"cell {seen[0]}'s {seen[1]}: ...{probe[:60]}...",
                    )
                )
                break
    return problems


def _unreachable_solutions(
    data: dict[str, Any], nb: dict[str, Any], solutions: Sequence[Solution], public: str
) -> list[Problem]:
    """Solutions still out of sight with every dropdown open (a gated solution's code cells are left out: their
    inputs stay collapsed): a student could not read them at all."""
    texts = [squeeze(text) for _, _, text in _regions(data, nb)]
    problems = []
    for solution in solutions:
        probes = solution.probes(public)
        if solution.where != "gated" and probes and not any(p in t for p in probes for t in texts):
            problems.append(
                Problem(
                    "solution", f"the solution in cell {solution.cell} ({solution.where}) does not show when opened"
                )
            )
    return problems


def _check_one(
    browser: Browser,
    server: LabServer,
    name: str,
    nb: dict[str, Any],
    screenshots: Path | None,
    timeout: float,
    kernel_timeout: float,
    folder: Path,
) -> Report:
    from playwright.sync_api import Error as PlaywrightError

    started = time.monotonic()
    solutions, public = notebook_solutions(nb)
    report = Report(name, solutions=len(solutions))
    with open_page(browser) as (page, console):
        try:
            page.goto(server.notebook_url(name), wait_until="load", timeout=timeout * 1000)
            page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=timeout * 1000)
            if (kernel := _wait_for_kernel(server, name, page, kernel_timeout)) is not None:
                report.problems.append(kernel)
            size = _settle(page, timeout / 2)
            data = page.evaluate(PAGE_SCRIPT)
            if data is None or size is None:
                raise PlaywrightError("no notebook panel in the page")
            report.problems += [Problem("kernel", f"dialog: {d}") for d in data["dialogs"] if kernel is None]
            report.problems += _page_problems(data, nb)
            report.problems += link_problems(_links(data, server.url, folder))
            report.problems += _solution_problems(data, nb, solutions, public)
            if screenshots is not None:
                report.screenshots = _screenshots(page, int(size["scroll"]), screenshots / f"{Path(name).stem}.png")
            page.evaluate(_OPEN_DROPDOWNS)
            _settle(page, timeout / 4)
            report.problems += _unreachable_solutions(page.evaluate(PAGE_SCRIPT), nb, solutions, public)
        except PlaywrightError as exc:
            report.problems.append(Problem("setup", f"the notebook did not open in Lab: {' '.join(str(exc).split())}"))
        report.problems += console.problems
    report.seconds = time.monotonic() - started
    return report


def check_notebooks(
    notebooks: Sequence[Path],
    screenshots: Path | None = None,
    executable: str | None = None,
    timeout: float = TIMEOUT,
    kernels: Sequence[Path] = (),
    kernel_timeout: float = _KERNEL_TIMEOUT,
) -> list[Report]:
    """Open each notebook in JupyterLab (one server for all, on a temporary copy of them) in headless Chromium and
    report what a student would see wrong; with ``screenshots``, save each notebook's PNG(s) there; ``kernels`` are
    kernelspec folders Lab offers besides the environment's own (the tests' broken kernel). RuntimeError when
    Chromium, Playwright or JupyterLab is missing, or Lab does not start."""
    names = [p.name for p in notebooks]
    if len(set(names)) != len(names):
        raise ValueError(f"two notebooks of the same name: {names}")
    if screenshots is not None:
        screenshots.mkdir(parents=True, exist_ok=True)
    reports: list[Report] = []
    with tempfile.TemporaryDirectory(prefix="recjudge-lab-notebooks-") as tmp:
        root = Path(tmp)
        for path in notebooks:
            shutil.copy2(path, root / path.name)
        # the browser first: without it the check cannot run, and it starts in a second where Lab takes several
        with headless_chromium(executable) as browser, LabServer(root, timeout, kernels) as server:
            setup = [] if importlib.util.find_spec("jupyterlab_myst") else [Problem("setup", _NO_MYST)]
            for path in notebooks:
                nb = json.loads(path.read_text(encoding="utf-8"))
                report = _check_one(browser, server, path.name, nb, screenshots, timeout, kernel_timeout, path.parent)
                report.problems[:0] = setup
                reports.append(report)
    return reports


def default_folder() -> Path:
    """The executed notebooks of the book's run: ``runs/default/executed``."""
    return runs_dir() / DEFAULT_RUN / "executed"
