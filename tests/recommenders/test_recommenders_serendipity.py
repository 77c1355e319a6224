"""KFN (Said et al., CSCW 2013) and UAUM (Zheng, Chan & Ip, 2015) on explicit ratings."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import pearsonr

from recjudge_utils.recommenders import make_recommender
from recjudge_utils.recommenders.kfn import KFN
from recjudge_utils.recommenders.uaum import UAUM


def frame(rows) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["user", "item", "rating"])
    df["timestamp"] = np.arange(len(df))
    return df


def random_ratings(n_users=30, n_items=25, density=0.5, seed=0) -> pd.DataFrame:
    """Explicit 1-5 ratings from two taste groups, so there are agreeing and disagreeing users."""
    rng = np.random.default_rng(seed)
    taste = np.where(np.arange(n_users) < n_users // 2, 1.0, -1.0)[:, None] * np.linspace(-1.5, 1.5, n_items)
    rated = rng.random((n_users, n_items)) < density
    stars = np.clip(np.round(3 + taste + rng.normal(0, 0.8, (n_users, n_items))), 1, 5)
    u, i = np.nonzero(rated)
    return frame(list(zip(u, i, stars[u, i], strict=True)))


def rare_and_popular(n_users=40, seed=0) -> pd.DataFrame:
    """Items 0-7 are rated by most users; items 8-19 by two or three users each (the long tail)."""
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(n_users):
        for i in range(8):
            if rng.random() < 0.8:
                rows.append((u, i, float(rng.integers(3, 6))))
    for i in range(8, 20):
        for u in rng.choice(n_users, size=int(rng.integers(2, 4)), replace=False):
            rows.append((int(u), i, float(rng.integers(3, 6))))
    return frame(rows)


def test_both_models_ask_for_explicit_ratings():
    assert KFN.uses_explicit_ratings is True and UAUM.uses_explicit_ratings is True
    assert make_recommender("kfn").uses_explicit_ratings and make_recommender("uaum").uses_explicit_ratings


# -- KFN -------------------------------------------------------------------------------------------
def test_kfn_recommends_what_the_anti_neighbour_hated():
    # User 0 and user 1 disagree on a-d (Pearson -1); user 1 loves X and hates Y. Users 2-4 also love X,
    # making X the more popular item, but share no rated item with user 0, so they are not its neighbours.
    a, b, c, d, x, y = range(6)
    rows = [(0, a, 5), (0, b, 4), (0, c, 2), (0, d, 1)]
    rows += [(1, a, 1), (1, b, 2), (1, c, 4), (1, d, 5), (1, x, 5), (1, y, 1)]
    rows += [(u, x, 5) for u in (2, 3, 4)]
    model = make_recommender("kfn", k=5, min_overlap=3, seed=0).fit(frame(rows))
    users, weights = model.anti_neighbours(0)
    assert users.tolist() == [1] and weights == pytest.approx([1.0])
    assert model.recommend(np.array([0]), k=2)[0].tolist() == [y, x]
    scores = model.score(np.array([0]))[0]
    mean_0 = 3.0
    assert scores[y] > mean_0 > scores[x]  # the hated item above the user's mean, the loved one below it


def test_kfn_dissimilarity_is_minus_pearson_over_co_rated_items():
    train = random_ratings()
    model = make_recommender("kfn", k=1000, min_overlap=3, seed=0).fit(train)
    wide = train.pivot(index="user", columns="item", values="rating")
    for u in (0, 7, 20):
        users, weights = model.anti_neighbours(u)
        assert len(users) > 0
        for v, w in zip(users, weights, strict=True):
            both = wide.loc[[u, v]].dropna(axis=1)
            assert both.shape[1] >= 3
            assert w == pytest.approx(-pearsonr(both.loc[u], both.loc[v])[0], abs=1e-9)
        # every anti-correlated user with enough overlap is there (k is larger than the population)
        expected = set()
        for v in wide.index:
            both = wide.loc[[u, v]].dropna(axis=1)
            defined = v != u and both.shape[1] >= 3 and both.loc[u].std() > 0 and both.loc[v].std() > 0
            if defined and pearsonr(both.loc[u], both.loc[v])[0] < -1e-9:
                expected.add(v)
        assert set(users.tolist()) == expected


def test_kfn_users_tied_at_the_kth_place_share_it():
    # Users 1, 2 and 3 are identical anti-neighbours of user 0; with k = 2 they share two places.
    base = [(0, 5), (1, 4), (2, 2), (3, 1)]
    rows = [(0, i, r) for i, r in base]
    rows += [(v, i, 6 - r) for v in (1, 2, 3) for i, r in base]
    model = make_recommender("kfn", k=2, min_overlap=3, seed=0).fit(frame(rows))
    users, weights = model.anti_neighbours(0)
    assert sorted(users.tolist()) == [1, 2, 3]
    np.testing.assert_allclose(weights, [2 / 3] * 3)


def test_kfn_is_deterministic_under_seed():
    train = random_ratings(seed=1)
    users = np.arange(30)
    a = make_recommender("kfn", k=4, min_overlap=3, seed=5).fit(train)
    b = make_recommender("kfn", k=4, min_overlap=3, seed=5).fit(train)
    np.testing.assert_array_equal(a.score(users), b.score(users))
    np.testing.assert_array_equal(a.recommend(users, k=5), b.recommend(users, k=5))


def test_kfn_does_not_depend_on_user_id_order():
    # Users 201-204 tie as user 200's anti-neighbours (k = 2) but each hated a different extra item, so a
    # tie-break by user index would decide which extra items user 200 is offered; the random part adds
    # ordinary ties and non-ties.
    core = [(100, 5), (101, 4), (102, 2), (103, 1)]
    tie = [(200, i, r) for i, r in core]
    tie += [(v, i, 6 - r) for v in range(201, 205) for i, r in core] + [(v, v - 97, 1) for v in range(201, 205)]
    train = pd.concat([random_ratings(n_users=20, seed=2), frame(tie)], ignore_index=True)
    ids = np.sort(train["user"].unique())
    relabel = dict(zip(ids, np.random.default_rng(0).permutation(len(ids)) * 7 + 1000, strict=True))
    shuffled = train.assign(user=train["user"].map(relabel)).sample(frac=1.0, random_state=1)
    a = make_recommender("kfn", k=2, min_overlap=3, seed=0).fit(train)
    b = make_recommender("kfn", k=2, min_overlap=3, seed=0).fit(shuffled)
    assert len(a.anti_neighbours(200)[0]) == 4
    mapped = np.array([relabel[u] for u in ids])
    np.testing.assert_allclose(a.score(ids), b.score(mapped), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(a.recommend(ids, k=6), b.recommend(mapped, k=6))


def test_kfn_popularity_fallback_for_unseen_users_and_users_without_anti_neighbours():
    train = random_ratings(seed=3)
    # user 500 gives every item the same rating: no rating variance, so no correlation and no anti-neighbour
    train = pd.concat([train, frame([(500, 0, 4), (500, 1, 4), (500, 2, 4)])], ignore_index=True)
    model = make_recommender("kfn", k=5, min_overlap=3, seed=0).fit(train)
    counts = train.groupby("item").size()
    ranked = counts.sort_values(ascending=False, kind="stable")
    rec = model.recommend(np.array([12345]), k=3, exclude_seen=False)[0]
    assert counts[rec].tolist() == ranked.iloc[:3].tolist()  # the most rated items (ties: any order)
    assert len(model.anti_neighbours(500)[0]) == 0
    rec = model.recommend(np.array([500]), k=3)[0]
    unseen = counts.drop([0, 1, 2]).sort_values(ascending=False, kind="stable")
    assert counts[rec].tolist() == unseen.iloc[:3].tolist()


def test_kfn_averages_duplicate_ratings():
    model = make_recommender("kfn").fit(frame([(0, 0, 2), (0, 0, 4), (1, 0, 5)]))
    assert model.ratings[0, 0] == pytest.approx(3.0) and model.ratings[1, 0] == pytest.approx(5.0)


# -- UAUM ------------------------------------------------------------------------------------------
def test_uaum_weight_zero_is_plain_puresvd():
    train = random_ratings(n_users=18, n_items=12, seed=4)
    model = make_recommender("uaum", factors=3, lam=0.0, seed=0).fit(train)
    dense = train.pivot(index="user", columns="item", values="rating").fillna(0.0).to_numpy()
    u, s, vt = np.linalg.svd(dense, full_matrices=False)
    puresvd = (u[:, :3] * s[:3]) @ vt[:3]
    users = np.sort(train["user"].unique())
    np.testing.assert_allclose(model.score(users), puresvd, atol=1e-8)
    assert model.gamma == 0.0 and model.plain_svd() is model and model.degenerate_to_svd()


def test_uaum_unexpectedness_formula_and_implicit_operator():
    train = rare_and_popular()
    model = make_recommender("uaum", factors=4, lam=1.0, seed=0).fit(train)
    dense = train.pivot_table(index="user", columns="item", values="rating").reindex(
        index=model.user_ids, columns=model.item_ids
    )
    rated = dense.notna().to_numpy(dtype=float)
    n_users = rated.shape[0]
    n_i = rated.sum(axis=0)
    rare = np.log(n_users / n_i) / np.log(n_users)
    cos = (rated.T @ rated) / np.sqrt(np.outer(n_i, n_i))
    dis = 1.0 - (rated @ cos) / rated.sum(axis=1, keepdims=True)
    e = rare[None, :] * dis
    np.testing.assert_allclose(model.unexpectedness(np.arange(n_users)), e, atol=1e-12)
    m = np.random.default_rng(0).normal(size=(rated.shape[1], 3))
    np.testing.assert_allclose(model._e_matmat(m), e @ m, atol=1e-10)
    m = np.random.default_rng(1).normal(size=(n_users, 3))
    np.testing.assert_allclose(model._e_rmatmat(m), e.T @ m, atol=1e-10)
    # lam is scale-free: the unexpectedness term carries lam times the energy of the ratings
    r = dense.fillna(0.0).to_numpy()
    assert model.gamma * np.linalg.norm(e) == pytest.approx(1.0 * np.linalg.norm(r))
    assert (e[:, 8:].mean(axis=0) > e[:, :8].mean(axis=0).max()).all()  # the long tail is the unexpected part


def mean_unexpectedness(model: UAUM, users: np.ndarray, recs: np.ndarray) -> float:
    e = model.unexpectedness(model.user_rows(users))
    return float(np.take_along_axis(e, np.searchsorted(model.item_ids, recs), axis=1).mean())


def ranks(model: UAUM, users: np.ndarray) -> np.ndarray:
    """0-based position of every item in each user's score order."""
    return np.argsort(np.argsort(-model.score(users), axis=1, kind="stable"), axis=1)


