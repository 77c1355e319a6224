"""The one training path: a tuned model is stored and a second call loads it without fitting, fixed and tuned
models are different artifacts, and plan mode gives stand-ins without tuning, training or storing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from recjudge_utils.recommenders import training
from recjudge_utils.recommenders.artifacts import ArtifactStore
from recjudge_utils.recommenders.plan_standin import StandInRecommender
from recjudge_utils.recommenders.training import Tuning, train


def toy(n_users: int = 12, n_items: int = 10) -> pd.DataFrame:
    rows = [(u, (u + j) % n_items, 5.0, 10 * u + j) for u in range(n_users) for j in range(4)]
    return pd.DataFrame(rows, columns=["user", "item", "rating", "timestamp"])


def valid() -> pd.DataFrame:
    return pd.DataFrame({"user": range(12), "item": [(u + 5) % 10 for u in range(12)], "rating": 5.0, "timestamp": 999})


def no_fit(*args: object, **kwargs: object) -> None:
    raise AssertionError("a stored model was fitted again")


def test_tuned_model_is_stored_and_loaded_without_refit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ArtifactStore(tmp_path / "artifacts")
    tuning = Tuning(valid(), n_trials=2, storage=f"sqlite:///{tmp_path / 'optuna.sqlite'}")
    first = train("kfn", toy(), None, split={"kind": "toy"}, tuning=tuning, store=store)
    assert not first.loaded and first.tuning is not None and first.tuning.n_trials == 2
    assert set(first.tuning.params) == {"k", "min_overlap"} and store.count("tuned") == 1
    monkeypatch.setattr(training, "fit_recommender", no_fit)
    monkeypatch.setattr(training, "tune", no_fit)
    second = train("kfn", toy(), None, split={"kind": "toy"}, tuning=tuning, store=store)
    assert second.loaded and second.tuning is not None and second.tuning.params == first.tuning.params
    users = np.arange(12)
    assert (second.model.recommend(users, k=3) == first.model.recommend(users, k=3)).all()
    # the same model with fixed parameters is another artifact, trained without tuning
    monkeypatch.undo()
    fitted = train("kfn", toy(), None, split={"kind": "toy"}, store=store)
    model, loaded = fitted.model, fitted.loaded
    fixed = train("kfn", toy(), None, split={"kind": "toy"}, store=store)
    assert not loaded and fixed.loaded and fixed.tuning is None and store.count("models") == 1
    assert (model.recommend(users, k=3) == fixed.model.recommend(users, k=3)).all()


def test_plan_mode_gives_stand_ins_and_tunes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ArtifactStore(tmp_path / "artifacts")
    monkeypatch.setenv("RECJUDGE_PLAN", str(tmp_path / "plan"))
    monkeypatch.setattr(training, "tune", no_fit)
    storage = f"sqlite:///{tmp_path / 'optuna.sqlite'}"
    tuned = train("kfn", toy(), None, split={"kind": "toy"}, tuning=Tuning(valid(), 3, storage), store=store)
    fixed = train("bprmf", toy(), None, split={"kind": "toy"}, params={"epochs": 1}, store=store)
    pop = train("pop", toy(), None, split={"kind": "toy"}, tuning=Tuning(valid(), 3), store=store)
    assert isinstance(tuned.model, StandInRecommender) and not tuned.loaded
    assert tuned.tuning is not None and tuned.tuning.n_trials == 0 and np.isnan(tuned.tuning.value)
    assert isinstance(fixed.model, StandInRecommender) and fixed.tuning is None
    assert not isinstance(pop.model, StandInRecommender)  # Pop learns nothing: fitted, exact lists
    assert store.count() == 0 and not (tmp_path / "optuna.sqlite").exists()


def test_plan_mode_loads_a_stored_tuned_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ArtifactStore(tmp_path / "artifacts")
    trained = train("kfn", toy(), None, split={"kind": "toy"}, tuning=Tuning(valid(), 2), store=store)
    monkeypatch.setenv("RECJUDGE_PLAN", str(tmp_path / "plan"))
    planned = train("kfn", toy(), None, split={"kind": "toy"}, tuning=Tuning(valid(), 2), store=store)
    assert planned.loaded and not isinstance(planned.model, StandInRecommender)
    assert planned.tuning is not None and trained.tuning is not None
    assert planned.tuning.params == trained.tuning.params
