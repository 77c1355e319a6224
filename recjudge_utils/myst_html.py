"""MyST text as HTML, for JupyterLab: the second representation of the package's MyST outputs.

An output of :class:`recjudge_utils.reporting.callouts.Callout` or :class:`~.callouts.MySTText` carries its MyST
source as ``text/markdown``, which the book renders (resolving ``{cite:p}`` and ``{term}`` against its bibliography
and glossary), and this HTML as ``text/html``, which JupyterLab shows (Lab prefers ``text/html``, with or without
jupyterlab-myst; the book ranks ``text/markdown`` first: ``nb_mime_priority_overrides`` in ``book/_config.yml``).

The MyST is parsed as myst-parser parses it: markdown-it-py (CommonMark, tables, raw HTML escaped) with mdit-py-plugins'
``myst_role`` and ``colon_fence``; a fence whose info is ``{name} argument`` is a directive. Admonitions become boxes
with their title, classes and a coloured left border (inline styles: Lab's sanitizer drops stylesheets),
``:class: dropdown`` a closed ``<details>``; sphinx-exercise's ``exercise`` a box "Exercise: <title>", its
``solution`` always a closed ``<details>``. ``{cite:t}``/``{cite:p}`` become author-year text as the book shows it,
"Tokutake et al. [2025]"/"[Tokutake et al., 2025]", the full reference as tooltip and in a "References" list under the
output (inside a closed solution for the works only it cites), read with pybtex from the checkout's
``book/references.bib``; ``{term}`` the term in italics, ``{doc}``, ``{ref}`` ... their link text, ``{math}`` its TeX
between ``$``, other roles their content. Without the ``book`` extra (markdown-it-py, mdit-py-plugins, pybtex)
:func:`myst_to_html` returns None and an output carries its MyST source alone.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recjudge_utils._extras import optional_imports
from recjudge_utils.paths import project_root

__all__ = ["Reference", "bibliography", "citation_text", "myst_to_html", "references_from_bibtex"]

_DIRECTIVE_INFO = re.compile(r"^\{(?P<name>[A-Za-z][\w:.+-]*)\}\s*(?P<arg>.*)$")
#: a directive's option line
_OPTION = re.compile(r"^:(?P<key>[\w-]+):\s*(?P<value>.*)$")
#: ``text <target>``: a role's explicit title
_TITLED = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$", re.DOTALL)
#: a role's HTML (``shown``: its title or target; ``content``: as written), escaped; other roles show as ``shown``
_ROLES = {
    "term": '<em class="term">{shown}</em>',
    "math": "${content}$",
    "sub": "<sub>{content}</sub>",
    "sup": "<sup>{content}</sup>",
    "abbr": '<abbr title="{target}">{shown}</abbr>',
    **dict.fromkeys(("doc", "ref", "numref", "any", "eq", "download", "prf:ref"), '<span class="xref">{shown}</span>'),
    **dict.fromkeys(("code", "literal", "file", "samp", "kbd"), "<code>{content}</code>"),
}

#: the admonition directives of docutils/MyST and the title each gets without an argument
_NAMED_ADMONITIONS = {
    name: "See also" if name == "seealso" else name.title()
    for name in ("attention", "caution", "danger", "error", "hint", "important", "note", "seealso", "tip", "warning")
}
#: border colour per class or directive (the book's callouts.css and Okabe-Ito's colour-blind-safe palette);
#: the first of an admonition's classes found here wins, then its directive name, then the default
_BORDERS = {
    "simulated": "0.25rem dashed #cc79a7",
    "learning-goals": "0.25rem solid #0072b2",
    "takeaways": "0.35rem double #009e73",
    **dict.fromkeys(("exercise", "solution"), "0.25rem solid #e69f00"),
    **dict.fromkeys(("warning", "caution", "attention", "danger", "error", "important"), "0.25rem solid #d55e00"),
}
_DEFAULT_BORDER = "0.25rem solid #56b4e9"
_BOX_STYLE = "border-left: {border}; padding: 0.1rem 0.8rem; margin: 0.6rem 0;"
_TITLE_STYLE = "font-weight: bold; margin: 0.4rem 0;"
#: jupyterlab-myst's stylesheet takes the marker off every <summary>; Lab's sanitizer keeps list-style-type (not
#: list-style: revert), so the triangle is put back, pointing right whether the dropdown is open or closed
_SUMMARY_STYLE = (
    "font-weight: bold; margin: 0.4rem 0; cursor: pointer; display: list-item; list-style-type: disclosure-closed;"
)
#: a code block: Lab's stylesheet gives <pre> in an output no box of its own
_PRE_STYLE = "background-color: rgba(0, 0, 0, 0.05); padding: 0.4rem 0.6rem; margin: 0.5rem 0; overflow-x: auto;"
_REFERENCES_STYLE = "font-size: 0.85em; margin-top: 0.6rem;"
#: the CSS class of the element that wraps the whole HTML (the Lab check and the book's tests look for it)
ROOT_CLASS = "recjudge-myst"

# --------------------------------------------------------------------------------------------- the bibliography


@dataclass(frozen=True)
class Reference:
    """One work of the bibliography: the surnames and year an author-year citation shows, and the full reference."""

    key: str
    surnames: tuple[str, ...]
    year: str
    text: str
    others: bool = False  # the author list ends with "and others"

    @property
    def label(self) -> str:
        """The author part of a citation: "Harper", "Harper and Konstan", "Tokutake et al."."""
        if not self.surnames:
            return self.key
        if len(self.surnames) >= 3 or (self.others and len(self.surnames) >= 1):
            return f"{self.surnames[0]} et al."
        return " and ".join(self.surnames)


@functools.cache
def _plain_text_backend() -> Any:
    """pybtex's plain-text backend, found once: ``render_as("text")`` looks the plugin up among every installed
    distribution's entry points on each call, about 15 ms a call here, 8-10 s for the book's bibliography in every
    kernel that displays MyST."""
    with optional_imports("book"):
        from pybtex.plugin import find_plugin

    return find_plugin("pybtex.backends", "text")()


def _text(latex: str) -> str:
    """A BibTeX value as plain text (pybtex: accents as Unicode, braces dropped, TeX quotes and dashes as
    characters), its white space (``~`` included) one space."""
    with optional_imports("book"):
        from pybtex.richtext import Text

    return " ".join(Text.from_latex(latex).render(_plain_text_backend()).split())


def _reference(key: str, entry: Any) -> Reference:
    """``entry`` (a pybtex ``Entry``) as a :class:`Reference`."""
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    others = bool(persons) and str(persons[-1]) == "others"
    people = persons[:-1] if others else persons
    full = [_text(" ".join(p.first_names + p.middle_names + p.prelast_names + p.last_names)) for p in people]
    authors = ", ".join(full) + " et al." if others else " and ".join(filter(None, [", ".join(full[:-1]), *full[-1:]]))
    fields = entry.fields  # case-insensitive names; the identifiers (doi, eprint, url) are used as written
    year, title = _text(fields.get("year", "n.d.")), _text(fields.get("title", "")).rstrip(".")
    parts = [f"{authors.rstrip('.')}. {year}." if authors else f"{year}.", f"{title}."]
    if venue := next((fields[n] for n in ("booktitle", "journal", "howpublished", "publisher") if fields.get(n)), ""):
        number = f"({_text(fields['number'])})" if fields.get("number") else ""
        volume = f" {_text(fields['volume'])}{number}" if fields.get("volume") else ""
        pages = f", {_text(fields['pages'])}" if fields.get("pages") else ""
        parts.append(f"{_text(venue)}{volume}{pages}".rstrip(".") + ".")
    if fields.get("doi"):
        parts.append(f"doi:{fields['doi']}")
    elif fields.get("eprint"):
        parts.append(f"{fields.get('archiveprefix', 'arXiv')}:{fields['eprint']}")
    elif fields.get("url"):
        parts.append(fields["url"])
    surnames = tuple(_text(" ".join(p.prelast_names + p.last_names)) for p in people)
    return Reference(key, surnames, year, " ".join(parts), others)


def references_from_bibtex(text: str) -> dict[str, Reference]:
    """Every entry of a BibTeX text (read by pybtex; ``%`` comment lines left out) as a :class:`Reference`, by key."""
    with optional_imports("book"):
        from pybtex.database import parse_string

    entries = parse_string(re.sub(r"(?m)^\s*%.*$", "", text), "bibtex").entries
    return {key: _reference(key, entry) for key, entry in entries.items()}


def default_bib_path() -> Path | None:
    """``book/references.bib`` of the checkout the package runs from (None outside a checkout)."""
    root = project_root()
    return root / "book" / "references.bib" if root is not None else None


@functools.cache
def _cached_bibliography(path: Path, mtime_ns: int) -> dict[str, Reference]:  # mtime_ns: an edited file is read again
    return references_from_bibtex(path.read_text(encoding="utf-8"))


def bibliography(path: Path | None = None) -> dict[str, Reference]:
    """The book's references by key, read from ``path`` (default :func:`default_bib_path`); {} without the file."""
    path = path or default_bib_path()
    return _cached_bibliography(path.resolve(), path.stat().st_mtime_ns) if path and path.is_file() else {}


