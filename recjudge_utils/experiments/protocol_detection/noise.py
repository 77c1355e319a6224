"""Study 1: MAE, three-class accuracy and kappa against the simulated judge's known score noise, beside the MAE the
error model implies (the truth line, :func:`expected_mae`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from recjudge_utils.data import SerendipityPairs
from recjudge_utils.experiments.protocol_detection.config import (
    DetectionConfig,
)
from recjudge_utils.experiments.protocol_detection.judges import SimFactory, serendipity_scores
from recjudge_utils.metrics import judge_scores as js


def expected_mae(g: np.ndarray, sigma: float, leniency: float = 0.0) -> float:
    """The MAE the sim's error model implies: answers ``clip(round(g + leniency + sigma Z), 1, 5)``."""
    g = np.asarray(g, dtype=float)
    if sigma == 0:
        return float(np.mean(np.abs(np.clip(np.rint(g + leniency), 1, 5) - g)))
    levels = np.arange(1, 6, dtype=float)
    lo = np.where(levels == 1, -np.inf, levels - 0.5)
    hi = np.where(levels == 5, np.inf, levels + 0.5)
    centre = g[:, None] + leniency
    prob = stats.norm.cdf((hi[None, :] - centre) / sigma) - stats.norm.cdf((lo[None, :] - centre) / sigma)
    return float(np.mean((prob * np.abs(levels[None, :] - g[:, None])).sum(axis=1)))


def holds(low: Any, high: Any, truth: Any) -> Any:
    """Whether each interval holds ``truth`` (False without one); a Wilson bound at 0 or 1 can miss it by a rounding
    error, which does not count as a miss."""
    return (np.asarray(low, dtype=float) - 1e-9 <= truth) & (truth <= np.asarray(high, dtype=float) + 1e-9)


def serendipity_noise(sim: SimFactory, pairs: SerendipityPairs, config: DetectionConfig) -> pd.DataFrame:
    """Per noise level (``noise``) and measure: the measures of
    :func:`~recjudge_utils.metrics.judge_scores.summarize_predictions` on every pair (MAE, accuracy, kappa with CIs,
    ...), then ``expected_mae``, the MAE the error model implies (no interval; :func:`implied_in_ci` says whether the
    MAE's CI holds it)."""
    g = pairs.pairs["g"].to_numpy(dtype=float)
    frames = []
    for sigma in config.noise_levels:
        pred = serendipity_scores(sim, pairs, noise=sigma, seed=config.seed)
        summary = js.summarize_predictions(pred, g, n_boot=config.n_boot, seed=config.seed)
        implied = pd.DataFrame([("expected_mae", expected_mae(g, sigma), np.nan, np.nan, len(g))],
                               columns=list(js.MEASURE_COLUMNS))  # fmt: skip
        frames.append(pd.concat([summary, implied], ignore_index=True).assign(noise=sigma))
    return pd.concat(frames, ignore_index=True)[["noise", *js.MEASURE_COLUMNS]]


def implied_in_ci(noise: pd.DataFrame) -> pd.Series:
    """Per noise level of a :func:`serendipity_noise` frame (the index): whether the MAE's CI holds the MAE the error
    model implies."""
    mae, implied = (js.measure_by(noise, m, "noise") for m in ("mae", "expected_mae"))
    return pd.Series(holds(mae["low"], mae["high"], implied["value"].to_numpy()), index=mae.index)