def test_uaum_strong_weight_moves_unexpected_items_up():
    train = rare_and_popular()
    users = np.sort(train["user"].unique())
    plain = make_recommender("uaum", factors=4, lam=0.0, seed=0).fit(train)
    strong = make_recommender("uaum", factors=4, lam=1.5, seed=0).fit(train)
    recs_plain, recs_strong = plain.recommend(users, k=3), strong.recommend(users, k=3)
    tail = np.arange(8, 20)
    assert np.isin(recs_plain, tail).mean() < np.isin(recs_strong, tail).mean()
    assert mean_unexpectedness(strong, users, recs_strong) > mean_unexpectedness(strong, users, recs_plain)
    assert ranks(strong, users)[:, tail].mean() < ranks(plain, users)[:, tail].mean()


def test_uaum_degeneration_check():
    train = rare_and_popular()
    tiny = make_recommender("uaum", factors=4, lam=1e-4, seed=0).fit(train)
    large = make_recommender("uaum", factors=4, lam=1.5, seed=0).fit(train)
    assert tiny.svd_overlap(k=3) > 0.99 and tiny.degenerate_to_svd(k=3)
    assert large.svd_overlap(k=3) < 0.5 and not large.degenerate_to_svd(k=3)
    # the reference is the same data, factors and seed at lam = 0
    twin = make_recommender("uaum", factors=4, lam=0.0, seed=0).fit(train)
    users = np.sort(train["user"].unique())
    np.testing.assert_array_equal(large.plain_svd().score(users), twin.score(users))


