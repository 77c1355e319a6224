"""Each chapter's citations as text, its References section and its glossary cell:
``python -m tools.chapter_notes [--check] [NOTEBOOK ...]``.

A chapter is read in the book and in JupyterLab. Lab (jupyterlab-myst) has no bibliography and no glossary of the
book, so the notebooks' Markdown cells cite in plain author-year text, and each chapter carries what Lab needs at
its end, generated here from ``book/references.bib`` and ``book/glossary.md``:

- ``{cite:t}`` / ``{cite:p}`` roles in a Markdown cell become the text the book shows for them ("Tokutake et al.
  [2025]", "[Wang et al., 2023, Zheng et al., 2023]"), made by :func:`recjudge_utils.myst_html.citation_text`, the
  function that writes the package's outputs' HTML, so a cell and an output cite alike; an author may still write a
  role, and this command turns it into text;
- a **References** cell (id ``references``), shown in the book and in Lab: the full reference of every work a
  Markdown cell of the chapter cites, found from that text (two works of one author-year label, DESR's and PURS's
  "Li et al., 2020", are listed together);
- a **glossary** cell (id ``glossary``, tagged ``remove-cell`` so the book, which links ``{term}`` roles to its own
  glossary page, leaves it out): a mystmd ``glossary`` directive holding the terms the chapter's Markdown cells use,
  and the terms their definitions use in turn, with the definitions of ``book/glossary.md``, so every ``{term}``
  role resolves in Lab.

Without arguments every notebook under ``notebooks/`` is rewritten in place (outputs and other cells untouched);
``--check`` rewrites nothing and exits 1 naming the notebooks whose cells are not current
(``tests/tools/test_chapter_notes.py`` runs it).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recjudge_utils.myst_html import Reference, bibliography, citation_text
from recjudge_utils.paths import project_root

__all__ = [
    "REFERENCES_ID",
    "GlossaryEntry",
    "main",
]

REFERENCES_ID = "references"
_GLOSSARY_ID = "glossary"
_REFERENCES_HEADING = "## References"
_GLOSSARY_HEADING = "## Terms used in this chapter"
#: a citation role: ``{cite:t}`key1,key2```, ``{cite:p}`key```
_CITE = re.compile(r"\{cite(?::(?P<kind>[a-z]+))?\}`(?P<keys>[^`]+)`")
#: a glossary role: ``{term}`MAE``` or ``{term}`shown text <target>```
_TERM = re.compile(r"\{term\}`(?P<content>[^`]+)`")
_TITLED = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$", re.DOTALL)
_BRACKETS = re.compile(r"\[(?P<inner>[^\[\]]*)\]")
#: characters a reference's text must not leave to Markdown (emphasis, links, math, code, HTML)
_MARKDOWN_SPECIAL = re.compile(r"([\\*_\[\]$`<>])")


@dataclass(frozen=True)
class GlossaryEntry:
    """One entry of ``book/glossary.md``: its terms as written (aliases share the definition) and the definition."""

    terms: tuple[str, ...]
    definition: str


def _read_glossary(text: str) -> dict[str, GlossaryEntry]:
    """The entries of the book's glossary (a Sphinx ``glossary`` directive: term lines, then the definition indented
    by two spaces, paragraphs separated by blank lines), by every term in lower case."""
    start = re.search(r"^(`{3,}|:{3,})\{glossary\}[^\n]*\n", text, re.MULTILINE)
    if start is None:
        raise ValueError("no glossary directive in the glossary page")
    fence = start.group(1)
    end = text.find("\n" + fence, start.end())
    body = text[start.end() : end if end >= 0 else len(text)]
    entries: dict[str, GlossaryEntry] = {}
    terms: list[str] = []
    definition: list[str] = []

    def close() -> None:
        if terms:
            entry = GlossaryEntry(tuple(terms), "\n".join(definition).strip())
            for term in terms:
                entries[term.lower()] = entry

    for line in body.splitlines():
        if line.startswith(":") and not terms:
            continue  # the directive's options (:sorted:)
        if not line.strip():
            if definition:
                definition.append("")
            continue
        if line.startswith((" ", "\t")):
            definition.append(line.strip())
            continue
        if definition:  # a new entry begins
            close()
            terms, definition = [], []
        terms.append(line.strip())
    close()
    return entries


def _term_target(content: str) -> str:
    titled = _TITLED.match(content)
    return (titled.group("target") if titled else content).strip()


def _terms_used(text: str) -> list[str]:
    """The glossary terms ``{term}`` roles in ``text`` point to, each once, in order (a role wrapped over two lines
    names the term with one space, as MyST reads it)."""
    return list(dict.fromkeys(_term_target(" ".join(m.group("content").split())) for m in _TERM.finditer(text)))


def _cite_as_text(text: str, references: Mapping[str, Reference]) -> str:
    """``text`` with each ``{cite:t}``/``{cite:p}`` role replaced by the author-year text the book shows for it (a
    ``{cite}`` or ``{cite:p}`` role is parenthetical, ``{cite:t}`` textual)."""

    def replace(m: re.Match[str]) -> str:
        keys = [k.strip() for k in m.group("keys").split(",") if k.strip()]
        return citation_text(keys, m.group("kind") in ("t", "ts"), references)

    return _CITE.sub(replace, text)


def _cited_keys(text: str, references: Mapping[str, Reference]) -> list[str]:
    """The works ``text`` cites in the book's author-year form, textual ("Tokutake et al. [2025]") or parenthetical
    ("[Harper and Konstan, 2015, Wu et al., 2024]"), and any citation role still in it, in the bibliography's order;
    every work of a cited author-year label is counted (the text cannot tell two works of one label apart)."""
    found: set[str] = {
        k.strip() for m in _CITE.finditer(text) for k in m.group("keys").split(",") if k.strip() in references
    }
    groups = [m.group("inner") for m in _BRACKETS.finditer(text)]
    for key, ref in references.items():
        textual = re.compile(rf"(?<![\w.]){re.escape(ref.label)} \[{re.escape(ref.year)}\]")
        within = re.compile(rf"(?:^|, ){re.escape(ref.label)}, {re.escape(ref.year)}(?=,|$)")
        if textual.search(text) or any(within.search(g) for g in groups):
            found.add(key)
    return [k for k in references if k in found]


def _escaped(text: str) -> str:
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def _references_source(keys: Sequence[str], references: Mapping[str, Reference]) -> str:
    """The References cell: a heading and one bullet per work, sorted by author and year as the book's bibliography
    sorts them ("" when nothing is cited)."""
    works = sorted((references[k] for k in keys if k in references), key=lambda r: (r.label, r.year, r.text))
    if not works:
        return ""
    lines = [_REFERENCES_HEADING, "", "The works this chapter cites:", ""]
    return "\n".join(lines + [f"- {_escaped(r.text)}" for r in works])


def _closure(terms: Iterable[str], glossary: Mapping[str, GlossaryEntry]) -> list[str]:
    """``terms`` (those the glossary defines) and the terms their definitions use, transitively, each once."""
    pending, seen = [t for t in terms if t.lower() in glossary], {}
    while pending:
        term = pending.pop(0)
        if term.lower() in seen:
            continue
        seen[term.lower()] = term
        pending += [t for t in _terms_used(glossary[term.lower()].definition) if t.lower() in glossary]
    return list(seen.values())


def _glossary_source(
    terms: Iterable[str], glossary: Mapping[str, GlossaryEntry], references: Mapping[str, Reference]
) -> str:
    """The glossary cell: a mystmd ``glossary`` directive (a definition list) of ``terms`` and the terms their
    definitions use, alphabetically, each definition's citations as text ("" when the chapter uses no term)."""
    chosen = sorted(_closure(terms, glossary), key=str.lower)
    if not chosen:
        return ""
    items = []
    for term in chosen:
        paragraphs = _cite_as_text(glossary[term.lower()].definition, references).split("\n\n")
        body = "\n\n".join(" ".join(p.split()) for p in paragraphs)
        items.append(f"{term}\n: " + body.replace("\n\n", "\n\n  "))
    return "\n".join(
        [
            _GLOSSARY_HEADING,
            "",
            "The book's glossary entries for this chapter's terms.",
            "",
            ":::{glossary}",
            "\n\n".join(items),
            ":::",
        ]
    )


