"""Getting a fitted recommender: the one path every experiment takes.

:func:`train` builds a registered recommender, hands it the training data it is defined on (every explicit rating
for models with ``uses_explicit_ratings``, else the positives; the user attributes to models with ``needs_users``;
the item metadata to all; torch on one thread, see :func:`recjudge_utils.recommenders._torch.torch_threads`),
optionally tunes it first (:class:`Tuning`: a seeded TPE search on validation Recall@k), and keeps the result in the
artifact store (:mod:`recjudge_utils.recommenders.artifacts`), so a second run (another judge) trains nothing. In
plan mode nothing is trained, tuned or stored: a model that is not stored is a cheap fit or a stand-in
(:mod:`recjudge_utils.recommenders.plan_standin`).

Tuning (paper: 100 TPE trials per RS per fold) fits the recommender ``n_trials`` times with parameters proposed by a
seeded ``TPESampler`` from the search space the recommender registered (``SEARCH_SPACES[name]``), scores each fit by
mean Recall@10 over the validation users (users with a validation positive and training history; items seen in
training) and keeps the best trial's model: fits are seeded, so it is the model a refit with the best parameters
gives. Fixed parameters (e.g. a small epoch budget) override the search space. Recommenders without
hyperparameters (Pop, Random) and ``n_trials == 0`` use the fixed parameters, still reporting the validation recall.

A stored study (:mod:`recjudge_utils.recommenders.optuna_storage`: a journal file or an RDB URL) is resumed and can
be shared: any number of processes (``python -m recjudge_utils.book tune``) run its trials together and stop when
``n_trials`` are complete (each worker's trial in flight at that moment completes too: at most ``n_trials +
workers - 1``); a later call finds it complete, runs no trial and refits the best parameters. The TPE sampler of
trial ``n`` is seeded by ``(seed, n)``, not by one sequence per process: one process proposes exactly what it
always proposes for a seed, and parallel workers, which claim distinct trial numbers, never propose the same
random start-up parameters.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from recjudge_utils._extras import optional_imports
from recjudge_utils.metrics.ranking import hit_matrix, recall_at_k
from recjudge_utils.recommenders import SEARCH_SPACES, make_recommender, recommender_class
from recjudge_utils.recommenders._torch import torch_threads
from recjudge_utils.recommenders.artifacts import (
    ArtifactStore,
    code_hash,
    dataset_fingerprint,
    frame_fingerprint,
    function_hash,
)
from recjudge_utils.recommenders.base import Recommender
from recjudge_utils.recommenders.optuna_storage import create_or_load_study
from recjudge_utils.recommenders.plan_standin import fit_or_stand_in
from recjudge_utils.splitting.temporal import ground_truth

with optional_imports("recommenders"):
    import optuna

__all__ = [
    "Trained",
    "TrialSeededTPE",
    "TuneResult",
    "Tuning",
    "fit_recommender",
    "train",
    "train_each",
    "training_frame",
    "tune",
    "validation_recall",
]


def _build_recommender(name: str, seed: int, params: dict[str, Any], users: pd.DataFrame | None = None) -> Recommender:
    """``make_recommender(name)`` with ``params``, plus the users frame for models that learn from attributes."""
    extra = {"users": users} if recommender_class(name).needs_users else {}
    return make_recommender(name, seed=seed, **params, **extra)


def training_frame(name: str, positives: pd.DataFrame, ratings: pd.DataFrame | None) -> pd.DataFrame:
    """What ``name`` is trained on: all ``ratings`` when it uses explicit ratings (and they are given)."""
    if recommender_class(name).uses_explicit_ratings and ratings is not None:
        return ratings
    return positives


def fit_recommender(
    name: str,
    positives: pd.DataFrame,
    items: pd.DataFrame | None,
    *,
    seed: int = 0,
    params: dict[str, Any] | None = None,
    users: pd.DataFrame | None = None,
    ratings: pd.DataFrame | None = None,
) -> Recommender:
    """Build and fit one recommender on the data it is defined on."""
    model = _build_recommender(name, seed, dict(params or {}), users)
    with torch_threads(1):
        return model.fit(training_frame(name, positives, ratings), items)


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
    """A TPE search's outcome: the best parameters, their validation recall, and the model fitted with them."""

    name: str
    params: dict[str, Any]
    value: float
    n_trials: int
    seconds: float
    model: Recommender  # fits are seeded: the best trial's model is the one a refit with its parameters gives
    trials: pd.DataFrame = field(default_factory=pd.DataFrame)
    refit_seconds: float = 0.0  # a resumed study's best trial ran in an earlier process: its model is refitted
    trials_run: int = 0  # trials this call completed (0 when the study was complete already: workers tuned it)
    study_name: str | None = None  # the study in the storage (None: not stored)