def test_uaum_is_deterministic_under_seed():
    train = random_ratings(seed=5)
    users = np.arange(30)
    a = make_recommender("uaum", factors=5, lam=0.7, seed=9).fit(train).score(users)
    b = make_recommender("uaum", factors=5, lam=0.7, seed=9).fit(train).score(users)
    np.testing.assert_array_equal(a, b)


def test_uaum_items_without_training_ratings_are_not_pushed():
    train = rare_and_popular()
    items = pd.DataFrame({"item": np.arange(25)})  # 20-24 exist in the catalogue only
    model = make_recommender("uaum", factors=4, lam=1.5, seed=0).fit(train, items)
    users = np.sort(train["user"].unique())
    assert np.allclose(model.unexpectedness(model.user_rows(users))[:, 20:], 0.0)
    assert not np.isin(model.recommend(users, k=3), np.arange(20, 25)).any()


# -- tuning ----------------------------------------------------------------------------------------
def test_search_spaces_keep_the_unexpectedness_weight_positive():
    import optuna

    from recjudge_utils.recommenders import SEARCH_SPACES

    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    train = random_ratings(seed=6)
    for name in ("kfn", "uaum"):
        for _ in range(5):
            trial = study.ask()
            params = SEARCH_SPACES[name](trial)
            make_recommender(name, seed=0, **params).fit(train).recommend(np.arange(3), k=5)
            if name == "uaum":
                assert trial.distributions["lam"].low > 0 and params["lam"] > 0
