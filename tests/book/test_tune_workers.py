"""Tuning workers sharing one Optuna storage: race-free study creation, two ``book tune`` processes started at the
same moment on one fresh journal file, and notebook 2's experiment afterwards tuning nothing."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import pandas as pd
import pytest
from claims import about, numbers_in
from test_experiment_reevaluation import score_of, toy_examples

from recjudge_utils.data import load_dataset
from recjudge_utils.experiments import reevaluation
from recjudge_utils.experiments.reevaluation import (
    ReevaluationConfig,
    ReevaluationData,
    default_storage,
    fit_fold,
    prepare_folds,
)
from recjudge_utils.paths import project_root
from recjudge_utils.recommenders import optuna_storage
from recjudge_utils.recommenders.optuna_storage import create_or_load_study, journal_path, open_storage
from recjudge_utils.recommenders.training import TrialSeededTPE, tune
from recjudge_utils.reporting.reevaluation import tuning_table

ROOT = project_root()
RECOMMENDERS = ("pop", "kfn", "bprmf", "uaum")
N_TRIALS = 6
FOLDS = 2
WORKERS = 2


def write_tiny_ml100k(folder: Path, n_users: int = 80, n_items: int = 60, n: int = 3000, seed: int = 0) -> None:
    """A small ML-100K in the GroupLens format ``load_dataset("ml-100k")`` reads (u.data, u.item, u.user)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {"user": rng.integers(1, n_users + 1, n), "item": rng.integers(1, n_items + 1, n), "rating": 0, "ts": 0}
    ).drop_duplicates(["user", "item"])
    frame["rating"] = rng.choice([2, 3, 4, 5], len(frame))
    frame["ts"] = 880_000_000 + 100 * np.arange(len(frame))
    frame.to_csv(folder / "u.data", sep="\t", header=False, index=False)
    flags = ["|".join("1" if g == i % 19 else "0" for g in range(19)) for i in range(1, n_items + 1)]
    items = [f"{i}|Movie {i} (1995)|01-Jan-1995||http://example.org/{i}|{flags[i - 1]}" for i in range(1, n_items + 1)]
    (folder / "u.item").write_text("\n".join(items) + "\n", encoding="latin-1")
    (folder / "u.user").write_text("".join(f"{u}|30|M|other|00000\n" for u in range(1, n_users + 1)))


def objective(trial: optuna.Trial) -> float:
    return trial.suggest_float("x", 0.0, 1.0)


def _create_and_run(url: str, barrier: Any, queue: Any) -> None:
    try:
        barrier.wait()
        study = create_or_load_study(url, "same", TrialSeededTPE(0))
        study.optimize(objective, n_trials=2)
        queue.put("ok")
    except Exception as exc:  # reported to the parent: the assertion names it
        queue.put(f"{type(exc).__name__}: {exc}")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_processes_sharing_one_fresh_storage_make_one_study_and_number_every_trial_once(
    tmp_path: Path, kind: str
) -> None:
    # what holds whoever wins the creation: one study, trials 0-7, no worker failing. Whether two workers collide
    # on the schema here is up to the scheduler; the collision itself is made to happen in
    # test_a_lost_schema_race_is_retried, deterministically.
    ctx = multiprocessing.get_context("fork")
    url = f"sqlite:///{tmp_path / 'o.sqlite'}" if kind == "sqlite" else str(tmp_path / "o.log")
    barrier, queue = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_create_and_run, args=(url, barrier, queue)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    outcomes = [queue.get(timeout=5) for _ in procs]
    assert outcomes == ["ok"] * 4
    storage = open_storage(url)
    assert [s.study_name for s in storage.get_all_studies()] == ["same"]
    trials = storage.get_all_trials(storage.get_study_id_from_name("same"))
    assert sorted(t.number for t in trials) == list(range(8))


