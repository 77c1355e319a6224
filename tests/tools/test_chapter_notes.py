"""The chapters' References and glossary cells are generated from book/references.bib and book/glossary.md and
kept current; a citation role an author writes becomes the text the book shows for it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from locations import ROOT

from recjudge_utils.myst_html import bibliography
from tools import chapter_notes

CHAPTER = ROOT / "notebooks" / "00_introduction.ipynb"


def test_every_chapters_notes_are_current(capsys: pytest.CaptureFixture[str]) -> None:
    assert chapter_notes.main(["--check"]) == 0, capsys.readouterr().out


def test_a_new_citation_makes_the_check_fail_and_the_rewrite_lists_the_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = json.loads(CHAPTER.read_text(encoding="utf-8"))
    reference = bibliography(ROOT / "book" / "references.bib")["rendle2009bpr"]
    assert reference.text not in json.dumps(nb, ensure_ascii=False)  # the chapter does not cite BPR yet
    nb["cells"][0]["source"].append("\n\nAs {cite:t}`rendle2009bpr` show.")
    path = tmp_path / CHAPTER.name
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert chapter_notes.main(["--check", str(path)]) == 1
    assert "not current" in capsys.readouterr().out
    assert chapter_notes.main([str(path)]) == 0
    cells = {c.get("id"): "".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]}
    assert cells[nb["cells"][0]["id"]].endswith(f"As {reference.label} [{reference.year}] show.")
    assert f"- {reference.text}" in cells[chapter_notes.REFERENCES_ID]
    assert chapter_notes.main(["--check", str(path)]) == 0


def test_a_term_role_wrapped_over_two_lines_gets_its_glossary_entry(tmp_path: Path) -> None:
    nb = json.loads(CHAPTER.read_text(encoding="utf-8"))
    wrapped = ["The {term}`embedded\n", "judge`."]
    nb["cells"] = [{"cell_type": "markdown", "id": "c0", "metadata": {}, "source": wrapped}]
    path = tmp_path / CHAPTER.name
    path.write_text(json.dumps(nb, indent=1) + "\n", encoding="utf-8")
    assert chapter_notes.main([str(path)]) == 0
    glossary = next(c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["id"] == "glossary")
    assert "\nembedded judge\n: " in "".join(glossary["source"])


def test_bibtex_values_render_as_pybtexs_plain_text_backend() -> None:
    """The backend found once renders every value of the book's bibliography as ``render_as("text")`` does."""
    import re

    from pybtex.database import parse_string
    from pybtex.richtext import Text

    from recjudge_utils.myst_html import _text, default_bib_path

    path = default_bib_path()
    if path is None or not path.is_file():
        pytest.skip("needs a checkout with book/references.bib")
    entries = parse_string(re.sub(r"(?m)^\s*%.*$", "", path.read_text(encoding="utf-8")), "bibtex").entries
    values = [v for e in entries.values() for v in e.fields.values()][:80]
    assert [_text(v) for v in values] == [" ".join(Text.from_latex(v).render_as("text").split()) for v in values]
