"""Temporal splits: the global time split of the serendipity paper and the per-user last-n split of RecSys Arena.

Plain functions in the LensKit style: each takes a frame of interactions (columns user, item,
rating, timestamp) and returns new frames; nothing is modified in place.

The protocol (serendipity-llm-judge paper, Section 5.1):

* ``positive_interactions``: ratings >= 4 are positive, every other pair is discarded.
* ``split_global_time``: sort all interactions chronologically (ties broken by user, then item,
  so the order is reproducible), cut them into ``n_slices`` slices of equal size (sizes differ by
  at most one interaction), use ``train_slices`` consecutive slices for training, the next one for
  validation and the one after for testing. Fold ``f`` starts at slice ``f`` (the paper repeats
  this three times, shifting the start by one slice). Every validation and test interaction is
  therefore later than (or tied in time with) every training interaction of its fold: there is no
  future leakage into training.

Users and items unseen in training (``drop_unseen=True``, the default) are handled explicitly:

* validation/test interactions of users with no training history are **dropped** — no
  recommender has learned anything about them, so they are not evaluated (they would only
  measure the popularity fallback);
* validation/test interactions with items that never occur in training are **removed from the
  ground truth** — no recommender can rank an item it has never seen.

``unseen_report`` counts how much each rule removed, so the notebook can print it.

RecSys Arena's protocol (``split_last_n``): per user, the last ``n_test`` interactions by timestamp are the
test set and the rest train; users with too short a history stay entirely in training.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

_REQUIRED = ("user", "item", "timestamp")


def positive_interactions(df: pd.DataFrame, threshold: float = 4) -> pd.DataFrame:
    """Keep interactions with ``rating >= threshold`` (the positives); discard all other pairs."""
    if "rating" not in df.columns:
        raise ValueError("positive_interactions needs a 'rating' column")
    return df.loc[df["rating"] >= threshold].reset_index(drop=True)


def _sorted_by_time(interactions: pd.DataFrame) -> pd.DataFrame:
    missing = set(_REQUIRED) - set(interactions.columns)
    if missing:
        raise ValueError(f"interactions lack columns {sorted(missing)}")
    return interactions.sort_values(["timestamp", "user", "item"], kind="mergesort").reset_index(drop=True)


def slice_bounds(n: int, n_slices: int) -> np.ndarray:
    """Row boundaries of ``n_slices`` equal slices of ``n`` rows (length n_slices + 1)."""
    return np.linspace(0, n, n_slices + 1).round().astype(np.int64)


def split_global_time(
    interactions: pd.DataFrame,
    n_slices: int = 10,
    train_slices: int = 6,
    fold: int = 0,
    drop_unseen: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Temporal global split into (train, valid, test) for one fold.

    Slices ``fold .. fold+train_slices-1`` train, slice ``fold+train_slices`` validates and slice
    ``fold+train_slices+1`` tests. With ``drop_unseen`` the validation and test frames are
    restricted to users and items present in the training frame (see the module docstring).
    """
    if n_slices < 3 or train_slices < 1:
        raise ValueError("need n_slices >= 3 and train_slices >= 1")
    last = fold + train_slices + 1
    if fold < 0 or last >= n_slices:
        raise ValueError(
            f"fold {fold} needs slices {fold}..{last} but only {n_slices} exist "
            f"(max fold = {n_slices - train_slices - 2})"
        )
    ordered = _sorted_by_time(interactions)
    bounds = slice_bounds(len(ordered), n_slices)
    train = ordered.iloc[bounds[fold] : bounds[fold + train_slices]].reset_index(drop=True)
    valid = ordered.iloc[bounds[fold + train_slices] : bounds[fold + train_slices + 1]].reset_index(drop=True)
    test = ordered.iloc[bounds[last] : bounds[last + 1]].reset_index(drop=True)
    if drop_unseen:
        valid = _restrict_to_train(valid, train)
        test = _restrict_to_train(test, train)
    return train, valid, test


@dataclass(frozen=True)
class FoldSplit:
    """One fold of the temporal global split of the positives, with what chapter 2 and the split export both read:
    the frames with and without the unseen users and items, the evaluation users, and each slice's time span."""

    fold: int
    train: pd.DataFrame
    valid: pd.DataFrame
    test: pd.DataFrame
    raw_valid: pd.DataFrame  # before the unseen-user/item rule
    raw_test: pd.DataFrame
    eval_users: np.ndarray  # users with a test positive after the rule, sorted
    bounds: np.ndarray  # slice boundaries in the split's order (:func:`slice_bounds`)
    timestamps: np.ndarray  # the positives' timestamps in the split's order

    def span(self, first: int, last: int) -> tuple[int, int] | None:
        """First and last timestamp of slices ``first .. last`` (None when they hold no row)."""
        start, stop = self.bounds[first], self.bounds[last + 1]
        return (int(self.timestamps[start]), int(self.timestamps[stop - 1])) if stop > start else None


