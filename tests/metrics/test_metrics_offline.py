"""AUC against scikit-learn, nDCG by hand and against scikit-learn, URD by hand, Pearson via scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import ndcg_score, roc_auc_score

from recjudge_utils.metrics.offline import (
    auc_per_user,
    evaluate_recommender,
    genre_jaccard,
    ndcg_per_user,
    pearson,
    preference_gain,
    urd,
)


def test_auc_matches_sklearn_with_ties_and_exclusions():
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 5, size=(6, 30)).astype(float)  # many ties
    pos = rng.random((6, 30)) < 0.2
    pos[:, 0] = True
    excl = (rng.random((6, 30)) < 0.3) & ~pos
    got = auc_per_user(scores, pos, excl)
    for u in range(6):
        keep = ~excl[u]
        assert got[u] == pytest.approx(roc_auc_score(pos[u, keep], scores[u, keep]))


def test_auc_is_nan_without_positives_or_negatives():
    out = auc_per_user(np.ones((2, 3)), np.array([[False] * 3, [True] * 3]))
    assert np.isnan(out).all()


def test_ndcg_by_hand_and_sklearn():
    recs = np.array([[10, 11, 12, 13, 14], [20, 21, 22, 23, 24]])
    relevant = [{11, 14, 99}, {20}]
    got = ndcg_per_user(recs, relevant, k=5)
    dcg = 1 / np.log2(3) + 1 / np.log2(6)
    idcg = 1 + 1 / np.log2(3) + 1 / np.log2(4)
    assert got[0] == pytest.approx(dcg / idcg)
    assert got[1] == pytest.approx(1.0)
    # sklearn on the scored top-5 agrees when every relevant item is inside the list
    y_true = np.array([[0, 1, 0, 0, 1]])
    y_score = np.array([[5, 4, 3, 2, 1]])
    assert ndcg_per_user(recs[:1], [{11, 14}], k=5)[0] == pytest.approx(ndcg_score(y_true, y_score, k=5))


def test_urd_hand_computed_with_genre_jaccard():
    items = pd.DataFrame({"item": [1, 2, 3], "genres": [["Action", "Drama"], ["Drama"], ["Comedy"]]})
    sim = genre_jaccard(items)
    assert sim(1, 2) == 0.5 and sim(1, 3) == 0.0 and sim(2, 2) == 1.0
    # pairs: (1,2)=0.5, (1,3)=0, (2,3)=0 -> mean 1/6 -> URD 5/6
    assert urd([1, 2, 3], sim) == pytest.approx(1 - 1 / 6)
    assert urd([2, 2], sim) == 0.0 and np.isnan(urd([1], sim))


def test_pearson_uses_scipy_and_four_points_give_p_equal_one_minus_r():
    x = [0.75, 0.68, 0.677, 0.61]
    y = [1.95, 1.91, 1.79, 1.72]
    r, p = pearson(x, y)
    assert r == pytest.approx(np.corrcoef(x, y)[0, 1])
    assert p == pytest.approx(1 - abs(r), abs=1e-9)
    assert np.isnan(pearson([1, 2], [3, 4])[0])


def test_evaluate_recommender_on_a_fixed_scorer():
    from recjudge_utils.recommenders.base import Recommender

    class Fixed(Recommender):
        name = "fixed"

        def _fit(self, train, items):
            pass

        def _score_known(self, rows):
            return np.tile(-np.arange(len(self.item_ids), dtype=float), (len(rows), 1))  # item order = rank

    train = pd.DataFrame({"user": [1, 1, 2], "item": [0, 1, 0], "rating": 1.0, "timestamp": [1, 2, 3]})
    test = pd.DataFrame({"user": [1, 2], "item": [2, 5], "rating": 1.0, "timestamp": [9, 9]})
    items = pd.DataFrame({"item": range(6), "genres": [["A"], ["A"], ["A"], ["B"], ["B"], ["C"]]})
    model = Fixed().fit(train, items)
    out = evaluate_recommender(model, train, test, items, k=2).set_index("user")
    # user 1: candidates 2,3,4,5 (0,1 seen); positive 2 ranks first -> AUC 1, top-2 = [2, 3] -> nDCG 1
    assert out.loc[1, "auc"] == 1.0 and out.loc[1, "ndcg@2"] == 1.0
    # user 2: candidates 1..5, positive 5 ranks last -> AUC 0; top-2 = [1, 2] both genre A -> URD 0
    assert out.loc[2, "auc"] == 0.0 and out.loc[2, "ndcg@2"] == 0.0 and out.loc[2, "urd"] == 0.0
    assert out.loc[1, "urd"] == 1.0  # [2 (A), 3 (B)]


def test_graded_ndcg_uses_the_papers_gain_and_matches_sklearn():
    """Arena Sec. 3.2: DCG gain 2^p(i) - 1 with p(i) the user's preference score (here the held-out rating)."""
    rng = np.random.default_rng(3)
    n_items, k = 12, 5
    for _ in range(20):
        held, stars = rng.choice(n_items, 4, replace=False), rng.integers(1, 6, 4)
        ratings = {int(i): float(r) for i, r in zip(held, stars, strict=True)}
        scores = rng.permutation(n_items).astype(float)  # no ties: sklearn averages tied scores
        recs = np.argsort(-scores)[None, :k]
        y_true = np.array([[2.0 ** ratings.get(i, 0) - 1 for i in range(n_items)]])
        assert ndcg_per_user(recs, [ratings], k=k)[0] == pytest.approx(ndcg_score(y_true, scores[None, :], k=k))


