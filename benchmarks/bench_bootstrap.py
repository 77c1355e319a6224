"""Benchmark: a bootstrap statistic handed every resample at once (``vectorized``) vs one resample at a time.

The package's percentile CIs (:func:`recjudge_utils.metrics.intervals.bootstrap_distribution`) pass a statistic
with an ``axis`` keyword to ``scipy.stats.bootstrap`` as vectorised. This times both ways on the same resamples
(checked equal first) for the statistics the chapters bootstrap most: the Arena's Q share over W/T/L outcomes, MAE
over judged pairs, a paired mean difference, and Kendall's tau between two measures' system means (chapter 7).
Run: ``.venv/bin/python benchmarks/bench_bootstrap.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from recjudge_utils.metrics.intervals import bootstrap_distribution
from recjudge_utils.metrics.judge_scores import _mean_abs_err
from recjudge_utils.metrics.pairwise import _share_for_q
from recjudge_utils.metrics.system_agreement import _resampled_tau

N_BOOT, REPEATS = 2000, 5


def one_at_a_time(statistic: Callable[..., Any]) -> Callable[..., float]:
    return lambda *arrays: float(statistic(*arrays))  # no axis keyword: scipy calls it per resample


def best_time(fn: Callable[[], Any]) -> float:
    times = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    rng = np.random.default_rng(0)
    taus_x = rng.normal(size=(100, 8)) + np.arange(8) * 0.1  # chapter 7: two measures' users x systems matrices
    taus_y = taus_x + rng.normal(size=(100, 8))
    cases = {
        "Q share, 40 outcomes": ((rng.integers(-1, 2, 40),), _share_for_q),
        "MAE, 200 pairs": (
            (rng.integers(1, 6, 200).astype(float), rng.integers(1, 6, 200).astype(float)),
            _mean_abs_err,
        ),
        "mean difference, 943 users": (
            (rng.normal(size=943), rng.normal(size=943)),
            lambda x, y, axis=-1: np.mean(x, axis=axis) - np.mean(y, axis=axis),
        ),
        "tau of 8 systems, 100 users": ((np.arange(100),), _resampled_tau(taus_x, taus_y)),
    }
    print(f"{'statistic':<28} {'one at a time':>14} {'all at once':>12} {'ratio':>7}")
    for name, (arrays, statistic) in cases.items():
        slow, fast = one_at_a_time(statistic), statistic
        a = bootstrap_distribution(arrays, slow, N_BOOT, seed=1)[1]
        b = bootstrap_distribution(arrays, fast, N_BOOT, seed=1)[1]
        np.testing.assert_allclose(a, b, rtol=1e-12)
        t_slow = best_time(lambda s=slow, a=arrays: bootstrap_distribution(a, s, N_BOOT, seed=1))
        t_fast = best_time(lambda f=fast, a=arrays: bootstrap_distribution(a, f, N_BOOT, seed=1))
        print(f"{name:<28} {t_slow * 1000:>11.1f} ms {t_fast * 1000:>9.1f} ms {t_slow / t_fast:>6.1f}x")


if __name__ == "__main__":
    main()
