import numpy as np
import pytest
from sklearn.metrics import ndcg_score

from recjudge_utils.metrics.ranking import graded_ndcg_at_k, hit_matrix, ndcg_at_k, precision_at_k, recall_at_k


def test_hit_matrix_basic():
    recs = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    hits = hit_matrix(recs, [{2, 3, 100}, set(), {9, 7}])
    assert hits.tolist() == [[False, True, True], [False, False, False], [True, False, True]]


def test_hit_matrix_padding_and_large_ids():
    recs = np.array([[10**9, -1], [5, 10**9]])
    hits = hit_matrix(recs, [[10**9], [5]])
    assert hits.tolist() == [[True, False], [True, False]]
    with pytest.raises(ValueError):
        hit_matrix(recs, [{1}])


def test_precision_recall_hand_computed():
    hits = np.array([[True, False, True, False], [False, False, False, False]])
    np.testing.assert_allclose(precision_at_k(hits, 4), [0.5, 0.0])
    np.testing.assert_allclose(precision_at_k(hits, 2), [0.5, 0.0])
    rec = recall_at_k(hits, [4, 0], 4)
    assert rec[0] == pytest.approx(0.5) and np.isnan(rec[1])


def test_ndcg_hand_computed():
    hits = np.array([[True, False, True]])
    dcg = 1 / np.log2(2) + 1 / np.log2(4)
    # three relevant items in total, ideal = 3 at the top (k = 3)
    idcg = 1 / np.log2(2) + 1 / np.log2(3) + 1 / np.log2(4)
    assert ndcg_at_k(hits, [3], 3)[0] == pytest.approx(dcg / idcg)
    # two relevant: ideal over two
    assert ndcg_at_k(hits, [2], 3)[0] == pytest.approx(dcg / (1 + 1 / np.log2(3)))
    assert ndcg_at_k(np.zeros((1, 3), bool), [0], 3)[0] == 0.0


def test_ndcg_matches_sklearn():
    rng = np.random.default_rng(0)
    n_users, n_items, k = 50, 40, 10
    for _ in range(3):
        relevance = (rng.random((n_users, n_items)) < 0.15).astype(float)
        relevance[0] = 0  # a user with nothing relevant
        scores = rng.random((n_users, n_items))
        recs = np.argsort(-scores, axis=1)[:, :k]
        relevant = [set(np.flatnonzero(r)) for r in relevance]
        hits = hit_matrix(recs, relevant)
        ours = ndcg_at_k(hits, relevance.sum(1), k)
        theirs = np.array([ndcg_score(relevance[u : u + 1], scores[u : u + 1], k=k) for u in range(n_users)])
        np.testing.assert_allclose(ours, theirs, atol=1e-12)


def test_hit_matrix_sorted_key_path_equals_dense_path(monkeypatch):
    import recjudge_utils.metrics.ranking as rm

    rng = np.random.default_rng(1)
    recs = rng.integers(0, 500, size=(30, 10))
    relevant = [set(rng.integers(0, 500, size=40).tolist()) for _ in range(30)]
    dense = rm.hit_matrix(recs, relevant)
    monkeypatch.setattr(rm, "_DENSE_LIMIT", 0)
    np.testing.assert_array_equal(rm.hit_matrix(recs, relevant), dense)
    expected = np.array([[i in rel for i in row] for row, rel in zip(recs.tolist(), relevant, strict=True)])
    np.testing.assert_array_equal(dense, expected)


def test_graded_ndcg_with_unit_gains_is_the_binary_ndcg_and_matches_sklearn():
    rng = np.random.default_rng(1)
    hits = rng.random((30, 6)) < 0.3
    n_rel = hits.sum(axis=1) + rng.integers(0, 3, 30)  # some relevant items outside the list
    unit = graded_ndcg_at_k(hits.astype(float), [np.ones(n) for n in n_rel], k=6)
    np.testing.assert_allclose(unit, ndcg_at_k(hits, n_rel, 6))
    gains = np.array([[0.0, 7.0, 1.0, 0.0]])  # graded gains of a 4-item list; 15 is a relevant item not listed
    got = graded_ndcg_at_k(gains, [[7.0, 1.0, 15.0]], k=4)
    y_true = np.array([[0.0, 7.0, 1.0, 0.0, 15.0]])
    y_score = np.array([[5.0, 4.0, 3.0, 2.0, 1.0]])  # the unlisted item ranks last, outside the top 4
    assert got[0] == pytest.approx(ndcg_score(y_true, y_score, k=4))
    assert graded_ndcg_at_k(np.zeros((1, 3)), [[]], k=3)[0] == 0.0
