"""A table for people: rows under the caller's headers and caption, without index, one decimal unless told."""

from __future__ import annotations

import pandas as pd

from recjudge_utils.reporting.tables import rows_table


def test_rows_sit_under_the_callers_headers_and_caption() -> None:
    styler = rows_table("Shares on toy data", ["name", "share"], [["x", 0.25], ["y", 0.5]])
    assert styler.caption == "Shares on toy data"
    assert list(styler.data.columns) == ["name", "share"] and styler.data["share"].tolist() == [0.25, 0.5]
    assert styler.hide_index_[0]
    assert "0.2" in styler.to_html() and "0.25" not in styler.to_html()  # precision 1 unless told


def test_rows_may_be_any_iterable_and_none_at_all() -> None:
    styler = rows_table("3 users", ["users", "hits@10"], ((n, n - 1) for n in [3]), precision=0)
    assert list(styler.data.columns) == ["users", "hits@10"] and styler.data.iloc[0].tolist() == [3, 2]
    assert rows_table("empty", ["a"], []).data.equals(pd.DataFrame([], columns=["a"]))
