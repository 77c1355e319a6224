"""The Serendipity-2018 proxy stand-in: the label rule on hand-made histories, pair construction and sampling."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from locations import FIXTURES

from recjudge_utils.data import Dataset, load_serendipity_pairs
from recjudge_utils.data.movielens import load_ml100k
from recjudge_utils.data.standins import (
    PAPER_G_COUNTS,
    PROXY_LABEL,
    UNEXPECTEDNESS_THRESHOLDS,
    genre_distance,
    jaccard,
    level_targets,
    proxy_candidates,
    proxy_g,
    relevance_level,
    sample_pairs,
    serendipity_proxy_from_movielens,
    unexpectedness_level,
)
from recjudge_utils.paths import data_dir

FIX = FIXTURES / "data"


def test_jaccard_and_genre_distance_by_hand() -> None:
    assert jaccard(["Drama"], ["Drama"]) == 1.0
    assert jaccard(["Drama", "War"], ["Drama"]) == 0.5
    assert jaccard(["Comedy"], ["Horror"]) == 0.0
    assert jaccard([], []) == 0.0
    history = [["Drama"], ["Drama", "War"], ["Horror"], ["Comedy", "Drama", "Romance"]]
    # similarities: 1, 1/2, 0, 1/3 -> mean 11/24 -> distance 13/24
    assert genre_distance(["Drama"], history) == pytest.approx(13 / 24)
    assert genre_distance(["Western"], history) == 1.0
    with pytest.raises(ValueError):
        genre_distance(["Drama"], [])


def test_levels_and_proxy_g_rule() -> None:
    assert relevance_level(np.array([0.5, 1, 2.5, 3.49, 4.5, 5])).tolist() == [1, 1, 3, 3, 5, 5]
    t1, t2, t3, t4 = UNEXPECTEDNESS_THRESHOLDS
    d = np.array([0.0, t1 - 0.01, t1, t2, t3, t4 - 0.001, t4, 1.0])
    assert unexpectedness_level(d).tolist() == [1, 1, 2, 3, 4, 4, 5, 5]
    # serendipitous only if both relevant and unexpected: g = min(R, U)
    assert proxy_g(5, 1.0) == 5  # loved it and nothing like the history
    assert proxy_g(5, 0.0) == 1  # loved it but exactly what the user always watches
    assert proxy_g(1, 1.0) == 1  # totally different but disliked
    assert proxy_g(4, t2) == 3
    assert proxy_g(np.array([3, 2]), np.array([1.0, 1.0])).tolist() == [3, 2]


def _handmade_dataset() -> Dataset:
    items = pd.DataFrame(
        {
            "item": [1, 2, 3, 4, 5, 6],
            "title": list("ABCDEF"),
            "genres": [["Drama"], ["Drama"], ["Drama", "Romance"], ["Western"], ["Drama"], ["Horror"]],
        }
    )
    # user 7: three dramas, then a western rated 5, then a drama rated 4, then two at the same second
    inter = pd.DataFrame(
        {
            "user": [7, 7, 7, 7, 7, 7, 8],
            "item": [1, 2, 3, 4, 5, 6, 1],
            "rating": [3.0, 4.0, 5.0, 5.0, 4.0, 2.0, 5.0],
            "timestamp": [10, 20, 30, 40, 50, 50, 5],
        }
    )
    return Dataset("hand", inter, items, None, "hand-made", False, "test")


def test_candidates_on_handmade_histories() -> None:
    cand = proxy_candidates(_handmade_dataset(), n_history=3).set_index("item")
    assert set(cand.index) == {4, 5, 6}  # the first three ratings lack a 3-item history; user 8 has one rating
    assert cand.loc[4, "history"] == [1, 2, 3]
    # western vs {Drama}, {Drama}, {Drama, Romance}: similarity 0 -> distance 1 -> U = 5, R = 5 -> g = 5
    assert cand.loc[4, "genre_distance"] == 1.0 and cand.loc[4, "g"] == 5
    # drama vs {Drama}, {Drama, Romance}, {Western}: 1, 1/2, 0 -> distance 1/2 -> U = 1 -> g = 1
    assert cand.loc[5, "history"] == [2, 3, 4]
    assert cand.loc[5, "genre_distance"] == pytest.approx(0.5) and cand.loc[5, "g"] == 1
    # item 6 shares its timestamp with item 5: the history stops strictly before, so item 5 is not in it
    assert cand.loc[6, "history"] == [2, 3, 4]
    assert cand.loc[6, "relevance"] == 2 and cand.loc[6, "unexpectedness"] == 5 and cand.loc[6, "g"] == 2


def test_level_targets_follow_paper_mix_with_minimum() -> None:
    t = level_targets(2150, 20)
    assert sum(t.values()) == 2150
    assert t == {1: 321, 2: 1015, 3: 586, 4: 208, 5: 20}  # 13 raised to the minimum, taken from level 2
    small = level_targets(100, 10)
    assert sum(small.values()) == 100 and min(small.values()) >= 10
    with pytest.raises(ValueError):
        level_targets(40, 10)


def test_sample_pairs_respects_targets_and_user_cap() -> None:
    rng = np.random.default_rng(1)
    n = 5000
    cand = pd.DataFrame(
        {
            "user": rng.integers(0, 400, n),
            "item": np.arange(n),
            "timestamp": np.arange(n),
            "g": rng.choice([1, 2, 3, 4, 5], n, p=[0.3, 0.3, 0.2, 0.15, 0.05]),
        }
    )
    out = sample_pairs(cand, 500, min_per_level=20, max_per_user=3, seed=0)
    assert len(out) == 500
    assert out["g"].value_counts().to_dict() == level_targets(500, 20)
    assert out.groupby("user").size().max() <= 3
    again = sample_pairs(cand, 500, min_per_level=20, max_per_user=3, seed=0)
    pd.testing.assert_frame_equal(out, again)
    other = sample_pairs(cand, 500, min_per_level=20, max_per_user=3, seed=1)
    assert not out["item"].equals(other["item"])


def test_sample_pairs_never_pads_a_short_level() -> None:
    cand = pd.DataFrame({"user": range(60), "item": range(60), "timestamp": range(60), "g": [1] * 50 + [5] * 10})
    out = sample_pairs(cand, 50, min_per_level=10, max_per_user=5, seed=0)
    counts = out["g"].value_counts()
    assert counts.get(5) == 10 and counts.get(2, 0) == 0 and len(out) < 50


def test_proxy_from_fixture_is_labelled_stand_in() -> None:
    ds = load_ml100k(FIX / "ml-100k", verbose=False)
    pairs = serendipity_proxy_from_movielens(ds, n_history=3, n_pairs=10, min_per_level=1, max_per_user=20)
    assert pairs.label == PROXY_LABEL and "not user-annotated" in pairs.label and not pairs.is_real
    assert {"user", "item", "g", "history"} <= set(pairs.pairs.columns)
    assert all(len(h) == 3 for h in pairs.pairs["history"])
    assert pairs.pairs["g"].between(1, 5).all()
    assert {"item", "title", "genres"} <= set(pairs.items.columns)
    # its users are MovieLens-100K's: chapters judging that dataset check their users against the examples' users
    assert pairs.extra["users_of"] == ds.name == "ml-100k"


def test_load_serendipity_pairs_falls_back_to_stand_in(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(FIX / "ml-100k-recbole", tmp_path / "ml-100k")
    pairs = load_serendipity_pairs(tmp_path, n_history=3, n_pairs=10, min_per_level=1, max_per_user=20)
    assert not pairs.is_real and pairs.label == PROXY_LABEL
    assert "proxy stand-in" in capsys.readouterr().out


REAL = data_dir() / "ml-100k"


@pytest.mark.skipif(not (REAL / "ml-100k.inter").is_file(), reason="real ML-100K not extracted (run the data command)")
def test_real_proxy_distribution_is_not_degenerate() -> None:
    pairs = load_serendipity_pairs(verbose=False) if not (data_dir() / "serendipity-2018").is_dir() else None
    if pairs is None:
        pytest.skip("real Serendipity-2018 present; the stand-in is not used")
    dist = pairs.g_distribution()
    assert len(pairs.pairs) == sum(PAPER_G_COUNTS.values())
    assert (dist >= 20).all()
    assert dist.to_dict() == level_targets(2150, 20)
    assert pairs.pairs.groupby("user").size().max() <= 5
    assert all(len(h) == 10 for h in pairs.pairs["history"])
