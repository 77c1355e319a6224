"""A chapter's page from another run in the same book (chapter 2 on the books example): its labels must not clash
with the book's own copy of the chapter, and the page says whose outputs it shows."""

from __future__ import annotations

import json

from recjudge_utils.book.build import relabelled, with_other_run_note


def _notebook() -> str:
    cells = [
        {"cell_type": "markdown", "id": "a", "metadata": {}, "source": ["# 2. A chapter\n", "Prose.\n"]},
        {"cell_type": "markdown", "id": "b", "metadata": {},
         "source": ["(ch2-data)=\n", "```{exercise}\n", ":label: ch2-ex-1\n", "```\n",
                    "See {ref}`ch2-data`, ch2-ex-10."]},
        {"cell_type": "code", "id": "c", "metadata": {"mystnb": {"figure": {"name": "ch2-fig-accuracy"}}},
         "source": ["x = 'ch2-fig-accuracy-not-a-label'"], "outputs": [], "execution_count": None},
        {"cell_type": "markdown", "id": "d", "metadata": {}, "source": ["```{solution} ch2-ex-1\n", "```"]},
    ]  # fmt: skip
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_every_label_the_page_defines_and_its_references_are_prefixed() -> None:
    nb = json.loads(relabelled(_notebook(), "books-"))
    text = json.dumps(nb)
    assert nb["cells"][2]["metadata"]["mystnb"]["figure"]["name"] == "books-ch2-fig-accuracy"
    assert "(books-ch2-data)=" in text and ":label: books-ch2-ex-1" in text and "{solution} books-ch2-ex-1" in text
    assert "{ref}`books-ch2-data`" in text
    # only whole labels: a longer name that merely starts like one is left alone
    assert "ch2-ex-10" in text and "books-ch2-ex-10" not in text
    assert "'ch2-fig-accuracy-not-a-label'" in text


def test_the_note_sits_under_the_title_and_names_the_run() -> None:
    nb = json.loads(with_other_run_note(_notebook(), "books", "02_rs_reevaluation"))
    first = "".join(nb["cells"][0]["source"])
    title, rest = first.split("\n", 1)
    assert title == "# 2. A chapter"
    assert rest.index("run `books`") < rest.index("Prose.")
    assert "(02_rs_reevaluation.ipynb)" in rest  # links to the book's own copy of the chapter
