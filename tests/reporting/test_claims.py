"""The helpers that read a generated sentence for its claim (tests/claims.py): a claim read the same however it is
worded, and told apart from its opposite, so a test built on them cannot pass whatever the sentence says."""

from __future__ import annotations

import pytest
from claims import (
    about,
    affirms,
    counts_in,
    denies,
    interval_after,
    intervals_in,
    markdown_table,
    numbers_in,
    says_apart,
    says_higher,
    says_no_ranking,
    says_overlap,
)

APART = [
    "The intervals do not overlap: in this run co-occurrence scores higher than embedding.",
    "These two intervals are apart, and co-occurrence comes out above embedding here.",
    "Embedding scores lower than co-occurrence; the CIs don't overlap.",
]
OVERLAP = [
    "The intervals overlap: this run cannot rank the two.",
    "Because the two intervals overlap, this run cannot tell co-occurrence from embedding.",
    "Co-occurrence is not higher than embedding here: their intervals overlap.",
]


@pytest.mark.parametrize("sentence", APART)
def test_a_ranking_is_read_whatever_its_wording(sentence: str) -> None:
    assert says_apart(sentence) and not says_overlap(sentence) and not says_no_ranking(sentence)
    assert says_higher(sentence, "co-occurrence", "embedding")
    assert not says_higher(sentence, "embedding", "co-occurrence")


@pytest.mark.parametrize("sentence", OVERLAP)
def test_no_ranking_is_read_as_none(sentence: str) -> None:
    assert says_overlap(sentence) and not says_apart(sentence)
    assert not says_higher(sentence, "co-occurrence", "embedding")
    assert not says_higher(sentence, "embedding", "co-occurrence")


def test_names_match_whole_and_negation_inside_an_aside_does_not_count() -> None:
    said = "Arena (share of points) recovers its truth best, clearly above SAER (label 0-2) (the CIs do not overlap)."
    assert says_higher(said, "Arena (share of points)", "SAER (label 0-2)")
    within = "within 3 of the best, then lower"
    assert not says_higher(within, "it", "best")  # 'it' is not inside 'within'
    covers, not_shown = "covers less than 95 % at n = 10", "is not shown to cover less than 95 %"
    assert affirms(covers, "less than 95") and not denies(covers, "less than 95")
    assert denies(not_shown, "less than 95") and not affirms(not_shown, "less than 95")


def test_numbers_intervals_and_counts() -> None:
    text = "1,100 calls; GPT-4o-mini: MAE −0.010 [-0.030, 0.010] (3 of the 8 answers; 12 of 24); v3 at 2.1-2.4"
    assert numbers_in(text) == [1100, -0.01, -0.03, 0.01, 3, 8, 12, 24, 2.1, 2.4]
    assert intervals_in(text) == [(-0.01, -0.03, 0.01)] and interval_after(text, "MAE") == (-0.01, -0.03, 0.01)
    assert counts_in(text) == [(3, 8), (12, 24)]
    shares = "100.0 [75.8, 100.0] %, 0.0 % [0.0, 24.2]"
    assert intervals_in(shares) == [(100.0, 75.8, 100.0), (0.0, 0.0, 24.2)]


def test_about_picks_the_one_item_on_a_topic() -> None:
    items = ["Swap consistency 75 %", "The gap is 0.1", "Coverage below 95 %"]
    assert about(items, "gap") == "The gap is 0.1"
    with pytest.raises(AssertionError):
        about(items, "%")


def test_markdown_table_by_header_with_an_escaped_pipe() -> None:
    page = "# t\n\n| split | rows | note |\n| --- | --- | --- |\n| train | 668 | `a \\| b` |\n| test | 112 | - |\n\nend"
    table = markdown_table(page, "split")
    assert table["train"] == {"split": "train", "rows": "668", "note": "`a \\| b`"} and table["test"]["rows"] == "112"