class TrialSeededTPE(optuna.samplers.BaseSampler):
    """Optuna's TPE sampler whose randomness for trial ``n`` is seeded by ``(seed, n)`` (see the module doc)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._current: tuple[int, optuna.samplers.TPESampler] | None = None

    def _sampler(self, trial: optuna.trial.FrozenTrial) -> optuna.samplers.TPESampler:
        if self._current is None or self._current[0] != trial.number:
            seed = int(np.random.SeedSequence([self.seed, trial.number]).generate_state(1)[0])
            self._current = (trial.number, optuna.samplers.TPESampler(seed=seed))
        return self._current[1]

    def infer_relative_search_space(
        self, study: optuna.Study, trial: optuna.trial.FrozenTrial
    ) -> dict[str, optuna.distributions.BaseDistribution]:
        """The TPE sampler's relative search space for this trial."""
        return self._sampler(trial).infer_relative_search_space(study, trial)

    def sample_relative(
        self,
        study: optuna.Study,
        trial: optuna.trial.FrozenTrial,
        search_space: dict[str, optuna.distributions.BaseDistribution],
    ) -> dict[str, Any]:
        """The TPE sampler's joint proposal for this trial."""
        return self._sampler(trial).sample_relative(study, trial, search_space)

    def sample_independent(
        self,
        study: optuna.Study,
        trial: optuna.trial.FrozenTrial,
        param_name: str,
        param_distribution: optuna.distributions.BaseDistribution,
    ) -> Any:
        """The TPE sampler's proposal for one parameter outside the relative search space."""
        return self._sampler(trial).sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        """Start the trial's own TPE sampler."""
        self._sampler(trial).before_trial(study, trial)

    def after_trial(
        self,
        study: optuna.Study,
        trial: optuna.trial.FrozenTrial,
        state: optuna.trial.TrialState,
        values: Any,
    ) -> None:
        """Finish the trial's own TPE sampler."""
        self._sampler(trial).after_trial(study, trial, state, values)


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
    users: pd.DataFrame | None = None,
) -> TuneResult:
    """TPE search of ``SEARCH_SPACES[name]`` maximising validation Recall@k; the best params and their model.

    ``train`` holds the positives; ``ratings`` (optional) every rating of the same period, which the models
    defined on explicit ratings (KFN, UAUM) are trained on instead. With ``storage`` (a journal file such as
    ``journal:///runs/default/optuna.log`` or an Optuna RDB URL) the study is stored under ``study_name`` and
    resumed: a rerun after a kill runs only the missing trials, and several workers sharing one storage stop at
    ``n_trials`` together.
    """
    fixed = dict(fixed or {})
    space = SEARCH_SPACES[name.lower()]
    start = time.perf_counter()
    has_space = name.lower() not in ("pop", "random")
    if n_trials <= 0 or not has_space:
        model = fit_recommender(name, train, items, seed=seed, params=fixed, users=users, ratings=ratings)
        value = validation_recall(model, valid, k)
        return TuneResult(name, fixed, value, 0, time.perf_counter() - start, model)

    best: dict[str, Any] = {"value": -np.inf, "model": None, "run": 0}

    def objective(trial: optuna.Trial) -> float:
        params = {**space(trial), **fixed}
        model = fit_recommender(name, train, items, seed=seed, params=params, users=users, ratings=ratings)
        value = validation_recall(model, valid, k)
        value = -1.0 if np.isnan(value) else value
        best["run"] += 1
        if value > best["value"]:
            best["value"], best["model"] = value, model
        return value

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = create_or_load_study(storage, study_name, TrialSeededTPE(seed))
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
    seconds = time.perf_counter() - start
    kept: Recommender | None = best["model"] if best["value"] == study.best_value else None
    refit_seconds = 0.0
    if kept is None:
        kept = fit_recommender(name, train, items, seed=seed, params=params, users=users, ratings=ratings)
        refit_seconds = time.perf_counter() - start - seconds
    return TuneResult(
        name,
        params,
        float(study.best_value),
        n_trials,
        seconds,
        kept,
        study.trials_dataframe(),
        refit_seconds,
        best["run"],
        study_name if storage is not None else None,
    )


