"""What the Lab check reads from a notebook's own source, without a browser: its solutions and raw MyST markup.

- :func:`notebook_solutions`: the solutions of a notebook, each a :class:`Solution` with the prose phrases
  (:meth:`Solution.probes`) that would give it away if found in the page. The solutions are the bodies of
  ``solution`` directives (sphinx-exercise, gated ``solution-start``/``solution-end`` included) and of directives
  with ``:class: dropdown`` (the package's :func:`~recjudge_utils.reporting.callouts.exercise`), in Markdown cells
  and in ``text/markdown`` outputs;
- :func:`raw_markup` (:data:`RAW_MARKUP`): MyST a reader should never see as text;
- :func:`glued_keys`: the names of the values a Markdown cell glues in (myst-nb's ``{glue:text}`` roles);
- :func:`squeeze` and :func:`cell_source`: text compared without whitespace and quotes, a cell's source as one string.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["RAW_MARKUP", "Solution", "cell_source", "glued_keys", "notebook_solutions", "raw_markup", "squeeze"]

#: MyST a reader should never see as text: roles, directive fences, directive options
RAW_MARKUP = re.compile(r"\{(?:cite|term|doc|ref|numref|glue|eq)[:}]|:::|```\{|:class:")
#: a solution phrase must be this long (characters other than whitespace) to be looked for
_MIN_PROBE = 16

_FENCE_OPEN = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,}|:{3,})\s*\{(?P<name>[A-Za-z][\w:.+-]*)\}(?P<arg>.*)$")
_OPTION = re.compile(r"^\s*:(?P<key>[\w-]+):\s*(?P<value>.*)$")
_ROLE = re.compile(r"\{[A-Za-z][\w:+.-]*\}`[^`]*`")
_CODE = re.compile(r"`[^`\n]*`")
#: myst-nb's glue roles
_GLUE = re.compile(r"\{glue(?::text|:md|:any)?\}`(?P<key>[^`:]+)[^`]*`")
_FENCED_CODE = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?^ {0,3}\1[`~]*\s*$", re.MULTILINE | re.DOTALL)
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"})


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
        found = [squeeze(r) for r in runs]
        found = [p for p in found if len(p) >= _MIN_PROBE and p not in public]
        return list(dict.fromkeys(found))


def squeeze(text: str) -> str:
    """``text`` without whitespace and quotes (typographic or not): a sentence reads the same rendered, in a Markdown
    source, or in a code cell's Python strings (split into implicitly concatenated pieces or not)."""
    return re.sub(r"[\s\"']+", "", text.translate(_QUOTES))


def raw_markup(text: str) -> list[str]:
    """The raw MyST tokens in ``text``, each once, in order."""
    return list(dict.fromkeys(m.group() for m in RAW_MARKUP.finditer(text)))


def cell_source(value: Any) -> str:
    """A notebook's text field (a cell's source, an output's data) as one string: nbformat allows a list of lines."""
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
        cell_source(out.get("data", {}).get("text/markdown"))
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
        texts = [cell_source(cell.get("source"))] if cell.get("cell_type") == "markdown" else _markdown_outputs(cell)
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
            solutions.append(Solution(index, "gated", cell_source(cell.get("source"))))
    return solutions, squeeze("\n".join(public))


def glued_keys(markdown: str) -> list[str]:
    """The names of the values ``markdown`` glues in, each once, in order: Lab has no glued value to show, and
    jupyterlab-myst shows the value's name instead."""
    return list(dict.fromkeys(m.group("key") for m in _GLUE.finditer(markdown)))
