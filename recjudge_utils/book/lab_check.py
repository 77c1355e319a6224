"""The chapters read in a real JupyterLab: ``python -m recjudge_utils.book.lab_check [FOLDER]``.

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
  solutions are read from the notebook itself: the bodies of ``solution`` directives (sphinx-exercise, gated
  ``solution-start``/``solution-end`` included) and of directives with ``:class: dropdown`` (the package's
  :func:`~recjudge_utils.reporting.callouts.exercise`), in Markdown cells and in ``text/markdown`` outputs. Each
  solution's prose phrases that appear nowhere else in the notebook are looked for in the visible text (whitespace
  and quotes ignored), code inputs included: an ``exercise(...)`` call shows its solution to anyone who reads the
  cell;
- ``input``: the input of a cell the book removes (tag ``remove-input`` or ``remove-cell``) shown in Lab; a cell
  with ``"jupyter": {"source_hidden": true}`` in its metadata has its input collapsed in Lab;
- ``link``: a link to a file of the notebook's folder that is not there (jupyterlab-myst turns ``{doc}`` into a
  link to the document's name, without ``.ipynb``: "404: Not Found" when clicked);
- ``kernel``: the notebook's kernel did not start (no session, a dead kernel, a kernel dialog) within the timeout;
- ``console``: an error in the browser console or an uncaught script error (jupyterlab-myst logs a reference it
  cannot resolve, a ``{term}`` or ``{ref}`` among them, as one);
- ``setup``: the notebook did not open, or jupyterlab-myst is not installed in the environment.

A notebook takes about 7 s once Lab runs (the book's eight chapters about a minute on 2 cores, Lab's start
included). Exit code of the command line: 0 no problem, 1 problems, 2 no browser or no JupyterLab.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, urlsplit

from recjudge_utils.book.browser_check import NO_BROWSER, find_chromium, run_check
from recjudge_utils.paths import DEFAULT_RUN, runs_dir

if TYPE_CHECKING:
    from playwright.sync_api import Browser, ConsoleMessage, Page

__all__ = [
    "LabReport",
    "LabServer",
    "Problem",
    "Solution",
    "check_notebooks",
    "main",
    "notebook_solutions",
    "raw_markup",
    "report_text",
]

#: MyST a reader should never see as text: roles, directive fences, directive options
_RAW_MARKUP = re.compile(r"\{(?:cite|term|doc|ref|numref|glue|eq)[:}]|:::|```\{|:class:")
#: the cell tags with which the book hides a cell's input (its output stays, or the whole cell goes)
_BOOK_REMOVES_INPUT = ("remove-input", "remove-cell")
#: the window: wide enough for the chapters' tables; its height grows to the notebook's for the screenshot
VIEWPORT = (1400, 1000)
#: the tallest screenshot Chromium takes in one piece; a taller notebook is shot in parts
_MAX_SHOT_HEIGHT = 16_000
#: seconds for Lab to start, a notebook to open, its kernel to be idle, its rendering to settle
_TIMEOUT = 60.0
#: seconds for a notebook's kernel to be idle: the project's Python kernel takes 1-3 s on 2 busy cores, and a kernel
#: that dies as it starts stays "starting" on the server for a minute, so the check cannot tell sooner
_KERNEL_TIMEOUT = 30.0
_SETTLE = 1.0
_NO_LAB = "the Lab check needs JupyterLab in this environment (pip install jupyterlab; the book extra has it)"
_NO_MYST = (
    "jupyterlab-myst is not installed in this environment, so Lab shows MyST (roles, directives) as raw text: "
    "pip install jupyterlab-myst"
)
#: Lab's settings for the check: every cell in the page (no virtual scrolling, which would leave cells out of the
#: page and of the screenshot), no empty page's height below the last cell (it made the last part of a tall
#: notebook's screenshot blank), no news or update notifications over the notebook
_LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none", "scrollPastEnd": False},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
}
#: a solution phrase must be this long (characters other than whitespace) to be looked for
_MIN_PROBE = 16

_FENCE_OPEN = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,}|:{3,})\s*\{(?P<name>[A-Za-z][\w:.+-]*)\}(?P<arg>.*)$")
_OPTION = re.compile(r"^\s*:(?P<key>[\w-]+):\s*(?P<value>.*)$")
_ROLE = re.compile(r"\{[A-Za-z][\w:+.-]*\}`[^`]*`")
_CODE = re.compile(r"`[^`\n]*`")
#: myst-nb's glue roles: Lab has no glued value to show, and jupyterlab-myst shows the value's name instead
_GLUE = re.compile(r"\{glue(?::text|:md|:any)?\}`(?P<key>[^`:]+)[^`]*`")
_FENCED_CODE = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?^ {0,3}\1[`~]*\s*$", re.MULTILINE | re.DOTALL)
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"})

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


@dataclass(frozen=True)
class Problem:
    """One thing a student would see wrong in a notebook opened in Lab."""

    kind: str  # raw | unresolved | solution | input | link | kernel | console | setup
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


@dataclass(frozen=True)
class Solution:
    """A solution of the notebook: where it is (cell index, ``markdown``/``output``/``gated``) and its text."""

    cell: int
    where: str
    text: str

    def probes(self, public: str) -> list[str]:
        """The solution's prose phrases, whitespace removed, that ``public`` (the notebook's other text, likewise
        squeezed) does not hold: finding one in the page means the solution is visible."""
        prose = _FENCED_CODE.sub("\n", self.text)
        runs = re.split(r"\n\s*\n|" + _ROLE.pattern + "|" + _CODE.pattern + r"|[*_#>|\[\]()$]", prose)
        found = [_squeeze(r) for r in runs]
        found = [p for p in found if len(p) >= _MIN_PROBE and p not in public]
        return list(dict.fromkeys(found))


@dataclass
class LabReport:
    """What Lab showed of one notebook: problems, solutions looked for, screenshots, seconds taken."""

    notebook: str
    problems: list[Problem] = field(default_factory=list)
    solutions: int = 0
    screenshots: list[Path] = field(default_factory=list)
    seconds: float = 0.0


def _squeeze(text: str) -> str:
    """``text`` without whitespace and quotes (typographic or not): a sentence reads the same rendered, in a Markdown
    source, or in a code cell's Python strings (split into implicitly concatenated pieces or not)."""
    return re.sub(r"[\s\"']+", "", text.translate(_QUOTES))


