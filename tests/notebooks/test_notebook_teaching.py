"""Every chapter teaches, in the book and in JupyterLab alike: learning goals in a Markdown admonition at the top,
takeaways computed from the run at the end, a References section, and (chapters 1-5 and 7) exercises whose solutions
stay closed until the reader opens them; a cell that only builds a callout shows its output, not its code."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from locations import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("0[0-7]_*.ipynb"))
WITH_EXERCISES = ("01", "02", "03", "04", "05", "07")
CALLOUT = re.compile(r"\b(learning_goals|takeaways|exercise)\(")
GOALS = re.compile(r"^(`{3,}|:{3,})\{admonition\} What you will learn\n:class: learning-goals\n", re.M)
#: an exercise or solution directive: its fence, name, argument and options up to the first blank line
DIRECTIVE = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{(?P<name>exercise|solution)\}(?P<arg>[^\n]*)\n(?P<opts>(?::[^\n]*\n)*)", re.M
)


def cells(notebook: Path) -> list[dict]:
    return json.loads(notebook.read_text(encoding="utf-8"))["cells"]


def source(cell: dict) -> str:
    return "".join(cell["source"])


def hidden_in_book_and_lab(cell: dict) -> bool:
    meta = cell.get("metadata", {})
    return "remove-input" in meta.get("tags", []) and meta.get("jupyter", {}).get("source_hidden") is True


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_chapter_opens_with_goals_and_closes_with_takeaways_and_references(notebook: Path) -> None:
    all_cells = cells(notebook)
    goals = [i for i, c in enumerate(all_cells) if c["cell_type"] == "markdown" and GOALS.search(source(c))]
    takeaways = [i for i, c in enumerate(all_cells) if c["cell_type"] == "code" and "takeaways(" in source(c)]
    assert goals and takeaways, "learning goals (a Markdown admonition) and takeaways (computed from the run)"
    assert goals[0] < len(all_cells) / 3 < takeaways[-1], "goals near the top, takeaways near the end"
    references = [c for c in all_cells if c.get("id") == "references"]
    assert len(references) == 1 and source(references[0]).startswith("## References\n"), "one References section"
    assert "\n- " in source(references[0]), "the References section lists at least one work"


@pytest.mark.parametrize("notebook", [n for n in NOTEBOOKS if n.name.startswith(WITH_EXERCISES)], ids=lambda p: p.stem)
def test_exercises_are_directives_whose_solutions_open_on_a_click(notebook: Path) -> None:
    text = "\n".join(source(c) for c in cells(notebook) if c["cell_type"] == "markdown")
    found = list(DIRECTIVE.finditer(text))
    labels = {
        m["opts"].split(":label:")[1].split()[0] for m in found if m["name"] == "exercise" and ":label:" in m["opts"]
    }
    solutions = [m for m in found if m["name"] == "solution"]
    assert len(labels) >= 2, "two or more labelled exercises"
    assert {m["arg"].strip() for m in solutions} == labels, "one solution per exercise, naming its label"
    closed = [m["arg"].strip() for m in solutions if ":class: dropdown" not in m["opts"]]
    assert not closed, f"solutions shown without a click: {closed}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_callout_cells_hide_their_code_in_the_book_and_in_lab(notebook: Path) -> None:
    shown = [
        source(c)[:60]
        for c in cells(notebook)
        if c["cell_type"] == "code" and CALLOUT.search(source(c)) and not hidden_in_book_and_lab(c)
    ]
    assert not shown, f"a callout's (or an exercise's solution's) code would show: {shown}"


def test_the_checks_catch_an_open_solution_and_a_visible_callout() -> None:
    text = "```{exercise} Try\n:label: ex-1\n\nDo it.\n```\n\n```{solution} ex-1\n\nThe answer.\n```\n"
    (exercise, solution) = DIRECTIVE.finditer(text)
    assert exercise["name"] == "exercise" and solution["arg"].strip() == "ex-1"
    assert ":class: dropdown" not in solution["opts"]  # this solution would be shown: the test above names it
    visible = {"cell_type": "code", "metadata": {"tags": ["remove-input"]}, "source": ["takeaways(items)"]}
    assert not hidden_in_book_and_lab(visible)  # removed in the book, but its code open in Lab
