"""Benchmark: the book's bibliography as plain text, pybtex's backend looked up per value (``render_as("text")``) vs
found once (:func:`recjudge_utils.myst_html._text`).

Every kernel that displays MyST builds the bibliography once (its HTML cites in author-year text). pybtex's
``render_as`` finds the backend among every installed distribution's entry points on each call; the book's
``references.bib`` has about 650 values to render. This renders the same values both ways (checked equal first).
Run: ``.venv/bin/python benchmarks/bench_bibliography.py``.
"""

from __future__ import annotations

import re
import time

from pybtex.database import parse_string
from pybtex.richtext import Text

from recjudge_utils.myst_html import _text, default_bib_path


def main() -> None:
    path = default_bib_path()
    assert path is not None and path.is_file(), "run from a checkout: book/references.bib is read"
    entries = parse_string(re.sub(r"(?m)^\s*%.*$", "", path.read_text(encoding="utf-8")), "bibtex").entries
    values = [v for e in entries.values() for v in e.fields.values()]
    values += [
        " ".join(p.first_names + p.middle_names + p.last_names)
        for e in entries.values()
        for p in e.persons.get("author", [])
    ]
    started = time.perf_counter()
    per_call = [" ".join(Text.from_latex(v).render_as("text").split()) for v in values]
    looked_up = time.perf_counter() - started
    started = time.perf_counter()
    once = [_text(v) for v in values]
    found_once = time.perf_counter() - started
    assert per_call == once, "the two renderings differ"
    print(f"{len(values)} BibTeX values from {path}, rendered identically")
    print(f"render_as('text') per value: {looked_up:.2f} s")
    print(f"backend found once:          {found_once:.3f} s")
    print(f"ratio: {looked_up / found_once:.0f}x")


if __name__ == "__main__":
    main()