def _source(cell: Mapping[str, Any]) -> str:
    value = cell.get("source", "")
    return "".join(value) if isinstance(value, list) else str(value)


def _lines(text: str) -> list[str]:
    """A cell's source as the notebooks store it: a list of lines, each with its newline but the last."""
    return text.splitlines(keepends=True)


def _markdown_cell(cell_id: str, source: str, tags: Sequence[str] = ()) -> dict[str, Any]:
    metadata: dict[str, Any] = {"tags": list(tags)} if tags else {}
    return {"cell_type": "markdown", "id": cell_id, "metadata": metadata, "source": _lines(source)}


def _update_notebook(
    nb: dict[str, Any], glossary: Mapping[str, GlossaryEntry], references: Mapping[str, Reference]
) -> dict[str, Any]:
    """``nb`` with its Markdown cells' citation roles as text and its References and glossary cells regenerated at
    its end (References first; a cell with nothing to hold is left out). Returns ``nb`` (changed in place)."""
    cells = [c for c in nb["cells"] if c.get("id") not in (REFERENCES_ID, _GLOSSARY_ID)]
    terms: list[str] = []
    keys: list[str] = []
    for cell in cells:
        if cell.get("cell_type") != "markdown":
            continue
        text = _cite_as_text(_source(cell), references)
        if text != _source(cell):
            cell["source"] = _lines(text)
        terms += _terms_used(text)
        keys += _cited_keys(text, references)
    glossary_text = _glossary_source(dict.fromkeys(terms), glossary, references)
    keys += _cited_keys(glossary_text, references)
    references_text = _references_source(list(dict.fromkeys(keys)), references)
    if references_text:
        cells.append(_markdown_cell(REFERENCES_ID, references_text))
    if glossary_text:
        cells.append(_markdown_cell(_GLOSSARY_ID, glossary_text, tags=["remove-cell"]))
    nb["cells"] = cells
    return nb


