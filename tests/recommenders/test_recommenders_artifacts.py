"""Stored training results: a second run trains nothing, any change to data, code or parameters retrains, and a
TPE study resumes from its storage after a kill."""

from __future__ import annotations

import optuna
import pandas as pd

from recjudge_utils.recommenders import SEARCH_SPACES, training
from recjudge_utils.recommenders.artifacts import ArtifactStore, code_hash, dataset_fingerprint, function_hash
from recjudge_utils.recommenders.training import tune


def toy(n_users: int = 12, n_items: int = 10) -> pd.DataFrame:
    rows = [(u, (u + j) % n_items, 5.0, 10 * u + j) for u in range(n_users) for j in range(4)]
    return pd.DataFrame(rows, columns=["user", "item", "rating", "timestamp"])


def test_second_training_loads_the_stored_model_and_changes_retrain(tmp_path):
    store = ArtifactStore(tmp_path / "artifacts")
    train = toy()
    split = {"kind": "toy"}
    fitted = training.train("bprmf", train, None, split=split, params={"epochs": 1}, store=store)
    a, loaded_a = fitted.model, fitted.loaded
    fitted = training.train("bprmf", train, None, split=split, params={"epochs": 1}, store=store)
    b, loaded_b = fitted.model, fitted.loaded
    assert not loaded_a and loaded_b and store.count("models") == 1
    assert (a.recommend([0, 1], k=3) == b.recommend([0, 1], k=3)).all()
    fitted = training.train("bprmf", train, None, split=split, params={"epochs": 2}, store=store)
    _, loaded = fitted.model, fitted.loaded
    assert not loaded  # other parameters, another artifact
    fitted = training.train("bprmf", train.iloc[1:], None, split=split, params={"epochs": 1}, store=store)
    _, loaded = fitted.model, fitted.loaded
    assert not loaded  # other data
    fitted = training.train("bprmf", train, None, split=split, params={"epochs": 1}, seed=1, store=store)
    _, loaded = fitted.model, fitted.loaded
    assert not loaded  # another seed
    assert store.count("models") == 4
    # every artifact says what it is
    assert all(p.with_suffix(".json").exists() for p in (tmp_path / "artifacts" / "models").glob("*.pkl"))


def test_keys_follow_code_data_and_search_space():
    assert code_hash("kfn") != code_hash("uaum") and code_hash("kfn") == code_hash("kfn")
    assert dataset_fingerprint(toy()) == dataset_fingerprint(toy()) != dataset_fingerprint(toy(13))
    assert function_hash(SEARCH_SPACES["kfn"]) != function_hash(SEARCH_SPACES["uaum"])


def test_tpe_study_resumes_after_a_kill(tmp_path):
    train = toy()
    valid = pd.DataFrame(
        {"user": list(range(12)), "item": [(u + 5) % 10 for u in range(12)], "rating": 5.0, "timestamp": 999}
    )
    storage = f"sqlite:///{tmp_path / 'optuna.sqlite'}"
    first = tune("kfn", train, valid, n_trials=2, seed=0, storage=storage, study_name="s")  # killed after 2 trials
    assert first.n_trials == 2
    study = optuna.load_study(study_name="s", storage=storage)
    assert len(study.trials) == 2
    again = tune("kfn", train, valid, n_trials=5, seed=0, storage=storage, study_name="s")  # the rerun
    study = optuna.load_study(study_name="s", storage=storage)
    assert len(study.trials) == 5  # only the 3 missing trials ran
    assert again.value == max(t.value for t in study.trials)
    done = tune("kfn", train, valid, n_trials=5, seed=0, storage=storage, study_name="s")
    assert len(optuna.load_study(study_name="s", storage=storage).trials) == 5 and done.params == again.params
