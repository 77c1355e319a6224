"""A chapter's table: rows under the headers of its text file, captioned by one of its templates."""

from __future__ import annotations

import pandas as pd

from recjudge_utils.reporting.tables import text_table
from recjudge_utils.reporting.text import ChapterText

TEXT = ChapterText(
    "toy",
    {
        "columns": {"plain": ["name", "share"], "templated": {"n": "users ({{ users }})", "k": "hits@{{ k }}"}},
        "captions": {"plain": "Shares on {{ data }}", "templated": "{{ users }} users"},
        "nested": {"columns": ["a"], "caption": "nested {{ x }}"},
    },
)


def test_rows_sit_under_the_chapters_headers_and_caption() -> None:
    styler = text_table(TEXT, "captions.plain", "columns.plain", [["x", 0.25], ["y", 0.5]], data="toy data")
    assert styler.caption == "Shares on toy data"
    assert list(styler.data.columns) == ["name", "share"] and styler.data["share"].tolist() == [0.25, 0.5]
    assert styler.hide_index_[0]
    assert "0.2" in styler.to_html() and "0.25" not in styler.to_html()  # precision 1 unless told


def test_headers_kept_as_templates_are_rendered_with_the_values() -> None:
    styler = text_table(TEXT, "captions.templated", "columns.templated", [[3, 2]], precision=0, users=3, k=10)
    assert list(styler.data.columns) == ["users (3)", "hits@10"] and styler.caption == "3 users"


def test_headers_may_be_given_and_keys_nested() -> None:
    styler = text_table(TEXT, "nested.caption", ["first", "second"], [(1, 2)], x="y")
    assert list(styler.data.columns) == ["first", "second"] and styler.caption == "nested y"
    assert text_table(TEXT, "nested.caption", "nested.columns", [], x=1).data.equals(pd.DataFrame([], columns=["a"]))