def split_fold(positives: pd.DataFrame, fold: int, n_slices: int = 10, train_slices: int = 6) -> FoldSplit:
    """Fold ``fold`` of :func:`split_global_time` over ``positives``, its raw evaluation slices and spans."""
    train, raw_valid, raw_test = split_global_time(positives, n_slices, train_slices, fold=fold, drop_unseen=False)
    # the unseen rule applied here, not by a second split: the same frames split_global_time(drop_unseen=True) gives
    valid, test = _restrict_to_train(raw_valid, train), _restrict_to_train(raw_test, train)
    ordered = _sorted_by_time(positives)
    return FoldSplit(
        fold=fold,
        train=train,
        valid=valid,
        test=test,
        raw_valid=raw_valid,
        raw_test=raw_test,
        eval_users=np.sort(test["user"].unique()).astype(np.int64),
        bounds=slice_bounds(len(ordered), n_slices),
        timestamps=ordered["timestamp"].to_numpy(),
    )


def _restrict_to_train(frame: pd.DataFrame, train: pd.DataFrame) -> pd.DataFrame:
    """Drop rows whose user or item does not occur in ``train``."""
    keep = frame["user"].isin(train["user"].unique()) & frame["item"].isin(train["item"].unique())
    return frame.loc[keep].reset_index(drop=True)


@dataclass(frozen=True)
class UnseenReport:
    """How many evaluation interactions each unseen-entity rule removed."""

    rows: int
    rows_unseen_user: int
    rows_unseen_item_only: int
    users: int
    users_unseen: int

    def as_dict(self) -> dict[str, int]:
        """The five counts as a ``{field name: count}`` dict."""
        return dict(self.__dict__)


def unseen_report(frame: pd.DataFrame, train: pd.DataFrame) -> UnseenReport:
    """Count rows of a raw (unfiltered) evaluation slice removed by the unseen-user/item rules."""
    seen_user = frame["user"].isin(train["user"].unique())
    seen_item = frame["item"].isin(train["item"].unique())
    return UnseenReport(
        rows=len(frame),
        rows_unseen_user=int((~seen_user).sum()),
        rows_unseen_item_only=int((seen_user & ~seen_item).sum()),
        users=int(frame["user"].nunique()),
        users_unseen=int(frame.loc[~seen_user, "user"].nunique()),
    )


def ground_truth(frame: pd.DataFrame) -> dict[int, set[int]]:
    """user -> set of items in ``frame`` (the relevant items of an evaluation slice)."""
    return {int(u): set(map(int, g)) for u, g in frame.groupby("user", sort=True)["item"]}


def last_items(train: pd.DataFrame, n: int = 10) -> dict[int, list[int]]:
    """user -> their last ``n`` training items, oldest first (the judge's history)."""
    ordered = _sorted_by_time(train)
    tail = ordered.groupby("user", sort=True).tail(n)
    return {int(u): list(map(int, g)) for u, g in tail.groupby("user", sort=True)["item"]}


def split_last_n(
    interactions: pd.DataFrame, n_test: int = 10, min_train: int = 5, users: Iterable[int] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-user temporal split: each user's last ``n_test`` interactions (by timestamp, ties by item) are test.

    Users with fewer than ``n_test + min_train`` interactions stay entirely in training, and so does everyone not in
    ``users`` when it is given (SAER holds out only its sampled customers' future). Both frames come sorted by user,
    timestamp and item (the order the data loaders give).
    """
    ordered = interactions.sort_values(["user", "timestamp", "item"], kind="mergesort").reset_index(drop=True)
    size = ordered.groupby("user")["item"].transform("size")
    rank_from_end = ordered.groupby("user").cumcount(ascending=False)
    is_test = (rank_from_end < n_test) & (size >= n_test + min_train)
    if users is not None:
        is_test &= ordered["user"].isin(list(users))
    return ordered.loc[~is_test].reset_index(drop=True), ordered.loc[is_test].reset_index(drop=True)
