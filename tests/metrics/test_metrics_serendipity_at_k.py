"""Serendipity at k: every list is scored on its own judged items (Pop and Random like the paper's RSs), and the
ideal ranking of NDCG_ser@k is k serendipitous items."""

import numpy as np
import pandas as pd
import pytest

from recjudge_utils.metrics.serendipity_at_k import per_user_metrics


def lists(by_rs: dict[str, list[int]], user: int = 1) -> pd.DataFrame:
    """One user's ranked lists, one per RS."""
    rows = [
        {"rs": rs, "user": user, "rank": r + 1, "item": i} for rs, items in by_rs.items() for r, i in enumerate(items)
    ]
    return pd.DataFrame(rows)


def judged(scores: dict[int, float], user: int = 1) -> pd.DataFrame:
    """The judge's scores of one user's items."""
    return pd.DataFrame({"user": user, "item": list(scores), "score": list(scores.values())})


TEST = pd.DataFrame({"user": [1], "item": [99]})


def test_a_random_list_whose_items_all_score_5_has_p_ser_1():
    recs = lists({"bprmf": [1, 2, 3, 4], "random": [5, 6, 7, 8]})
    scores = judged({1: 2, 2: 1, 3: 3, 4: 2, 5: 5, 6: 5, 7: 5, 8: 5})
    m = per_user_metrics(recs, TEST, scores, k=4).set_index("rs")
    assert m.loc["random", "p_ser"] == 1.0 and m.loc["random", "n_ser"] == pytest.approx(1.0)
    assert m.loc["random", "avg"] == 5.0
    assert m.loc["bprmf", "p_ser"] == 0.0 and m.loc["bprmf", "n_ser"] == 0.0


def test_a_list_is_scored_the_same_whichever_other_lists_were_run():
    scores = judged({1: 5, 2: 1, 5: 4, 6: 2})
    alone = per_user_metrics(lists({"random": [5, 6]}), TEST, scores, k=2).set_index("rs")
    beside = per_user_metrics(lists({"bprmf": [1, 2], "random": [5, 6]}), TEST, scores, k=2).set_index("rs")
    cols = ["p_ser", "n_ser", "avg"]
    pd.testing.assert_series_equal(alone.loc["random", cols], beside.loc["random", cols])


def test_ndcg_ser_ideal_is_k_serendipitous_items_and_unparsed_slots_are_not_serendipitous():
    recs = lists({"a": [1, 2, 3]})
    m = per_user_metrics(recs, TEST, judged({1: 1, 2: np.nan, 3: 4}), k=3).iloc[0]
    disc = 1 / np.log2(np.arange(2, 5))
    assert m["p_ser"] == pytest.approx(1 / 3)
    assert m["n_ser"] == pytest.approx(disc[2] / disc.sum())  # one hit at rank 3 over the ideal of 3 hits
    assert m["avg"] == 2.5 and m["n_unparsed"] == 1


def test_unjudged_users_have_no_serendipity_values():
    recs = pd.concat([lists({"a": [1, 2]}, user=1), lists({"a": [1, 2]}, user=2)])
    m = per_user_metrics(recs, pd.DataFrame({"user": [1, 2], "item": [1, 2]}), judged({1: 5, 2: 5}), k=2)
    m = m.set_index("user")
    assert m.loc[1, "judged"] and m.loc[1, "p_ser"] == 1.0
    assert not m.loc[2, "judged"] and np.isnan(m.loc[2, "p_ser"]) and m.loc[2, "p_acc"] == 0.5
