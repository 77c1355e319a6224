"""Hyperparameter search with optuna's TPE sampler on validation Recall@10 (paper: 100 trials per RS per fold).

``tune(name, train, valid, n_trials, seed)`` fits the recommender ``n_trials`` times on ``train``
with parameters proposed by a seeded ``TPESampler`` from ``SEARCH_SPACES[name]``, scores each fit by
mean Recall@10 over the validation users (users with at least one validation positive and training
history; items seen in training), and returns the best parameters. ``fixed`` parameters (for example
a small epoch budget) override the search space. Recommenders without hyperparameters (Pop, Random)
and ``n_trials == 0`` use the defaults, still reporting the validation recall. The best trial's fitted
model is returned too (fits are seeded, so it equals a refit with the best parameters).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import optuna
import pandas as pd

from recjudge_utils.metrics.ranking import hit_matrix, recall_at_k
from recjudge_utils.recommenders.base import Recommender
from recjudge_utils.recommenders.training import fit_recommender
from recjudge_utils.splitting.temporal import ground_truth

Space = Callable[[optuna.Trial], dict[str, Any]]

SEARCH_SPACES: dict[str, Space] = {
    "pop": lambda t: {},
    "random": lambda t: {},
    "bprmf": lambda t: {
        "factors": t.suggest_categorical("factors", [16, 32, 64, 128]),
        "lr": t.suggest_float("lr", 1e-3, 5e-2, log=True),
        "reg": t.suggest_float("reg", 1e-7, 1e-2, log=True),
    },
    "sasrec": lambda t: {
        "dim": t.suggest_categorical("dim", [32, 64]),
        "n_blocks": t.suggest_int("n_blocks", 1, 2),
        "dropout": t.suggest_float("dropout", 0.0, 0.5),
        "lr": t.suggest_float("lr", 1e-4, 1e-2, log=True),
    },
    "kfn": lambda t: {
        "k": t.suggest_int("k", 5, 500, log=True),
        "min_overlap": t.suggest_int("min_overlap", 3, 20, log=True),
    },
    # lam > 0 always: at lam = 0 UAUM is plain PureSVD, and an accuracy objective would happily pick it;
    # UAUM.degenerate_to_svd() reports when the tuned lam is still too small to change the top-k lists.
    "uaum": lambda t: {
        "factors": t.suggest_categorical("factors", [8, 16, 32, 64, 128]),
        "lam": t.suggest_float("lam", 0.1, 2.0, log=True),
    },
    "purs": lambda t: {
        "dim": t.suggest_categorical("dim", [16, 32, 64]),
        "lr": t.suggest_float("lr", 1e-4, 1e-2, log=True),
        "bandwidth": t.suggest_float("bandwidth", 0.3, 3.0, log=True),
        "l2": t.suggest_float("l2", 1e-8, 1e-3, log=True),
    },
    "desr": lambda t: {
        "dim": t.suggest_categorical("dim", [16, 32, 64]),
        "lr": t.suggest_float("lr", 1e-4, 1e-2, log=True),
        "beta": t.suggest_float("beta", 0.0, 2.0),
        "short_len": t.suggest_int("short_len", 2, 10),
    },
}


def validation_recall(model: Recommender, valid: pd.DataFrame, k: int = 10) -> float:
    """Mean Recall@k over validation users known to the model (items already filtered to training ones)."""
    truth = ground_truth(valid)
    users = np.array([u for u in truth if u in model._user_index], dtype=np.int64)
    if len(users) == 0:
        return float("nan")
    relevant = [truth[int(u)] for u in users]
    recs = model.recommend(users, k=k)
    hits = hit_matrix(recs, relevant)
    return float(np.nanmean(recall_at_k(hits, [len(r) for r in relevant], k)))


@dataclass
class TuneResult:
    name: str
    params: dict[str, Any]
    value: float
    n_trials: int
    seconds: float
    trials: pd.DataFrame = field(default_factory=pd.DataFrame)
    model: Recommender | None = None  # the fitted model of the best trial (fits are seeded: same as a refit)


def tune(
    name: str,
    train: pd.DataFrame,
    valid: pd.DataFrame,
    n_trials: int,
    seed: int = 0,
    fixed: dict[str, Any] | None = None,
    items: pd.DataFrame | None = None,
    k: int = 10,
    ratings: pd.DataFrame | None = None,
    storage: str | None = None,
    study_name: str | None = None,
) -> TuneResult:
    """TPE search of ``SEARCH_SPACES[name]`` maximising validation Recall@k; returns the best params.

    ``train`` holds the positives; ``ratings`` (optional) every rating of the same period, which the models
    defined on explicit ratings (KFN, UAUM) are trained on instead. With ``storage`` (an Optuna RDB URL such as
    ``sqlite:///runs/default/optuna.sqlite``) the study is stored under ``study_name`` and resumed: a rerun after a
    kill runs only the missing trials, and several workers sharing one database stop at ``n_trials`` together.
    """
    fixed = dict(fixed or {})
    space = SEARCH_SPACES[name.lower()]
    start = time.perf_counter()
    has_space = name.lower() not in ("pop", "random")
    if n_trials <= 0 or not has_space:
        model = fit_recommender(name, train, items, seed=seed, params=fixed, ratings=ratings)
        value = validation_recall(model, valid, k)
        return TuneResult(name, fixed, value, 0, time.perf_counter() - start, model=model)

    best: dict[str, Any] = {"value": -np.inf, "model": None}

    def objective(trial: optuna.Trial) -> float:
        params = {**space(trial), **fixed}
        model = fit_recommender(name, train, items, seed=seed, params=params, ratings=ratings)
        value = validation_recall(model, valid, k)
        value = -1.0 if np.isnan(value) else value
        if value > best["value"]:
            best["value"], best["model"] = value, model
        return value

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        direction="maximize",
        sampler=optuna.samplers.TPESampler(seed=seed),
        storage=storage,
        study_name=study_name,
        load_if_exists=storage is not None,
    )
    complete = (optuna.trial.TrialState.COMPLETE,)
    remaining = n_trials - len(study.get_trials(deepcopy=False, states=complete))
    if remaining > 0:
        study.optimize(
            objective,
            n_trials=remaining,
            show_progress_bar=False,
            callbacks=[optuna.study.MaxTrialsCallback(n_trials, states=complete)],
        )
    params = {**study.best_params, **fixed}
    best_model = best["model"] if best["value"] == study.best_value else None
    return TuneResult(
        name,
        params,
        float(study.best_value),
        n_trials,
        time.perf_counter() - start,
        study.trials_dataframe(),
        best_model,
    )
