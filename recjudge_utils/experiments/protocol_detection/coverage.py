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
    """Coverage of the 95% CIs over ``repeats`` samples of n pairs drawn from every judged pair (the population).

    A long frame: per sample size (``pairs``) and interval method (``interval``) two measures over the ``repeats``
    samples (``n``): ``coverage``, the share of CIs holding the population value with its Wilson CI, and
    ``mean_width``, the CIs' mean width (no interval). ``attrs``: the population's MAE and accuracy, the noise."""
    g = pairs.pairs["g"].to_numpy(dtype=float)
    pred = serendipity_scores(sim, pairs, noise=config.coverage_noise, seed=config.seed)
    ok = ~np.isnan(pred)
    err, hit = np.abs(pred[ok] - g[ok]), (js.three_class(pred[ok]) == js.three_class(g[ok])).astype(float)
    true_mae, true_acc = float(err.mean()), float(hit.mean())
    rng = np.random.default_rng(config.seed)
    rows: list[tuple[object, ...]] = []
    for n in config.coverage_sizes:
        sample = np.array([rng.choice(len(err), size=n, replace=False) for _ in range(config.repeats)])
        low, high = bootstrap_mean_ci_rows(err[sample], config.n_boot, rng)
        covered = int(((low <= true_mae) & (true_mae <= high)).sum())
        acc_low, acc_high = wilson(hit[sample].sum(axis=1), n)
        covered_acc = int(((acc_low <= true_acc) & (true_acc <= acc_high)).sum())
        for metric, k, width in (
            ("MAE, percentile bootstrap", covered, float(np.mean(high - low))),
            ("3-class accuracy, Wilson", covered_acc, float(np.mean(acc_high - acc_low))),
        ):
            c_low, c_high = wilson(k, config.repeats)
            rows += [(n, metric, "coverage", k / config.repeats, c_low, c_high, config.repeats),
                     (n, metric, "mean_width", width, np.nan, np.nan, config.repeats)]  # fmt: skip
    out = pd.DataFrame(rows, columns=["pairs", "interval", *js.MEASURE_COLUMNS])
    out.attrs.update(true_mae=true_mae, true_acc=true_acc, noise=config.coverage_noise)
    return out