def test_graded_ndcg_by_hand_and_where_it_differs_from_binary():
    recs = np.array([[10, 11, 12], [11, 10, 12]])
    prefs = {10: 1.0, 11: 5.0}  # a 1-star and a 5-star held-out item
    got = ndcg_per_user(recs, [prefs, prefs], k=3)
    ideal = 31 + 1 / np.log2(3)
    assert got[0] == pytest.approx((1 + 31 / np.log2(3)) / ideal)
    assert got[1] == pytest.approx(1.0)
    # binary gain cannot tell the two lists apart; the paper's gain ranks the 5-star item first
    binary = ndcg_per_user(recs, [{10, 11}, {10, 11}], k=3)
    assert binary[0] == pytest.approx(binary[1]) and got[0] < got[1]
    assert preference_gain([0, 1, 5]).tolist() == [0.0, 1.0, 31.0]


def test_evaluate_recommender_grades_ndcg_by_the_held_out_rating():
    from recjudge_utils.recommenders.base import Recommender

    class Fixed(Recommender):
        name = "fixed"

        def _fit(self, train, items):
            pass

        def _score_known(self, rows):
            return np.tile(-np.arange(len(self.item_ids), dtype=float), (len(rows), 1))  # item order = rank

    train = pd.DataFrame({"user": [1, 1], "item": [0, 1], "rating": 4.0, "timestamp": [1, 2]})
    # user 1's top-2 is [2, 3]: the 2-star item first, the 5-star one second
    test = pd.DataFrame({"user": [1, 1], "item": [2, 3], "rating": [2.0, 5.0], "timestamp": [9, 9]})
    items = pd.DataFrame({"item": range(5), "genres": [["A"]] * 5})
    out = evaluate_recommender(Fixed().fit(train, items), train, test, items, k=2).set_index("user")
    assert out.loc[1, "ndcg@2"] == pytest.approx((3 + 31 / np.log2(3)) / (31 + 3 / np.log2(3)))
    assert out.loc[1, "auc"] == 1.0  # AUC stays binary: both held-out items outrank every other one
    unrated = evaluate_recommender(Fixed().fit(train, items), train, test.drop(columns="rating"), items, k=2)
    assert unrated["ndcg@2"].iloc[0] == pytest.approx(1.0)  # clicks without ratings: binary gain
