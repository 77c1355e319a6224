"""Every chapter teaches: learning goals at the top, takeaways computed from the run at the end, a citation, and
(chapters 1-5 and 7) exercises with hidden solutions; the callout cells show their output, not their code."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parents[1] / "notebooks").glob("0[0-7]_*.ipynb"))
WITH_EXERCISES = ("01", "02", "03", "04", "05", "07")
CALLOUT = re.compile(r"\b(learning_goals|takeaways|exercise)\(")


def cells(notebook: Path) -> list[dict]:
    return json.loads(notebook.read_text(encoding="utf-8"))["cells"]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_chapter_opens_with_goals_and_closes_with_takeaways(notebook: Path) -> None:
    code = ["".join(c["source"]) for c in cells(notebook) if c["cell_type"] == "code"]
    goals = [i for i, src in enumerate(code) if "learning_goals(" in src]
    takeaways = [i for i, src in enumerate(code) if "takeaways(" in src]
    assert goals and takeaways, "learning goals and takeaways"
    assert goals[0] < len(code) / 3 < takeaways[-1], "goals near the top, takeaways near the end"
    text = "".join("".join(c["source"]) for c in cells(notebook))
    assert "{cite:" in text, "at least one citation"
    if notebook.name.startswith(WITH_EXERCISES):
        assert sum(src.count("exercise(") for src in code) >= 2, "two or more exercises"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_callout_cells_hide_their_code(notebook: Path) -> None:
    shown = [
        "".join(c["source"])[:60]
        for c in cells(notebook)
        if c["cell_type"] == "code"
        and CALLOUT.search("".join(c["source"]))
        and "remove-input" not in c.get("metadata", {}).get("tags", [])
    ]
    assert not shown, f"an exercise's solution would show in the code: {shown}"
