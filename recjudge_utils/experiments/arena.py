"""RecSys Arena (Wu et al. 2024): train recommenders, offline metrics, pairwise and absolute judging.

``run_arena(judge, dataset, ArenaConfig(...))``. Protocol (choices the paper leaves open are stated here):

* split: per user, the last ``n_test`` interactions by timestamp are the test set, the rest train
  (every interaction is an implicit positive; :func:`~recjudge_utils.splitting.temporal.split_last_n`); the
  judge sees the user's most recent training items;
* offline metrics over all users with test items: AUC (test items vs every item the user has not
  interacted with), nDCG@k (binary), URD@k (genre Jaccard), see :mod:`recjudge_utils.metrics.offline`;
* judged users: ``n_users`` drawn at random (seeded) among the users with test items;
* comparisons: every recommender vs the baseline (FM, as in Table 2), plus the ``n_close_pairs`` pairs of
  non-baseline recommenders with the closest offline AUC (Figures 3-4); each judged in both orders unless
  ``both_orders=False`` (then only with x shown as A, as in the paper).

Tables and figures: :mod:`recjudge_utils.reporting.arena`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd

from recjudge_utils.data import Dataset
from recjudge_utils.judge.types import Judge
from recjudge_utils.metrics.offline import evaluate_recommender, genre_jaccard, offline_table
from recjudge_utils.protocols.answers.arena_verdicts import OVERALL
from recjudge_utils.protocols.arena import AbsoluteJudge, PairwiseJudge, adjudicated_outcomes
from recjudge_utils.protocols.context.arena import ArenaContext
from recjudge_utils.protocols.truth import heldout_hits
from recjudge_utils.recommenders import DISPLAY_NAMES
from recjudge_utils.recommenders.base import Recommender
from recjudge_utils.recommenders.budgets import training_budget
from recjudge_utils.recommenders.training import train_or_load
from recjudge_utils.reporting.display import data_label
from recjudge_utils.splitting.temporal import split_last_n

__all__ = [
    "DEFAULT_RECOMMENDERS",
    "PAPER_NAMES",
    "TRANSPARENCY_MODELS",
    "ArenaConfig",
    "ArenaRun",
    "TransparencyRun",
    "closest_pairs",
    "run_arena",
    "run_transparency",
]

DEFAULT_RECOMMENDERS = ("fm", "minilm-content", "lightgcn", "sasrec", "deepfm")
#: our model -> the paper's row it stands in for (MiniLM-content stands in for the news model NRMS)
PAPER_NAMES = {"fm": "FM", "minilm-content": "NRMS", "lightgcn": "LightGCN", "sasrec": "SASRec", "deepfm": "DeepFM"}


@dataclass(frozen=True)
class ArenaConfig:
    """Demo defaults; the paper judged its whole test set with larger models and longer training."""

    recommenders: tuple[str, ...] = DEFAULT_RECOMMENDERS
    baseline: str = "fm"
    top_k: int = 5
    n_users: int = 2  # judged users; 0 = every user with test items
    aspects: tuple[str, ...] | Mapping[str, str] | None = None
    both_orders: bool = True
    n_close_pairs: int = 1
    absolute: bool = True
    n_history: int = 10
    n_test: int = 10
    train_budget: str = "small"
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "recommenders", tuple(self.recommenders))
        if isinstance(self.aspects, list):
            object.__setattr__(self, "aspects", tuple(self.aspects))
        if self.baseline not in self.recommenders:
            raise ValueError(f"the baseline {self.baseline!r} must be one of the recommenders {self.recommenders}")
        if self.top_k <= 0:
            raise ValueError("top_k must be positive")
        training_budget("arena", self.train_budget)  # validates the name


def closest_pairs(auc: Mapping[str, float], n: int, exclude: Sequence[str] = ()) -> list[tuple[str, str]]:
    """The ``n`` pairs of models (not in ``exclude``) with the smallest |AUC difference| (higher AUC first)."""
    names = [m for m in auc if m not in exclude]
    pairs = sorted(combinations(names, 2), key=lambda p: (abs(auc[p[0]] - auc[p[1]]), p))
    out = []
    for a, b in pairs[:n]:
        out.append((a, b) if auc[a] >= auc[b] else (b, a))
    return out


@dataclass
class ArenaRun:
    """Everything one run produced (the notebook reads tables from here)."""

    config: ArenaConfig
    dataset_label: str
    dataset_name: str
    judge_name: str
    users: list[int]
    offline: pd.DataFrame  # per model: auc, ndcg@k, urd, n_users
    offline_per_user: dict[str, pd.DataFrame]
    recs: dict[str, dict[int, list[int]]]
    comparisons: pd.DataFrame  # user, x, y, kind ("vs_baseline" / "close_pair")
    raw: pd.DataFrame  # one row per judged (comparison, order)
    adjudicated: pd.DataFrame  # one row per comparison (both orders)
    absolute: pd.DataFrame  # user, model, score, status
    aspect_keys: list[str]
    evidence: dict[str, dict[int, int]] = field(default_factory=dict)  # held-out positives in each shown list
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def baseline(self) -> str:
        return self.config.baseline

    @property
    def k(self) -> int:
        return self.config.top_k

    @property
    def both_orders(self) -> bool:
        return self.config.both_orders


def train_models(
    dataset: Dataset,
    train: pd.DataFrame,
    names: Sequence[str],
    config: ArenaConfig,
    log: Callable[[str], None] = print,
) -> tuple[dict[str, Recommender], dict[str, float]]:
    """Fit the named recommenders on ``train`` with the config's training budget; (models, seconds per model)."""
    budget = training_budget("arena", config.train_budget)
    models: dict[str, Recommender] = {}
    seconds: dict[str, float] = {}
    for name in names:
        t0 = time.perf_counter()
        models[name], loaded = train_or_load(
            name,
            train,
            dataset.items,
            split={"kind": "last_n", "n_test": config.n_test, "dataset": dataset.name},
            seed=config.seed,
            params=budget.get(name, {}),
            users=dataset.users,
        )
        seconds[name] = time.perf_counter() - t0
        how = "loaded the stored model of" if loaded else "trained"
        log(f"{how} {DISPLAY_NAMES.get(name, name)} in {seconds[name]:.1f} s")
    return models, seconds


