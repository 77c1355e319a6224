"""Study 6: how judge noise shrinks the Avg.Score@k and P_ser@k gaps between two recommenders, and how many judged
users order them correctly 95 % of the time."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from recjudge_utils.data import Dataset
from recjudge_utils.data.folder import judge_item_texts
from recjudge_utils.experiments import reevaluation
from recjudge_utils.experiments.protocol_detection.config import (
    DetectionConfig,
)
from recjudge_utils.experiments.protocol_detection.judges import SimFactory
from recjudge_utils.experiments.steps import judge_recommendations
from recjudge_utils.metrics import judge_scores as js
from recjudge_utils.metrics.intervals import bootstrap_ci
from recjudge_utils.metrics.serendipity_at_k import per_user_metrics
from recjudge_utils.protocols.pointwise_score import SerendipityJudge


@dataclass
class ReevalDetection:
    """How judge noise blurs the serendipity gap between two recommenders, and how many users resolve it."""

    #: per judge (``source``: the truth first, then each ``noise``; NaN for the truth) and metric (``measure``: avg,
    #: p_ser): the gap between the two RSs (value, low, high: bootstrap CI, n: users with both values), and each
    #: RS's mean (a column named after it)
    gaps: pd.DataFrame
    ordering: pd.DataFrame  # per noise and judged-user count: share of samples ordering the RSs as the truth does
    users_needed: pd.DataFrame  # per noise: the smallest user count reaching 95% correct order

    @property
    def table(self) -> pd.DataFrame:
        """The gaps as the chapter shows them: per judge and metric (``source``, ``noise``, ``measure``) the gap with
        its CI (``value``, ``low``, ``high``, ``n``) and the judged users for 95 % correct order (``users_for_95%``:
        inf where no sample size tried reached it, NaN for the truth)."""
        needed = self.users_needed.set_index(["metric", "source"])["users_for_95%"]
        # no row: the truth (nothing to reach); a row without a count: never reached
        users = [np.nan if (m, s) not in needed.index else np.inf if np.isnan(needed[(m, s)]) else needed[(m, s)]
                 for s, m in zip(self.gaps["source"], self.gaps["measure"], strict=True)]  # fmt: skip
        columns = ["source", "noise", *js.MEASURE_COLUMNS]
        return self.gaps[columns].assign(**{"users_for_95%": np.asarray(users, dtype=float)})


def reevaluation_config(
    config: DetectionConfig, names: tuple[str, str] = ("bprmf", "random")
) -> reevaluation.ReevaluationConfig:
    """Chapter 2's config for this chapter's sample: the two ``names``, one fold, ``config.reeval_users`` judged
    users, default hyperparameters (no TPE trials) and the Base template without examples."""
    return reevaluation.ReevaluationConfig(
        recommenders=names, folds=1, n_trials=0, n_users=config.reeval_users, template="base", seed=config.seed
    )


def reevaluation_noise(
    sim: SimFactory, dataset: Dataset, config: DetectionConfig, names: tuple[str, str] = ("bprmf", "random")
) -> ReevalDetection:
    """Avg.Score@k and P_ser@k gaps between two recommenders under growing judge noise, against the truth, on
    chapter 2's temporal split, models and judged pairs (the truth: ratings after the training period)."""
    cfg = reevaluation_config(config, names)
    fold = reevaluation.prepare_folds(dataset.interactions, folds=1, n_users=cfg.n_users, seed=cfg.seed)[0]
    fitted = reevaluation.fit_fold(fold, cfg, storage=None)
    users = fold.judged_users
    recs = reevaluation.top_k_frame({n: f.model for n, f in fitted.items()}, users, k=cfg.top_k)
    future = dataset.interactions.loc[dataset.interactions["timestamp"] > fold.time_range[1]]

    sources: dict[str, pd.DataFrame] = {}
    noises = {"truth": np.nan, **{f"noise {sigma:g}": sigma for sigma in config.reeval_noise}}
    for sigma in config.reeval_noise:
        client = sim(noise=sigma, seed=config.seed)
        try:
            scorer = SerendipityJudge(
                client, template=cfg.template, words=dataset.domain, texts=judge_item_texts(dataset)
            )
            sources[f"noise {sigma:g}"] = judge_recommendations(
                recs, fold.train, dataset.items, scorer, n_history=cfg.n_history, desc="re-evaluation (sim)",
                future=future,
            )  # fmt: skip
        finally:
            client.close()
    # the truth: every judged pair scored with the serendipity level its future ratings imply
    judged = next(iter(sources.values()))
    sources = {"truth": judged.assign(score=judged["truth_g"].astype(float)), **sources}
    per_user = {
        src: per_user_metrics(recs, fold.test, j, k=cfg.top_k).set_index(["rs", "user"]) for src, j in sources.items()
    }
    a, b = names
    gap_rows = []
    for src, frame in per_user.items():
        for metric in ("avg", "p_ser"):
            va, vb = frame.loc[a, metric].to_numpy(dtype=float), frame.loc[b, metric].to_numpy(dtype=float)
            diff = va - vb
            ok = np.isfinite(diff)
            # a legacy RandomState seeded with config.seed: the resamples this gap's CI has always been drawn with
            _, low, high = bootstrap_ci(
                diff[ok], np.mean, n_boot=config.n_boot, seed=np.random.RandomState(config.seed)
            )
            gap_rows.append(
                {"source": src, "noise": noises[src], "measure": metric, "value": float(diff[ok].mean()), "low": low,
                 "high": high, "n": int(ok.sum()), a: float(np.nanmean(va)), b: float(np.nanmean(vb))}
            )  # fmt: skip
    gaps = pd.DataFrame(gap_rows)
    order_rows, needed = [], []
    sample_rng = np.random.default_rng(config.seed + 3)
    for metric in ("avg", "p_ser"):
        true_sign = np.sign(gaps[(gaps["source"] == "truth") & (gaps["measure"] == metric)]["value"].iloc[0])
        for src, frame in per_user.items():
            if src == "truth":
                continue
            d = frame.loc[a, metric].to_numpy(dtype=float) - frame.loc[b, metric].to_numpy(dtype=float)
            d = d[np.isfinite(d)]
            reached = np.nan
            for n in config.user_sizes:
                if n > len(d):
                    continue
                idx = sample_rng.integers(0, len(d), size=(config.repeats, n))
                correct = float((np.sign(d[idx].mean(axis=1)) == true_sign).mean())
                order_rows.append(
                    {"metric": metric, "source": src, "noise": noises[src], "users": n, "correct_order": correct}
                )
                if np.isnan(reached) and correct >= 0.95:
                    reached = n
            needed.append({"metric": metric, "source": src, "users_for_95%": reached})
    out = ReevalDetection(gaps, pd.DataFrame(order_rows), pd.DataFrame(needed))
    pairs = sources["truth"]
    out.gaps.attrs.update(recommenders=names, users=len(users), pairs=len(pairs))
    return out