def citation_text(keys: Sequence[str], textual: bool, references: Mapping[str, Reference]) -> str:
    """Author-year citation text as the book shows it (sphinxcontrib-bibtex's ``author_year`` style): textual
    "Wu et al. [2024]", parenthetical "[Harper and Konstan, 2015, Wu et al., 2024]", sorted by author and year as
    the book sorts them. A key not in ``references`` shows as itself."""
    known = sorted((references[k] for k in keys if k in references), key=lambda r: (r.label, r.year))
    shown = [f"{r.label} [{r.year}]" if textual else f"{r.label}, {r.year}" for r in known]
    shown += [k for k in keys if k not in references]
    return ", ".join(shown) if textual else f"[{', '.join(shown)}]"


# --------------------------------------------------------------------------------------------- MyST to HTML


@dataclass
class _Env:
    """What rendering one text collects: the cited keys in order, the labelled exercises' titles."""

    references: Mapping[str, Reference]
    cited: list[str] = field(default_factory=list)
    exercises: dict[str, str] = field(default_factory=dict)


def _role_html(name: str, content: str, env: _Env) -> str:
    titled = _TITLED.match(content)
    title, target = (titled.group("title"), titled.group("target")) if titled else ("", content)
    if name in ("cite", "cite:p", "cite:ps", "cite:t", "cite:ts", "cite:alp", "cite:al", "cite:author", "cite:year"):
        keys = [k.strip() for k in content.split(",") if k.strip()]
        env.cited.extend(k for k in keys if k not in env.cited)
        if name in ("cite:author", "cite:year"):
            part = "label" if name == "cite:author" else "year"
            shown = ", ".join(getattr(env.references[k], part) if k in env.references else k for k in keys)
        else:
            shown = citation_text(keys, name in ("cite:t", "cite:ts"), env.references)
        tooltip = " ".join(env.references[k].text for k in keys if k in env.references)
        attr = f' title="{html.escape(tooltip)}"' if tooltip else ""
        return f'<span class="cite"{attr}>{html.escape(shown)}</span>'
    escaped = {"shown": title or target, "content": content, "target": target}
    return _ROLES.get(name, "{shown}").format(**{k: html.escape(v) for k, v in escaped.items()})