def test_a_lost_schema_race_is_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlalchemy.exc

    real, calls = optuna_storage.RDBStorage, []

    def racing(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:  # what the loser of two processes creating the schema sees
            raise sqlalchemy.exc.IntegrityError("INSERT INTO alembic_version", {}, Exception("UNIQUE constraint"))
        return real(*args, **kwargs)

    monkeypatch.setattr(optuna_storage, "RDBStorage", racing)
    study = create_or_load_study(f"sqlite:///{tmp_path / 'o.sqlite'}", "s", TrialSeededTPE(0))
    assert study.study_name == "s" and len(calls) == 2


def test_storage_urls(tmp_path: Path) -> None:
    assert journal_path(f"journal://{tmp_path}/a.log") == tmp_path / "a.log"
    assert journal_path("runs/x/optuna.log") == Path("runs/x/optuna.log")
    assert journal_path("sqlite:///x.log") is None
    assert default_storage(tmp_path) == f"journal://{tmp_path.resolve() / 'optuna.log'}"
    (tmp_path / "optuna.sqlite").touch()  # a run begun with the earlier default keeps its studies
    assert default_storage(tmp_path) == f"sqlite:///{tmp_path / 'optuna.sqlite'}"
    with pytest.raises(ValueError, match="RDB URL"):
        open_storage("optuna.db")


def test_one_worker_gives_the_same_trials_in_a_journal_as_in_sqlite(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    train = pd.DataFrame({"user": rng.integers(0, 30, 600), "item": rng.integers(0, 25, 600), "timestamp": 0})
    train = train.drop_duplicates(["user", "item"]).reset_index(drop=True)
    valid = train.groupby("user").tail(1)
    runs = {
        url: tune("kfn", train, valid, n_trials=4, seed=3, storage=url, study_name="kfn")
        for url in (f"sqlite:///{tmp_path / 'o.sqlite'}", f"journal://{tmp_path / 'o.log'}", None)
    }
    frames = [r.trials[["number", "value", "params_k", "params_min_overlap"]] for r in runs.values()]
    for frame in frames[1:]:
        pd.testing.assert_frame_equal(frames[0], frame)
    assert all(r.trials_run == 4 for r in runs.values())


def _start_worker(storage: str, data: Path, runs: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "RECJUDGE_DATA_DIR": str(data), "RECJUDGE_RUNS_DIR": str(runs), "PYTHONHASHSEED": "0"}
    env.pop("RECJUDGE_RUN_DIR", None)
    command = [sys.executable, "-m", "recjudge_utils.book", "tune", "--storage", storage, "--dataset", "ml-100k"]
    command += ["-p", "recommenders", f"[{', '.join(RECOMMENDERS)}]", "-p", "n_trials", str(N_TRIALS)]
    command += ["-p", "folds", str(FOLDS)]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
@pytest.mark.skipif(ROOT is None, reason="needs a checkout with notebooks/")
def test_two_workers_share_the_studies_and_the_experiment_then_tunes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], scripted_judge: Any
) -> None:
    data = tmp_path / "data"
    write_tiny_ml100k(data / "ml-100k")
    storage = f"journal://{tmp_path / 'optuna.log'}"  # fresh: both workers create the studies
    # one artifact store per worker: two machines, coordinated by the storage alone
    workers = [_start_worker(storage, data, tmp_path / f"runs{k}") for k in range(WORKERS)]
    outputs = [w.communicate(timeout=240) for w in workers]
    for w, (out, err) in zip(workers, outputs, strict=True):
        assert w.returncode == 0, err[-3000:]
        assert "studies complete" in out and "this worker completed" in out
    run_here = [int(out.split("this worker completed ")[1].split()[0]) for out, _ in outputs]

    studies = optuna.get_all_study_summaries(open_storage(storage), include_best_trial=False)
    assert len(studies) == FOLDS * (len(RECOMMENDERS) - 1)  # pop has no search space
    total = 0
    for summary in studies:
        trials = optuna.load_study(study_name=summary.study_name, storage=open_storage(storage)).trials
        complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
        assert len(complete) == len(trials)  # nothing failed, nothing left running
        assert N_TRIALS <= len(complete) <= N_TRIALS + WORKERS - 1, summary.study_name
        numbers = [t.number for t in trials]
        assert sorted(numbers) == list(range(len(trials)))  # none lost, none duplicated
        params = [tuple(sorted(t.params.items())) for t in trials]
        assert len(set(params)) == len(params)  # per-trial seeds: two workers never propose the same parameters
        total += len(complete)
    assert sum(run_here) == total

    # notebook 2's experiment on a third machine (a fresh artifact store) with the same storage: no trial, refits
    monkeypatch.setenv("RECJUDGE_DATA_DIR", str(data))
    ds = load_dataset("ml-100k", verbose=False)
    config = ReevaluationConfig(
        recommenders=RECOMMENDERS, folds=FOLDS, n_trials=N_TRIALS, optuna_storage=storage, n_boot=50
    )
    capsys.readouterr()
    run = reevaluation.run(scripted_judge(score_of), ReevaluationData(ds, toy_examples()), config)
    printed = capsys.readouterr().out
    for fold in range(FOLDS):
        line = about(printed.splitlines(), f"fold {fold}:", "studies")
        assert numbers_in(line) == [fold, 3, 0, 0, 3] and "refitted" in line  # studies; run, loaded, refitted
    table = tuning_table(run)
    assert (table.loc[table["TPE trials"] > 0, "Run here"] == 0).all() and not table["Loaded"].any()
    # and on a worker's machine it loads the stored models
    monkeypatch.setenv("RECJUDGE_RUNS_DIR", str(tmp_path / "runs0"))
    for fold in prepare_folds(ds.interactions, folds=FOLDS, n_users=config.n_users, seed=config.seed):
        fitted = fit_fold(fold, config, storage)
        assert all(f.loaded for f in fitted.values())


@pytest.mark.skipif(ROOT is None, reason="needs a checkout with notebooks/")
def test_the_command_refuses_what_the_notebook_does_not_declare(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from recjudge_utils.book import cli

    storage = str(tmp_path / "optuna.log")
    assert cli.main(["tune", "--storage", storage, "-p", "n_trails", "3"]) == 2
    assert "'n_trails'" in capsys.readouterr().err
    assert cli.main(["tune", "--storage", storage, "-p", "optuna_storage", "sqlite:///x.sqlite"]) == 2
    assert "--storage" in capsys.readouterr().err
    write_tiny_ml100k(tmp_path / "data" / "ml-100k")
    monkeypatch.setenv("RECJUDGE_DATA_DIR", str(tmp_path / "data"))
    assert cli.main(["tune", "--storage", storage, "--folds", "3", "-p", "recommenders", "[pop]"]) == 2
    assert "folds [3] do not exist" in capsys.readouterr().err
    assert cli.main(["tune", "--storage", storage, "-p", "recommenders", "[pop, kfn]", "-p", "n_trials", "2"]) == 0
    out = capsys.readouterr().out
    assert "1 studies complete" in out and "this worker completed 2 trials" in out
