"""Study 2: how often the bootstrap CI of the MAE (and the Wilson CI of the accuracy) holds the population value,
over repeated samples of n pairs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from recjudge_utils.data import SerendipityPairs
from recjudge_utils.experiments.protocol_detection.config import (
    DetectionConfig,
)
from recjudge_utils.experiments.protocol_detection.judges import SimFactory, serendipity_scores
from recjudge_utils.metrics import judge_scores as js
from recjudge_utils.metrics.intervals import bootstrap_mean_ci_rows, wilson


def ci_coverage(sim: SimFactory, pairs: SerendipityPairs, config: DetectionConfig) -> pd.DataFrame:
    """Coverage of the 95% CIs over ``repeats`` samples of n pairs drawn from every judged pair (the population)."""
    g = pairs.pairs["g"].to_numpy(dtype=float)
    pred = serendipity_scores(sim, pairs, noise=config.coverage_noise, seed=config.seed)
    ok = ~np.isnan(pred)
    err, hit = np.abs(pred[ok] - g[ok]), (js.three_class(pred[ok]) == js.three_class(g[ok])).astype(float)
    true_mae, true_acc = float(err.mean()), float(hit.mean())
    rng = np.random.default_rng(config.seed)
    rows = []
    for n in config.coverage_sizes:
        sample = np.array([rng.choice(len(err), size=n, replace=False) for _ in range(config.repeats)])
        lo, hi = bootstrap_mean_ci_rows(err[sample], config.n_boot, rng)
        covered = int(((lo <= true_mae) & (true_mae <= hi)).sum())
        a_lo, a_hi = wilson(hit[sample].sum(axis=1), n)
        covered_acc = int(((a_lo <= true_acc) & (true_acc <= a_hi)).sum())
        for metric, k, width in (
            ("MAE, percentile bootstrap", covered, float(np.mean(hi - lo))),
            ("3-class accuracy, Wilson", covered_acc, float(np.mean(a_hi - a_lo))),
        ):
            c_lo, c_hi = wilson(k, config.repeats)
            rows.append(
                {"n": n, "interval": metric, "coverage": k / config.repeats, "coverage_lo": c_lo,
                 "coverage_hi": c_hi, "mean_width": width}
            )  # fmt: skip
    out = pd.DataFrame(rows)
    out.attrs.update(true_mae=true_mae, true_acc=true_acc, noise=config.coverage_noise)
    return out