@dataclass(frozen=True)
class Tuning:
    """The option of :func:`train` that tunes: ``n_trials`` TPE trials scored on ``valid``; the study lives in
    ``storage`` (a journal file or an Optuna RDB URL, see :mod:`~recjudge_utils.recommenders.optuna_storage`;
    None: in memory, not resumable)."""

    valid: pd.DataFrame
    n_trials: int
    storage: str | None = None


@dataclass
class Trained:
    """A fitted recommender, whether an earlier run stored it, and the TPE search that chose its parameters
    (None when they were fixed)."""

    name: str
    model: Recommender
    loaded: bool
    tuning: TuneResult | None = None
    seconds: float = 0.0  # wall time of getting it: training and tuning, or loading


def train(
    name: str,
    positives: pd.DataFrame,
    items: pd.DataFrame | None,
    *,
    split: Mapping[str, Any],
    seed: int = 0,
    params: dict[str, Any] | None = None,
    users: pd.DataFrame | None = None,
    ratings: pd.DataFrame | None = None,
    tuning: Tuning | None = None,
    store: ArtifactStore | None = None,
) -> Trained:
    """The fitted ``name``: the model an earlier run stored for exactly this data, split, code, parameters, seed
    (and search, when tuned), else trained (and tuned) now and stored. In plan mode a model not stored is a cheap
    fit or a stand-in, never trained, tuned nor stored. ``params`` are fixed; ``tuning`` searches the others."""
    store = store or ArtifactStore()
    fixed = dict(params or {})
    data = training_frame(name, positives, ratings)
    fields: dict[str, Any] = {
        "recommender": name,
        "code": code_hash(name),
        "train": dataset_fingerprint(data),
        "items": None if items is None else frame_fingerprint(items),
        "users": None if users is None or not recommender_class(name).needs_users else frame_fingerprint(users),
        "split": dict(split),
        "params": fixed,
        "seed": seed,
    }

    def stand_in() -> Recommender:
        model = _build_recommender(name, seed, dict(fixed), users)
        return fit_or_stand_in(name, model, data, items, key=store.key(fields), seed=seed)

    if tuning is None:
        model, loaded = store.get_or_compute(
            "models",
            fields,
            lambda: fit_recommender(name, positives, items, seed=seed, params=fixed, users=users, ratings=ratings),
            stand_in=stand_in,
        )
        return Trained(name, model, loaded)
    fields.update(
        space=function_hash(SEARCH_SPACES[name]), valid=dataset_fingerprint(tuning.valid), n_trials=tuning.n_trials
    )
    result, loaded = store.get_or_compute(
        "tuned",
        fields,
        lambda: tune(
            name,
            positives,
            tuning.valid,
            n_trials=tuning.n_trials,
            seed=seed,
            fixed=fixed,
            items=items,
            ratings=ratings,
            storage=tuning.storage,
            study_name=f"{name}-{store.key(fields)[:12]}",
            users=users,
        ),
        stand_in=lambda: TuneResult(name, dict(fixed), float("nan"), 0, 0.0, stand_in()),
    )
    return Trained(name, result.model, loaded, result)


def train_each(
    models: Mapping[str, tuple[str, Mapping[str, Any]]],
    positives: pd.DataFrame,
    items: pd.DataFrame | None,
    *,
    split: Mapping[str, Any],
    seed: int = 0,
    users: pd.DataFrame | None = None,
    ratings: pd.DataFrame | None = None,
    tuning: Tuning | None = None,
    desc: str | None = None,
) -> dict[str, Trained]:
    """The one training loop: each ``label -> (registry key, fixed params)`` through :func:`train` on the same data,
    in order, timed (``Trained.seconds``); ``desc`` shows a progress bar (tuning takes minutes)."""
    from tqdm.std import tqdm  # text bars: widget bars need JavaScript the offline book cannot load

    out: dict[str, Trained] = {}
    labels = tqdm(list(models), desc=desc) if desc else list(models)
    for label in labels:
        if desc:
            labels.set_postfix_str(label)  # type: ignore[union-attr]
        key, params = models[label]
        started = time.perf_counter()
        fitted = train(key, positives, items, split=split, seed=seed, params=dict(params), users=users,
                       ratings=ratings, tuning=tuning)  # fmt: skip
        out[label] = replace(fitted, name=label, seconds=time.perf_counter() - started)
    return out