def run_arena(
    judge: Judge,
    dataset: Dataset,
    config: ArenaConfig | None = None,
    models: Mapping[str, Recommender] | None = None,
    log: Callable[[str], None] = print,
) -> ArenaRun:
    """Train (unless fitted ``models`` are given), evaluate offline, judge, and collect the results."""
    cfg = config or ArenaConfig()
    k = cfg.top_k
    timings: dict[str, float] = {}
    train, test = split_last_n(dataset.interactions, n_test=cfg.n_test)
    fitted: dict[str, Recommender] = dict(models or {})
    to_train = [n for n in cfg.recommenders if n not in fitted]
    if to_train:
        trained, seconds = train_models(dataset, train, to_train, cfg, log)
        fitted.update(trained)
        timings.update({f"train {n}": s for n, s in seconds.items()})

    t0 = time.perf_counter()
    sim = genre_jaccard(dataset.items)
    per_user = {n: evaluate_recommender(fitted[n], train, test, dataset.items, k=k, sim=sim) for n in cfg.recommenders}
    offline = offline_table(per_user)
    timings["offline metrics"] = time.perf_counter() - t0

    rng = np.random.default_rng(cfg.seed)
    candidates = np.array(sorted(test["user"].unique()))
    size = len(candidates) if cfg.n_users == 0 else min(cfg.n_users, len(candidates))
    users = sorted(int(u) for u in rng.choice(candidates, size=size, replace=False))
    recs = {
        n: {u: [int(i) for i in row] for u, row in zip(users, fitted[n].recommend(np.array(users), k=k), strict=True)}
        for n in cfg.recommenders
    }

    auc = dict(zip(offline["rs"], offline["auc"], strict=True))
    pairs = [(x, cfg.baseline, "vs_baseline") for x in cfg.recommenders if x != cfg.baseline]
    pairs += [(a, b, "close_pair") for a, b in closest_pairs(auc, cfg.n_close_pairs, exclude=[cfg.baseline])]
    comparisons = pd.DataFrame(
        [{"user": u, "x": x, "y": y, "kind": kind} for x, y, kind in pairs for u in users],
        columns=["user", "x", "y", "kind"],
    )

    # the truth the simulated judge answers from: each shown list's held-out test positives
    heldout = {int(u): {int(i) for i in g} for u, g in test.groupby("user")["item"]}
    evidence = {n: heldout_hits({u: r[:k] for u, r in recs[n].items()}, heldout) for n in cfg.recommenders}
    context = ArenaContext(dataset.items, train, dataset.users, n_history=cfg.n_history, dataset=dataset.name)
    aspects = (
        None if cfg.aspects is None else (dict(cfg.aspects) if isinstance(cfg.aspects, Mapping) else list(cfg.aspects))
    )
    pairwise = PairwiseJudge(judge, context, aspects=aspects, k=k)
    t0 = time.perf_counter()
    raw = pairwise.judge(comparisons, recs, both_orders=cfg.both_orders, evidence=evidence)
    raw = raw.merge(comparisons, on=["user", "x", "y"], how="left")
    timings["pairwise judging"] = time.perf_counter() - t0
    log(f"pairwise judging: {len(raw)} calls in {timings['pairwise judging']:.1f} s")
    keys = [*pairwise.aspect_keys, OVERALL]
    adjudicated = adjudicated_outcomes(raw, keys) if cfg.both_orders else pd.DataFrame()
    if cfg.both_orders:
        adjudicated = adjudicated.merge(comparisons, on=["user", "x", "y"], how="left")

    abs_frame = pd.DataFrame(columns=["user", "model", "score", "status", "reason"])
    if cfg.absolute:
        t0 = time.perf_counter()
        judged = {m: r for m, r in recs.items() if m != cfg.baseline}  # Figure 6 compares the non-baseline models
        share = {n: {u: h / k for u, h in evidence[n].items()} for n in judged}
        abs_frame = AbsoluteJudge(judge, context, aspects=aspects, k=k).score(users, judged, truth=share)
        timings["absolute judging"] = time.perf_counter() - t0
        log(f"absolute judging: {len(abs_frame)} calls in {timings['absolute judging']:.1f} s")

    return ArenaRun(
        config=cfg,
        dataset_label=data_label(dataset.label, dataset.is_real),
        dataset_name=dataset.name,
        judge_name=judge.model_name,
        users=users,
        offline=offline,
        offline_per_user=per_user,
        recs=recs,
        comparisons=comparisons,
        raw=raw,
        adjudicated=adjudicated,
        absolute=abs_frame,
        aspect_keys=keys,
        evidence=evidence,
        timings=timings,
    )