def _dumps(nb: Mapping[str, Any]) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def _sources(root: Path) -> tuple[dict[str, GlossaryEntry], dict[str, Reference]]:
    glossary = _read_glossary((root / "book" / "glossary.md").read_text(encoding="utf-8"))
    references = bibliography(root / "book" / "references.bib")
    if not references:
        raise FileNotFoundError(f"no references in {root / 'book' / 'references.bib'}")
    return glossary, references


def rendered(path: Path, root: Path) -> tuple[str, str]:
    """The notebook's text as it is and as this module would write it."""
    glossary, references = _sources(root)
    text = path.read_text(encoding="utf-8")
    return text, _dumps(_update_notebook(json.loads(text), glossary, references))


def main(argv: list[str] | None = None) -> int:
    """Rewrite (or with ``--check`` only compare) the notebooks' citations, References and glossary cells."""
    parser = argparse.ArgumentParser(prog="python -m tools.chapter_notes", description=__doc__)
    parser.add_argument("notebooks", nargs="*", help="notebooks (default: notebooks/*.ipynb of the checkout)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a notebook is not current")
    args = parser.parse_args(argv)
    root = project_root()
    if root is None:
        print("error: run from a checkout (book/glossary.md and book/references.bib are read)", file=sys.stderr)
        return 2
    paths = [Path(p) for p in args.notebooks] or sorted((root / "notebooks").glob("*.ipynb"))
    stale = []
    for path in paths:
        before, after = rendered(path, root)
        if before == after:
            continue
        stale.append(path)
        if not args.check:
            path.write_text(after, encoding="utf-8")
    if args.check:
        for path in stale:
            print(f"{path}: citations, References or glossary cell not current")
        if stale:
            print("run: python -m tools.chapter_notes")
        else:
            print(f"{len(paths)} notebooks: citations, References and glossary cells current")
        return 1 if stale else 0
    for path in stale:
        print(f"rewrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