def _code(text: str) -> str:
    return f'<pre style="{_PRE_STYLE}"><code>{html.escape(text)}</code></pre>'


def _block(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    """markdown-it render rule of ``fence``, ``colon_fence`` and ``code_block``: a directive or a code block."""
    token = tokens[idx]
    if token.type != "code_block" and (info := _DIRECTIVE_INFO.match(token.info.strip())):
        return _directive(info.group("name"), info.group("arg").strip(), token.content, env["myst"])
    return _code(token.content) + "\n"


@functools.cache
def _markdown() -> Any:
    with optional_imports("book"):
        from markdown_it import MarkdownIt
        from mdit_py_plugins.colon_fence import colon_fence_plugin
        from mdit_py_plugins.myst_role import myst_role_plugin

    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    md.use(myst_role_plugin).use(colon_fence_plugin)
    md.add_render_rule(
        "myst_role", lambda _, tokens, i, __, env: _role_html(tokens[i].meta["name"], tokens[i].content, env["myst"])
    )
    for kind in ("fence", "colon_fence", "code_block"):
        md.add_render_rule(kind, _block)
    return md


def _references_html(keys: Sequence[str], references: Mapping[str, Reference]) -> str:
    """The "References" list of the cited works ``references`` knows ("" when there is none)."""
    items = "".join(f"<li>{html.escape(references[k].text)}</li>" for k in keys if k in references)
    head = '<p style="margin: 0;">References</p>'
    return f'<div class="references" style="{_REFERENCES_STYLE}">{head}<ul>{items}</ul></div>' if items else ""


def _box(classes: list[str], title: str, body: str, name: str, closed: bool) -> str:
    border = next((_BORDERS[c] for c in classes if c in _BORDERS), _BORDERS.get(name, _DEFAULT_BORDER))
    style = _BOX_STYLE.format(border=border)
    css = html.escape(" ".join(dict.fromkeys(["admonition", *classes])))
    if closed:
        summary = f'<summary style="{_SUMMARY_STYLE}">{title}</summary>'
        return f'<details class="{css}" style="{style}">{summary}{body}</details>'
    head = f'<p class="admonition-title" style="{_TITLE_STYLE}">{title}</p>'
    return f'<div class="{css}" style="{style}">{head}{body}</div>'


def _render(text: str, env: _Env, inline: bool = False) -> str:
    md = _markdown()
    return str((md.renderInline if inline else md.render)(text, {"myst": env}))


def _closed_body(text: str, env: _Env) -> str:
    """The body of a closed ``<details>``, with the references it cites inside it: nothing of a hidden solution,
    not even which works it cites, shows before the click."""
    inner = _Env(env.references, exercises=env.exercises)
    return _render(text, inner) + _references_html(inner.cited, env.references)


def _directive(name: str, argument: str, content: str, env: _Env) -> str:
    """One directive as HTML: its options (``:key: value`` lines, or a ``---`` block of ``key: value``) read off the
    start of ``content``, the rest its body."""
    lines, options = content.splitlines(), {}
    end = next((j for j, line in enumerate(lines) if j and line.strip() == "---"), None)
    if end is not None and lines[0].strip() == "---":
        options = {k.strip(): v.strip() for k, sep, v in (line.partition(":") for line in lines[1:end]) if sep}
        lines = lines[end + 1 :]
    while lines and (option := _OPTION.match(lines[0].strip())):
        options[option.group("key")] = option.group("value").strip()
        lines = lines[1:]
    body = "\n".join(lines).strip("\n")
    classes = options.get("class", "").split()
    closed = "dropdown" in classes
    if name in ("admonition", "exercise", *_NAMED_ADMONITIONS):
        title = _render(argument, env, inline=True) if argument else _NAMED_ADMONITIONS.get(name, "Note")
        if name == "exercise":
            title = "Exercise" + (f": {title}" if argument else "")
            if options.get("label"):
                env.exercises[options["label"]] = title
        kind = [] if name == "admonition" else [name]
        return _box([*kind, *classes], title, _closed_body(body, env) if closed else _render(body, env), name, closed)
    if name == "solution":
        of = env.exercises.get(argument)
        title = "Solution" + (f" to {of}" if of else "")
        return _box(["solution", *classes], title, _closed_body(body, env), name, closed=True)
    if name == "dropdown":
        title = _render(argument, env, inline=True) if argument else "Details"
        return _box(classes, title, _closed_body(body, env), "", closed=True)
    if name in ("code-block", "code", "code-cell", "sourcecode"):
        return _code(body)
    if name == "math":
        return f"<p>{html.escape('$$' + body + '$$')}</p>"
    heading = f'<p style="{_TITLE_STYLE}">{_render(argument, env, inline=True)}</p>' if argument else ""
    return f'<div class="{html.escape(name.replace(":", "-"))}">{heading}{_render(body, env)}</div>'


def myst_to_html(text: str, references: Mapping[str, Reference] | None = None) -> str | None:
    """``text`` (MyST) as HTML for JupyterLab, wrapped in ``<div class="recjudge-myst">``; citations are resolved
    with ``references`` (default: :func:`bibliography`). None when the ``book`` extra is not installed."""
    try:
        _markdown()
        env = _Env(bibliography() if references is None else references)
    except ImportError:
        return None
    body = _render(text, env) + _references_html(env.cited, env.references)
    return f'<div class="{ROOT_CLASS}">{body}</div>'
