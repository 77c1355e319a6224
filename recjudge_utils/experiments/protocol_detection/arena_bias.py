"""Study 4: RecSys Arena's single-order protocol (tested model always shown first) against both orders adjudicated,
against the truth, as position bias grows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from recjudge_utils.answer_formats.arena_verdicts import OVERALL
from recjudge_utils.data import Dataset
from recjudge_utils.experiments import arena
from recjudge_utils.experiments.protocol_detection.config import (
    ARENA_PROTOCOLS,
    DetectionConfig,
)
from recjudge_utils.experiments.protocol_detection.judges import SimFactory
from recjudge_utils.metrics.pairwise import q_value
from recjudge_utils.protocols.pairwise import games


def _win_rate(outcomes: Sequence[Any]) -> float:
    vals = [o for o in outcomes if o is not None and not (isinstance(o, float) and np.isnan(o))]
    return float(np.mean([1.0 if o == "win" else 0.5 if o == "tie" else 0.0 for o in vals])) if vals else np.nan


def _q(outcomes: Sequence[Any]) -> float:
    vals = [o for o in outcomes if isinstance(o, str)]
    return q_value(vals.count("win"), vals.count("tie"), vals.count("lose"))


def arena_config(config: DetectionConfig, tested: str = "random", baseline: str = "pop") -> arena.ArenaConfig:
    """Chapter 3's config for this chapter's sample: ``tested`` against ``baseline`` only, on the Accuracy aspect,
    ``config.arena_users`` users, no close pairs and no absolute judge; every other value is chapter 3's default."""
    return arena.ArenaConfig(
        recommenders=(tested, baseline),
        baseline=baseline,
        n_users=config.arena_users,
        aspects=("Accuracy",),
        n_close_pairs=0,
        absolute=False,
        seed=config.seed,
    )


def arena_position_bias(
    sim: SimFactory, dataset: Dataset, config: DetectionConfig, tested: str = "random", baseline: str = "pop"
) -> pd.DataFrame:
    """Win rate (ties half) and Q of ``tested`` against ``baseline`` per position bias: the truth, the paper's
    single-order protocol (tested list shown first) and both orders adjudicated, on chapter 3's sample."""
    cfg = arena_config(config, tested, baseline)
    train, test = arena.split(dataset, cfg)
    fitted = arena.train_models(dataset, train, {name: (name, {}) for name in cfg.recommenders}, cfg)
    models = {name: fit.model for name, fit in fitted.items()}
    sample = arena.build_sample(dataset, models, train, test, cfg)
    comparisons = arena.plan_comparisons(sample.users, {}, cfg)
    hits_x, hits_y = sample.hits[tested], sample.hits[baseline]
    truth = ["win" if hits_x[u] > hits_y[u] else "lose" if hits_x[u] < hits_y[u] else "tie" for u in sample.users]
    rows = [{"bias": b, "protocol": "truth", "win_rate": _win_rate(truth), "Q": _q(truth)} for b in config.biases]
    for b in config.biases:
        client = sim(position_bias=b, seed=config.seed)
        try:
            raw, _ = arena.judge_comparisons(client, sample, comparisons, cfg)
        finally:
            client.close()
        single = raw.loc[raw["order"] == "x_first", OVERALL].tolist()
        adjudicated = games(raw, [OVERALL])[OVERALL].tolist()
        for protocol, outcomes in zip(ARENA_PROTOCOLS, (single, adjudicated), strict=True):
            rows.append({"bias": b, "protocol": protocol, "win_rate": _win_rate(outcomes), "Q": _q(outcomes)})
    out = against_truth(pd.DataFrame(rows))
    out.attrs.update(
        tested=tested, baseline=baseline, users=len(sample.users), truth_ties=truth.count("tie") / len(truth)
    )
    return out


def against_truth(arena: pd.DataFrame) -> pd.DataFrame:
    """The Arena rows with each Q's relative error against the true Q (``Q_error``: NaN where either is not finite
    or the true Q is not positive), and the true win rate and Q as ``attrs``."""
    truth = arena[arena["protocol"] == "truth"].iloc[0]
    true_q, q = float(truth["Q"]), arena["Q"].astype(float)
    ok = np.isfinite(q) & np.isfinite(true_q) & (true_q > 0)
    out = arena.assign(Q_error=np.where(ok, q / true_q - 1, np.nan))
    out.attrs.update(arena.attrs, true_win_rate=float(truth["win_rate"]), true_q=true_q)
    return out