#: the two DeepFM models of the transparency experiment (RecSys Arena Sec. 4.2.2): with and without user features
TRANSPARENCY_MODELS = {"deepfm+features": {"use_side_features": True}, "deepfm-ids": {"use_side_features": False}}


@dataclass
class TransparencyRun:
    """DeepFM with user features (x) against DeepFM with ids only (y), judged on Transparency and overall."""

    raw: pd.DataFrame  # one row per (user, order), with the judge's analyses
    adjudicated: pd.DataFrame
    users: list[int]
    judge_name: str
    dataset_label: str


def run_transparency(judge: Judge, dataset: Dataset, config: ArenaConfig | None = None) -> TransparencyRun:
    """RecSys Arena's transparency experiment (Sec. 4.2.2, Fig. 5): can the judge see which features a model used?

    DeepFM is trained twice on the same split, with user features (age, gender, occupation, genres) and with user
    and item ids only (the paper's two models); both are judged pairwise, in both orders, on the Transparency
    aspect and overall, for the same judged users as :func:`run_arena` (same seed).
    """
    cfg = config or ArenaConfig()
    train, test = split_last_n(dataset.interactions, n_test=cfg.n_test)
    budget = training_budget("arena", cfg.train_budget).get("deepfm", {})
    split = {"kind": "last_n", "n_test": cfg.n_test, "dataset": dataset.name}
    models = {
        name: train_or_load(
            "deepfm", train, dataset.items, split=split, seed=cfg.seed, params={**budget, **extra}, users=dataset.users
        )[0]
        for name, extra in TRANSPARENCY_MODELS.items()
    }
    rng = np.random.default_rng(cfg.seed)
    candidates = np.array(sorted(test["user"].unique()))
    size = len(candidates) if cfg.n_users == 0 else min(cfg.n_users, len(candidates))
    users = sorted(int(u) for u in rng.choice(candidates, size=size, replace=False))
    k = cfg.top_k
    recs = {
        n: {u: [int(i) for i in r] for u, r in zip(users, m.recommend(np.array(users), k=k), strict=True)}
        for n, m in models.items()
    }
    heldout = {int(u): {int(i) for i in g} for u, g in test.groupby("user")["item"]}
    evidence = {n: heldout_hits(recs[n], heldout) for n in recs}
    context = ArenaContext(dataset.items, train, dataset.users, n_history=cfg.n_history, dataset=dataset.name)
    x, y = TRANSPARENCY_MODELS
    comparisons = pd.DataFrame({"user": users, "x": x, "y": y})
    pairwise = PairwiseJudge(judge, context, aspects=["Transparency"], k=k)
    raw = pairwise.judge(comparisons, recs, both_orders=True, evidence=evidence, with_analysis=True)
    adjudicated = adjudicated_outcomes(raw, ["transparency", OVERALL])
    return TransparencyRun(raw, adjudicated, users, judge.model_name, data_label(dataset.label, dataset.is_real))
