"""Benchmark: vectorised ranking metrics vs a per-user Python loop (6,000 users x top-20).

Prints the time of each and the speed-up ratio; both give identical Precision/Recall/NDCG@20
(checked before timing). Run: ``.venv/bin/python benchmarks/bench_ranking_metrics.py``.
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np

from recjudge_utils.metrics.ranking import hit_matrix, ndcg_at_k, precision_at_k, recall_at_k

N_USERS, N_ITEMS, K, REPEATS = 6000, 3500, 20, 5


def make_data(seed: int = 0):
    rng = np.random.default_rng(seed)
    recs = np.stack([rng.choice(N_ITEMS, size=K, replace=False) for _ in range(N_USERS)])
    relevant = [set(rng.choice(N_ITEMS, size=int(rng.integers(1, 60)), replace=False).tolist()) for _ in range(N_USERS)]
    return recs, relevant


def vectorised(recs, relevant):
    hits = hit_matrix(recs, relevant)
    n_rel = np.array([len(r) for r in relevant])
    return precision_at_k(hits, K), recall_at_k(hits, n_rel, K), ndcg_at_k(hits, n_rel, K)


def loop(recs, relevant):
    p, r, n = [], [], []
    for items, rel in zip(recs.tolist(), relevant, strict=True):
        hits = [i in rel for i in items[:K]]
        found = sum(hits)
        p.append(found / K)
        r.append(found / len(rel) if rel else math.nan)
        dcg = sum(1.0 / math.log2(rank + 2) for rank, h in enumerate(hits) if h)
        idcg = sum(1.0 / math.log2(rank + 2) for rank in range(min(len(rel), K)))
        n.append(dcg / idcg if idcg > 0 else 0.0)
    return np.array(p), np.array(r), np.array(n)


def best_time(fn, *args) -> float:
    times = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    recs, relevant = make_data()
    for a, b in zip(vectorised(recs, relevant), loop(recs, relevant), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-12)
    t_vec = best_time(vectorised, recs, relevant)
    t_loop = best_time(loop, recs, relevant)
    print(f"{N_USERS} users x top-{K}, Precision+Recall+NDCG@{K}, best of {REPEATS}")
    print(f"vectorised (incl. building the hit matrix): {t_vec * 1e3:8.2f} ms")
    print(f"per-user Python loop:                       {t_loop * 1e3:8.2f} ms")
    print(f"speed-up (loop / vectorised): {t_loop / t_vec:.1f}x")
    hits = hit_matrix(recs, relevant)
    n_rel = np.array([len(r) for r in relevant])
    t_metrics = best_time(lambda: (precision_at_k(hits, K), recall_at_k(hits, n_rel, K), ndcg_at_k(hits, n_rel, K)))
    t_flat = best_time(lambda: np.fromiter(itertools.chain.from_iterable(relevant), dtype=np.int64))
    print(f"of which: flattening the Python sets {t_flat * 1e3:.2f} ms; ", end="")
    print(f"metrics given the hit matrix {t_metrics * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
