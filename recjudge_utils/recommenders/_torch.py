"""Shared plumbing for the PyTorch recommenders: seeding, user sequences, negative sampling.

Item indices inside the sequence models are ``column index + 1`` so that 0 can pad.
Determinism: every model builds its parameters and draws its samples inside ``seeded(seed)``
(a forked torch RNG plus a numpy Generator), so two fits with the same seed give the same
weights on CPU and the global torch RNG of the caller is left untouched. Training and scoring run
with one torch thread (``torch_threads``), see there why.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import pandas as pd
import scipy.sparse as sp

from recjudge_utils._extras import optional_imports

with optional_imports("recommenders"):
    import torch


@contextlib.contextmanager
def torch_threads(n: int | None = 1) -> Iterator[None]:
    """Temporarily set torch's intra-op thread count (None: leave it).

    The models here are small: one thread is about as fast as two on an idle 2-core machine and an order
    of magnitude faster when other processes compete for the cores (measured: 3.5 ms vs 50 ms per BPR step
    under load), because idle-spinning worker threads fight for the CPU.
    """
    if n is None:
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


@contextlib.contextmanager
def seeded(seed: int, threads: int | None = 1) -> Iterator[np.random.Generator]:
    """Fork torch's CPU RNG, seed it, limit torch to ``threads`` threads, and yield a numpy Generator."""
    with torch.random.fork_rng(devices=[]), torch_threads(threads):
        torch.manual_seed(seed)
        yield np.random.default_rng(seed)


def user_sequences(
    train: pd.DataFrame, user_index: dict[int, int], item_index: dict[int, int], n_users: int
) -> list[np.ndarray]:
    """Per user row: the training items (index + 1) in time order (ties by item id)."""
    frame = pd.DataFrame(
        {
            "u": train["user"].map(user_index).to_numpy(),
            "i": train["item"].map(item_index).to_numpy() + 1,
            "t": train["timestamp"].to_numpy() if "timestamp" in train.columns else np.arange(len(train)),
        }
    ).sort_values(["u", "t", "i"], kind="mergesort")
    seqs: list[np.ndarray] = [np.zeros(0, dtype=np.int64) for _ in range(n_users)]
    for u, grp in frame.groupby("u", sort=True)["i"]:
        seqs[int(u)] = grp.to_numpy(dtype=np.int64)
    return seqs


def left_pad(seqs: list[np.ndarray], length: int) -> np.ndarray:
    """Last ``length`` items of each sequence, left-padded with 0 (n x length)."""
    out = np.zeros((len(seqs), length), dtype=np.int64)
    for r, s in enumerate(seqs):
        tail = s[-length:]
        if len(tail):
            out[r, length - len(tail) :] = tail
    return out


def history_target_instances(seqs: list[np.ndarray], length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(user row, history window before t, item at t) for every position t >= 1 of every sequence."""
    users, hists, targets = [], [], []
    for r, s in enumerate(seqs):
        for t in range(1, len(s)):
            users.append(r)
            hists.append(s[max(0, t - length) : t])
            targets.append(s[t])
    if not users:
        return np.zeros(0, dtype=np.int64), np.zeros((0, length), dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.array(users, dtype=np.int64), left_pad(hists, length), np.array(targets, dtype=np.int64)


def _positive_keys(matrix: sp.csr_matrix) -> np.ndarray:
    """Sorted ``row * n_cols + col`` keys of the stored entries, cached on the matrix object."""
    keys = getattr(matrix, "_recjudge_positive_keys", None)
    if keys is None or len(keys) != matrix.nnz:
        coo = matrix.tocoo()
        keys = np.sort(coo.row.astype(np.int64) * matrix.shape[1] + coo.col.astype(np.int64))
        with contextlib.suppress(AttributeError):  # matrices without __dict__ just do not cache
            matrix._recjudge_positive_keys = keys
    return keys


def _is_positive(matrix: sp.csr_matrix, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Vectorised ``matrix[rows, cols] > 0`` (binary search over the cached keys; same shape as rows)."""
    keys = _positive_keys(matrix)
    if len(keys) == 0:
        return np.zeros(np.shape(rows), dtype=bool)
    query = np.asarray(rows, dtype=np.int64) * matrix.shape[1] + np.asarray(cols, dtype=np.int64)
    pos = np.minimum(np.searchsorted(keys, query), len(keys) - 1)
    return keys[pos] == query


def sample_negatives(
    rng: np.random.Generator, user_rows: np.ndarray, matrix: sp.csr_matrix, shape: tuple[int, ...]
) -> np.ndarray:
    """Uniform negative item indices (+1) avoiding each user's training items (two resampling rounds)."""
    n_items = matrix.shape[1]
    neg = rng.integers(0, n_items, size=shape)
    rows = np.broadcast_to(np.asarray(user_rows).reshape((-1,) + (1,) * (len(shape) - 1)), shape)
    for _ in range(2):
        clash = _is_positive(matrix, rows, neg)
        if not clash.any():
            break
        neg[clash] = rng.integers(0, n_items, size=int(clash.sum()))
    return neg + 1


def batches(rng: np.random.Generator, n: int, batch_size: int) -> Iterator[np.ndarray]:
    """Shuffled index batches of one epoch."""
    order = rng.permutation(n)
    for start in range(0, n, batch_size):
        yield order[start : start + batch_size]