def raw_markup(text: str) -> list[str]:
    """The raw MyST tokens in ``text``, each once, in order."""
    return list(dict.fromkeys(m.group() for m in _RAW_MARKUP.finditer(text)))


def _source(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _directives(text: str) -> Iterator[tuple[str, dict[str, str], str, int, int]]:
    """Every directive of ``text`` (nested ones too): name, options, body, first and last line index."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if m is None:
            i += 1
            continue
        fence = m.group("fence")
        end = i + 1
        while end < len(lines) and not (
            len(lines[end].strip()) >= len(fence) and set(lines[end].strip()) == {fence[0]}
        ):
            end += 1
        body_lines = lines[i + 1 : end]
        options: dict[str, str] = {}
        while body_lines and (o := _OPTION.match(body_lines[0])):
            options[o.group("key")] = o.group("value").strip()
            body_lines = body_lines[1:]
        body = "\n".join(body_lines)
        yield m.group("name"), options, body, i, end
        yield from _directives(body)
        i = end + 1


def _hidden_bodies(text: str) -> list[str]:
    """The bodies a reader must click to see: ``solution`` directives and directives with ``:class: dropdown``
    (the outermost of nested ones)."""
    found: list[str] = []
    for name, options, body, _, _ in _directives(text):
        if (name == "solution" or "dropdown" in options.get("class", "").split()) and not any(
            body in outer for outer in found
        ):
            found.append(body)
    return found


def _markdown_outputs(cell: dict[str, Any]) -> list[str]:
    return [
        _source(out.get("data", {}).get("text/markdown"))
        for out in cell.get("outputs", [])
        if "text/markdown" in out.get("data", {})
    ]


def notebook_solutions(nb: dict[str, Any]) -> tuple[list[Solution], str]:
    """The solutions of a notebook (see the module's docstring) and the rest of its prose, squeezed (whitespace
    removed): the text a solution's phrase must not also be in to count as the solution's own."""
    solutions: list[Solution] = []
    public: list[str] = []
    gated: int | None = None
    for index, cell in enumerate(nb.get("cells", [])):
        texts = [_source(cell.get("source"))] if cell.get("cell_type") == "markdown" else _markdown_outputs(cell)
        where = "markdown" if cell.get("cell_type") == "markdown" else "output"
        for text in texts:
            names = [name for name, *_ in _directives(text)]
            if "solution-start" in names:
                gated = index
            hidden = _hidden_bodies(text)
            solutions += [Solution(index, where, body) for body in hidden]
            for body in hidden:
                text = text.replace(body, "")
            if "solution-end" in names:
                gated = None
            public.append(text)
        if gated is not None and gated != index and cell.get("cell_type") == "code":
            solutions.append(Solution(index, "gated", _source(cell.get("source"))))
    return solutions, _squeeze("\n".join(public))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LabServer:
    """JupyterLab from this Python's environment, on 127.0.0.1 with a random token, serving ``root``; isolated from
    the user's Jupyter configuration, settings, workspaces and kernels (temporary folders), stopped on exit."""

    def __init__(self, root: Path, timeout: float = _TIMEOUT, kernels: Sequence[Path] = ()) -> None:
        self.root = root
        self.timeout = timeout
        self.kernels = list(kernels)
        self.token = secrets.token_hex(24)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._home = Path(tempfile.mkdtemp(prefix="recjudge-lab-"))
        self._proc: subprocess.Popen[bytes] | None = None
        self.log = self._home / "lab.log"

    def __enter__(self) -> LabServer:
        if importlib.util.find_spec("jupyterlab") is None:
            raise RuntimeError(_NO_LAB)
        for kernel in self.kernels:  # kernelspec folders (kernel.json) Lab offers besides the environment's own
            shutil.copytree(kernel, self._home / "data" / "kernels" / kernel.name)
        settings = self._home / "settings"
        for name, values in _LAB_SETTINGS.items():
            path = settings / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values), encoding="utf-8")
        env = dict(
            os.environ,
            JUPYTER_CONFIG_DIR=str(self._home / "config"),
            JUPYTER_DATA_DIR=str(self._home / "data"),
            JUPYTER_RUNTIME_DIR=str(self._home / "runtime"),
        )
        command = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
            f"--LabApp.user_settings_dir={settings}",
            f"--LabApp.workspaces_dir={self._home / 'workspaces'}",
        ]
        with self.log.open("wb") as log:
            self._proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                self.__exit__(None, None, None)
                raise RuntimeError(f"JupyterLab exited with {self._proc.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(OSError, urllib.error.URLError):
                self.api("status")
                return self
            time.sleep(0.3)
        self.__exit__(None, None, None)
        raise RuntimeError(f"JupyterLab did not answer within {self.timeout:.0f} s:\n{self.log_tail()}")

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(20)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        shutil.rmtree(self._home, ignore_errors=True)

    def log_tail(self, lines: int = 15) -> str:
        """The last lines of Lab's own log."""
        try:
            return "\n".join(self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def api(self, path: str) -> Any:
        """GET ``/api/<path>`` with the token; the decoded JSON."""
        request = urllib.request.Request(f"{self.url}/api/{path}", headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.loads(response.read())

    def notebook_url(self, name: str) -> str:
        """The URL that opens ``name`` (relative to the root) in Lab, in a fresh workspace."""
        return f"{self.url}/lab/tree/{quote(name)}?reset&token={self.token}"

    def kernel_state(self, name: str) -> str | None:
        """The execution state of the kernel of ``name``'s session (None: no session or no kernel)."""
        for session in self.api("sessions"):
            if session.get("path") == name and session.get("kernel"):
                return str(session["kernel"].get("execution_state"))
        return None


class _Console:
    """The page's console errors and uncaught script errors, each text once with how often it came (jupyterlab-myst
    logs the references it cannot resolve again at every rendering)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def message(self, msg: ConsoleMessage) -> None:
        if msg.type == "error":
            text = " ".join(msg.text.split())
            key = f"{text[:300]} ({msg.location.get('url', '')})"
            self.counts[key] = self.counts.get(key, 0) + 1

    def uncaught(self, exc: Exception) -> None:
        key = f"uncaught: {exc}"
        self.counts[key] = self.counts.get(key, 0) + 1

    @property
    def problems(self) -> list[Problem]:
        return [Problem("console", text + (f" ({n} times)" if n > 1 else "")) for text, n in self.counts.items()]


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
            regions.append((index, "input", _source(cells[index].get("source"))))
        regions.append((index, "output", cell["outputs"]))
    return [r for r in regions if r[2].strip()]


def _link_problems(data: dict[str, Any], origin: str, folder: Path) -> list[Problem]:
    """Links to a file of the notebook's folder (Lab serves them under ``/files/`` and ``/lab/tree/``) that is not
    there: jupyterlab-myst turns ``{doc}`chapter 2 <02_rs_reevaluation>``` into a link to ``02_rs_reevaluation``,
    which Lab answers with "404: Not Found"."""
    problems = []
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
            if not (folder / target).exists():
                problems.append(Problem("link", f"cell {cell['index']}: {text!r} links to {target}, not in the folder"))
    return problems


def _page_problems(data: dict[str, Any], nb: dict[str, Any]) -> list[Problem]:
    cells = nb.get("cells", [])
    problems: list[Problem] = []
    if len(data["cells"]) != len(cells):
        problems.append(Problem("setup", f"Lab shows {len(data['cells'])} cells of the notebook's {len(cells)}"))
    for index, where, text in _regions(data, nb):
        if tokens := raw_markup(text):
            at = _RAW_MARKUP.search(text)
            start = max(0, at.start() - 40) if at else 0
            context = " ".join(text[start : start + 110].split())
            problems.append(Problem("raw", f"cell {index} {where}: {', '.join(tokens)} in ...{context}..."))
    for cell in data["cells"]:
        index = cell["index"]
        source = cells[index] if index < len(cells) else {}
        if source.get("cell_type") == "markdown":
            for key in dict.fromkeys(m.group("key") for m in _GLUE.finditer(_source(source.get("source")))):
                if re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", cell["markdownText"]):
                    problems.append(Problem("unresolved", f"cell {index}: a glued value shows as its name, {key}"))
        if cell["unresolved"]:
            shown = "; ".join(cell["unresolved"][:5])
            problems.append(Problem("unresolved", f"cell {index}: jupyterlab-myst could not render: {shown}"))
        tags = source.get("metadata", {}).get("tags", [])
        if cell["inputShown"] and any(t in _BOOK_REMOVES_INPUT for t in tags):
            first = _source(source.get("source")).strip().splitlines()[:1]
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
    texts = [(index, where, _squeeze(text)) for index, where, text in _regions(data, nb)]
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
    texts = [_squeeze(text) for _, _, text in _regions(data, nb)]
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
) -> LabReport:
    started = time.monotonic()
    report = LabReport(name)
    solutions, public = notebook_solutions(nb)
    report.solutions = len(solutions)
    context = browser.new_context(viewport={"width": VIEWPORT[0], "height": VIEWPORT[1]})
    page = context.new_page()
    console = _Console()
    page.on("console", console.message)
    page.on("pageerror", console.uncaught)
    from playwright.sync_api import Error as PlaywrightError

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
        report.problems += _link_problems(data, server.url, folder)
        report.problems += _solution_problems(data, nb, solutions, public)
        if screenshots is not None:
            report.screenshots = _screenshots(page, int(size["scroll"]), screenshots / f"{Path(name).stem}.png")
        page.evaluate(_OPEN_DROPDOWNS)
        _settle(page, timeout / 4)
        report.problems += _unreachable_solutions(page.evaluate(PAGE_SCRIPT), nb, solutions, public)
    except PlaywrightError as exc:
        report.problems.append(Problem("setup", f"the notebook did not open in Lab: {' '.join(str(exc).split())}"))
    report.problems += console.problems
    context.close()
    report.seconds = time.monotonic() - started
    return report


def check_notebooks(
    notebooks: Sequence[Path],
    screenshots: Path | None = None,
    executable: str | None = None,
    timeout: float = _TIMEOUT,
    kernels: Sequence[Path] = (),
    kernel_timeout: float = _KERNEL_TIMEOUT,
) -> list[LabReport]:
    """Open each notebook in JupyterLab (one server for all, on a temporary copy of them) in headless Chromium and
    report what a student would see wrong; with ``screenshots``, save each notebook's PNG(s) there; ``kernels`` are
    kernelspec folders Lab offers besides the environment's own (the tests' broken kernel). RuntimeError when
    Chromium, Playwright or JupyterLab is missing, or Lab does not start."""
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        raise RuntimeError(NO_BROWSER) from exc
    executable = executable or find_chromium()
    if executable is None:
        raise RuntimeError(NO_BROWSER)
    names = [p.name for p in notebooks]
    if len(set(names)) != len(names):
        raise ValueError(f"two notebooks of the same name: {names}")
    if screenshots is not None:
        screenshots.mkdir(parents=True, exist_ok=True)
    reports: list[LabReport] = []
    with tempfile.TemporaryDirectory(prefix="recjudge-lab-notebooks-") as tmp:
        root = Path(tmp)
        for path in notebooks:
            shutil.copy2(path, root / path.name)
        with LabServer(root, timeout, kernels) as server, sync_playwright() as pw:
            try:
                browser = pw.chromium.launch(executable_path=executable, args=["--no-sandbox"])
            except PlaywrightError as exc:
                raise RuntimeError(f"{NO_BROWSER}; Chromium did not start: {exc}") from exc
            setup = [] if importlib.util.find_spec("jupyterlab_myst") else [Problem("setup", _NO_MYST)]
            for path in notebooks:
                nb = json.loads(path.read_text(encoding="utf-8"))
                report = _check_one(browser, server, path.name, nb, screenshots, timeout, kernel_timeout, path.parent)
                report.problems[:0] = setup
                reports.append(report)
            browser.close()
    return reports


def report_text(reports: Sequence[LabReport]) -> str:
    """The reports as text: each notebook's problems, solutions looked for, screenshots and seconds."""
    lines = []
    for r in reports:
        shots = ", ".join(str(p) for p in r.screenshots)
        lines.append(
            f"{r.notebook}: {len(r.problems)} problem(s), {r.solutions} solution(s) looked for, {r.seconds:.1f} s"
            + (f", screenshot {shots}" if shots else "")
        )
        lines += [f"  {p}" for p in r.problems]
    return "\n".join(lines)


def default_folder() -> Path:
    """The executed notebooks of the book's run: ``runs/default/executed``."""
    return runs_dir() / DEFAULT_RUN / "executed"


def main(argv: list[str] | None = None) -> int:
    """Check every notebook of a folder in JupyterLab; print the problems per notebook (exit 1 if any, 2 when no
    browser or no JupyterLab)."""
    parser = argparse.ArgumentParser(prog="python -m recjudge_utils.book.lab_check", description=__doc__)
    parser.add_argument("folder", nargs="?", default=None, help="notebooks to open (default: runs/default/executed)")
    parser.add_argument("--screenshots", default=None, help="folder for the PNGs (default: lab-screenshots/ beside)")
    parser.add_argument("--timeout", type=float, default=_TIMEOUT, help="seconds for Lab, a notebook, its kernel")
    args = parser.parse_args(argv)
    folder = Path(args.folder) if args.folder else default_folder()
    notebooks = sorted(folder.glob("*.ipynb"))
    if not notebooks:
        print(f"error: no notebook in {folder}: run the book first (make book)", file=sys.stderr)
        return 2
    screenshots = Path(args.screenshots) if args.screenshots else folder.parent / "lab-screenshots"
    return run_check(lambda: check_notebooks(notebooks, screenshots=screenshots, timeout=args.timeout),
                     report_text, "notebooks")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
