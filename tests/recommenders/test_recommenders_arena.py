"""FM, DeepFM, LightGCN and the MiniLM content model learn an obvious preference and are deterministic."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recjudge_utils.recommenders.content import ContentMiniLM
from recjudge_utils.recommenders.deepfm import DeepFM
from recjudge_utils.recommenders.fm import FM, item_feature_table, user_feature_table
from recjudge_utils.recommenders.lightgcn import LightGCN, normalized_adjacency


def toy_data(seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, dict[int, set[int]]]:
    """Two taste groups: users 0-19 watch action items 0-19, users 20-39 watch romance items 20-39.

    Each user watched 12 of their group's 20 items; the other 8 are held out. A model that learned
    the groups ranks held-out same-group items above other-group items.
    """
    rng = np.random.default_rng(seed)
    rows, held = [], {}
    for u in range(40):
        group = np.arange(20) if u < 20 else np.arange(20, 40)
        seen = rng.choice(group, size=12, replace=False)
        held[u] = set(group) - set(seen)
        rows += [(u, int(i), 5.0, 1000 + t) for t, i in enumerate(seen)]
    train = pd.DataFrame(rows, columns=["user", "item", "rating", "timestamp"])
    items = pd.DataFrame(
        {
            "item": np.arange(40),
            "title": [f"{'Explosion' if i < 20 else 'Love'} story {i}" for i in range(40)],
            "genres": [["Action"] if i < 20 else ["Romance"] for i in range(40)],
        }
    )
    users = pd.DataFrame(
        {"user": np.arange(40), "age": [25] * 40, "gender": ["M", "F"] * 20, "occupation": ["writer"] * 40}
    )
    return train, items, users, held


def group_auc(model, held: dict[int, set[int]]) -> float:
    """Mean over users of P(held-out same-group item scores above an other-group item)."""
    users = np.array(sorted(held))
    scores = model.score(users)
    cols = model.item_columns(np.arange(40))
    aucs = []
    for r, u in enumerate(users):
        other = set(range(20, 40)) if u < 20 else set(range(20))
        pos = scores[r, cols[sorted(held[u])]]
        neg = scores[r, cols[sorted(other)]]
        aucs.append(float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()))
    return float(np.mean(aucs))


def bag_of_words_encoder(texts: list[str]) -> np.ndarray:
    vocab = ["explosion", "love", "action", "romance", "story"]
    return np.array([[t.lower().count(w) for w in vocab] for t in texts], dtype=np.float32) + 1e-3


MODELS = {
    "FM": lambda users, seed: FM(users=users, epochs=15, dim=8, batch_size=64, seed=seed),
    "FM-bce": lambda users, seed: FM(users=users, epochs=15, dim=8, batch_size=64, loss="bce", seed=seed),
    "FM-ids-only": lambda users, seed: FM(
        users=None, epochs=15, dim=8, batch_size=64, use_side_features=False, seed=seed
    ),
    "DeepFM": lambda users, seed: DeepFM(users=users, epochs=15, dim=8, hidden=(16, 8), batch_size=64, seed=seed),
    "LightGCN": lambda users, seed: LightGCN(dim=16, n_layers=2, epochs=30, batch_size=64, lr=1e-2, seed=seed),
    "MiniLM-content": lambda users, seed: ContentMiniLM(encoder=bag_of_words_encoder, cache=False, seed=seed),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_learns_the_obvious_preference_and_is_deterministic(name):
    train, items, users, held = toy_data()
    a = MODELS[name](users, 0).fit(train, items)
    assert group_auc(a, held) > 0.9, name
    b = MODELS[name](users, 0).fit(train, items)
    np.testing.assert_allclose(a.score(np.arange(40)), b.score(np.arange(40)), rtol=1e-6, atol=1e-7)
    recs = a.recommend(np.array([0, 25]), k=5)
    assert set(recs[0]) <= set(range(20)) or name == "FM-ids-only"  # top-5 of user 0 from the action group
    assert not set(recs[0]) & set(train.loc[train["user"] == 0, "item"])  # seen items excluded


def test_different_seeds_give_different_fm_models():
    train, items, users, _ = toy_data()
    a = FM(users=users, epochs=2, dim=8, seed=0).fit(train, items).score(np.arange(5))
    b = FM(users=users, epochs=2, dim=8, seed=1).fit(train, items).score(np.arange(5))
    assert not np.allclose(a, b)


def test_fm_decomposed_matrix_scores_equal_pair_scores():
    import torch

    train, items, users, _ = toy_data()
    for model in (FM(users=users, epochs=1, dim=4), DeepFM(users=users, epochs=1, dim=4, hidden=(8,))):
        model.fit(train, items)
        full = model.score(np.arange(3))
        u = torch.tensor([0, 1, 2]).repeat_interleave(40)
        i = torch.arange(40).repeat(3)
        with torch.no_grad():
            pairs = model.pair_scores(u, i).numpy().reshape(3, 40)
        np.testing.assert_allclose(full, pairs, rtol=1e-5, atol=1e-5)


def test_feature_tables():
    users = pd.DataFrame({"user": [1, 2], "age": [17, 30], "gender": ["M", "F"], "occupation": ["x", "y"]})
    ut = user_feature_table(np.array([1, 2, 3]), users)
    assert ut.fields == ["user_id", "age", "gender", "occupation"]
    assert ut.ids.shape == (3, 4)
    assert ut.ids[0, 1] != ut.ids[1, 1] and ut.ids[0, 2] != ut.ids[1, 2]  # age buckets 17 vs 30, M vs F
    assert len(set(ut.ids[:, 0]) & set(ut.ids[:, 1:].ravel())) == 0  # fields use disjoint id ranges
    items = pd.DataFrame({"item": [1, 2], "genres": [["A", "B"], ["B"]]})
    it = item_feature_table(np.array([1, 2]), items, offset=ut.n_features)
    assert it.ids.shape == (2, 3) and it.ids.min() == 0 and it.ids[:, 0].min() > ut.n_features
    np.testing.assert_allclose(it.vals[0], [1.0, 0.5, 0.5])
    np.testing.assert_allclose(it.vals[1], [1.0, 1.0, 0.0])


def test_lightgcn_adjacency_is_symmetric_normalised():
    import scipy.sparse as sp

    m = sp.csr_matrix(np.array([[1, 1, 0], [0, 1, 1]], dtype=np.float32))
    a = normalized_adjacency(m).to_dense().numpy()
    assert a.shape == (5, 5) and np.allclose(a, a.T)
    # user 0 (degree 2) - item 1 (degree 2): 1 / sqrt(2 * 2)
    assert a[0, 2 + 1] == pytest.approx(0.5)
    assert a[0, 1] == 0 and a[2, 3] == 0  # no user-user or item-item edges
