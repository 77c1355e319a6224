import numpy as np
import pandas as pd
import pytest

from recjudge_utils.splitting.temporal import (
    ground_truth,
    last_items,
    positive_interactions,
    slice_bounds,
    split_fold,
    split_global_time,
    unseen_report,
)


def fixture(n: int = 100) -> pd.DataFrame:
    # 100 interactions at times 0..99 (shuffled rows), 5 users cycling, item = time // 3
    t = np.arange(n)
    df = pd.DataFrame({"user": t % 5, "item": t // 3, "rating": 4.0 + (t % 2), "timestamp": t * 10})
    return df.sample(frac=1.0, random_state=1).reset_index(drop=True)


def test_positive_interactions_keeps_ratings_at_least_four():
    df = pd.DataFrame({"user": [1, 1, 2, 2], "item": [1, 2, 3, 4], "rating": [3.5, 4.0, 5.0, 1.0], "timestamp": 0})
    out = positive_interactions(df)
    assert out["item"].tolist() == [2, 3]
    with pytest.raises(ValueError):
        positive_interactions(df.drop(columns="rating"))


def test_slice_bounds_equal_sizes():
    b = slice_bounds(100, 10)
    assert b.tolist() == list(range(0, 101, 10))
    sizes = np.diff(slice_bounds(103, 10))
    assert sizes.sum() == 103 and sizes.max() - sizes.min() <= 1


def test_split_boundaries_fold0():
    train, valid, test = split_global_time(fixture(), drop_unseen=False)
    assert sorted(train["timestamp"] // 10) == list(range(60))
    assert sorted(valid["timestamp"] // 10) == list(range(60, 70))
    assert sorted(test["timestamp"] // 10) == list(range(70, 80))


def test_fold_shifts_start_by_one_slice():
    for fold in (1, 2):
        train, valid, test = split_global_time(fixture(), fold=fold, drop_unseen=False)
        start = fold * 10
        assert sorted(train["timestamp"] // 10) == list(range(start, start + 60))
        assert sorted(valid["timestamp"] // 10) == list(range(start + 60, start + 70))
        assert sorted(test["timestamp"] // 10) == list(range(start + 70, start + 80))
    with pytest.raises(ValueError):
        split_global_time(fixture(), fold=3)  # slices 3..10 do not exist


def test_no_future_leakage():
    df = fixture(1000)
    df["timestamp"] = df["timestamp"] // 70  # many ties
    for fold in range(3):
        train, valid, test = split_global_time(df, fold=fold, drop_unseen=False)
        assert train["timestamp"].max() <= valid["timestamp"].min()
        assert valid["timestamp"].max() <= test["timestamp"].min()
        assert len(train) + len(valid) + len(test) == 800


def test_unseen_users_dropped_and_unseen_items_removed():
    train_part = pd.DataFrame({"user": [1, 1, 2], "item": [10, 11, 10], "rating": 5.0, "timestamp": [0, 1, 2]})
    later = pd.DataFrame(
        {
            "user": [1, 3, 2, 1, 2, 9, 1, 2, 3, 1],
            "item": [12, 10, 11, 10, 99, 10, 11, 10, 10, 98],
            "rating": 5.0,
            "timestamp": np.arange(3, 13),
        }
    )
    df = pd.concat([train_part, later], ignore_index=True)
    # 13 rows, 3 slices of ~4.3 -> use n_slices=3, train_slices=1: train rows 0..3, valid 4..8, test 9..12
    train, valid, test = split_global_time(df, n_slices=3, train_slices=1, fold=0)
    raw = split_global_time(df, n_slices=3, train_slices=1, fold=0, drop_unseen=False)[2]
    assert set(test["user"]) <= set(train["user"])
    assert set(test["item"]) <= set(train["item"])
    assert set(valid["user"]) <= set(train["user"]) and set(valid["item"]) <= set(train["item"])
    rep = unseen_report(raw, train)
    assert rep.rows == len(raw)
    assert rep.rows - rep.rows_unseen_user - rep.rows_unseen_item_only == len(test)
    assert rep.rows_unseen_user == 1  # user 3 at t=11 has no training history


def test_ground_truth_and_last_items():
    df = pd.DataFrame({"user": [1, 1, 1, 2], "item": [5, 6, 7, 5], "rating": 5.0, "timestamp": [3, 1, 2, 0]})
    assert ground_truth(df) == {1: {5, 6, 7}, 2: {5}}
    assert last_items(df, 2) == {1: [7, 5], 2: [5]}


@pytest.mark.parametrize("fold", [0, 1, 2])
def test_split_fold_is_split_global_time_with_its_raw_slices_and_spans(fold):
    # a user and an item seen only in the evaluation slices, so the unseen rule has rows to drop
    df = pd.concat(
        [fixture(), pd.DataFrame({"user": [99, 1], "item": [5, 999], "rating": 5.0, "timestamp": [705, 715]})]
    )
    split = split_fold(df, fold)
    for got, want in zip((split.train, split.valid, split.test), split_global_time(df, fold=fold), strict=True):
        pd.testing.assert_frame_equal(got, want)
    raw = split_global_time(df, fold=fold, drop_unseen=False)
    pd.testing.assert_frame_equal(split.raw_valid, raw[1])
    pd.testing.assert_frame_equal(split.raw_test, raw[2])
    assert len(split.raw_test) + len(split.raw_valid) > len(split.test) + len(split.valid)  # the rule dropped rows
    assert list(split.eval_users) == sorted(split.test["user"].unique())
    assert split.span(fold, fold + 5) == (int(split.train["timestamp"].min()), int(split.train["timestamp"].max()))
    assert split.span(fold + 7, fold + 7) == (int(raw[2]["timestamp"].min()), int(raw[2]["timestamp"].max()))
