"""Tuning workers: wall time of 1 vs 2 ``python -m recjudge_utils.book tune`` processes on the same studies, and the
paper-scale tuning time this measures for 1, 4 and 16 workers.

Both configurations tune notebook 2's eight recommenders on one fold of MovieLens-100K (the offline dataset;
``--trials`` TPE trials each, the demo's ``small`` training budget), each on a fresh journal file and a fresh
artifact store, the workers started together. From the single worker's storage it reads the mean seconds per
trial of each recommender and extrapolates the paper's tuning (8 recommenders x 3 folds x 100 trials on ML-1M at
the ``paper`` budget): seconds per trial x (ML-1M ratings / ML-100K ratings) x (default epochs / small epochs). With
W workers a study of T trials takes about ceil(T / W) trial times plus one refit (a worker whose trials did not
include the best one refits its parameters to store the model), slowed by the contention measured here (measured
1/2 ratio over the ratio this model predicts). A linear extrapolation: KFN's neighbour search grows faster than the
ratings, the torch models roughly linearly.

Run (about 5 minutes on 2 cores; alone on the machine, holding the shared heavy-job lock):
    flock /tmp/recjudge-heavy.lock .venv/bin/python benchmarks/bench_tune_workers.py [--trials 4]
"""

from __future__ import annotations

import argparse
import inspect
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna
import pandas as pd

from recjudge_utils.book.tune import NOTEBOOK, notebook_parameters
from recjudge_utils.data import load_dataset
from recjudge_utils.paths import project_root
from recjudge_utils.recommenders import recommender_class
from recjudge_utils.recommenders.budgets import training_budget
from recjudge_utils.recommenders.optuna_storage import open_storage

REPO = Path(__file__).resolve().parent.parent
ML_1M_RATINGS = 1_000_209  # GroupLens ML-1M README
PAPER = {"recommenders": 8, "folds": 3, "trials": 100}


def start_worker(storage: str, runs: Path, trials: int) -> subprocess.Popen[bytes]:
    """One ``book tune`` process over notebook 2's recommenders, one fold, ``trials`` trials each."""
    env = {**os.environ, "RECJUDGE_RUNS_DIR": str(runs)}
    env.pop("RECJUDGE_RUN_DIR", None)
    command = [sys.executable, "-m", "recjudge_utils.book", "tune", "--storage", storage]
    command += ["-p", "n_trials", str(trials), "-p", "folds", "1"]
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wall_time(workers: int, trials: int, folder: Path) -> tuple[float, str]:
    """Seconds until ``workers`` processes started together on a fresh storage all exit; the storage URL."""
    storage = f"journal://{folder / f'optuna-{workers}.log'}"
    started = time.perf_counter()
    procs = [start_worker(storage, folder / f"runs-{workers}", trials) for _ in range(workers)]
    codes = [p.wait() for p in procs]
    if any(codes):
        raise SystemExit(f"a worker failed: exit codes {codes}")
    return time.perf_counter() - started, storage


def seconds_per_trial(storage: str) -> pd.Series:
    """Mean seconds of a complete trial, per recommender (study names start with the registry key)."""
    rows = []
    store = open_storage(storage)
    for summary in optuna.get_all_study_summaries(store, include_best_trial=False):
        study = optuna.load_study(study_name=summary.study_name, storage=store)
        for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)):
            assert t.datetime_complete is not None and t.datetime_start is not None
            seconds = (t.datetime_complete - t.datetime_start).total_seconds()
            rows.append({"rs": summary.study_name.rsplit("-", 1)[0], "seconds": seconds})
    return pd.DataFrame(rows).groupby("rs")["seconds"].mean()


def default_epochs(name: str) -> int | None:
    """The epochs a recommender trains for when no budget fixes them (the ``paper`` budget of notebook 2)."""
    for cls in recommender_class(name).__mro__:
        param = inspect.signature(cls.__init__).parameters.get("epochs")
        if param is not None and isinstance(param.default, int):
            return param.default
    return None


def main() -> None:
    """Measure 1 and 2 workers, then print the paper-scale estimate."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--trials", type=int, default=6, help="TPE trials per recommender (default 6)")
    args = parser.parse_args()
    root = project_root()
    assert root is not None, "run from a checkout"
    values = notebook_parameters(root, "demo", {})
    ratings = len(load_dataset(values["dataset"], verbose=False).interactions)
    print(f"os.cpu_count() = {os.cpu_count()}; dataset {values['dataset']} ({ratings:,} ratings), one fold, ")
    print(f"{len(values['recommenders'])} recommenders x {args.trials} trials, train_budget small ({NOTEBOOK})")
    with tempfile.TemporaryDirectory() as tmp:
        one, storage_one = wall_time(1, args.trials, Path(tmp))
        two, _ = wall_time(2, args.trials, Path(tmp))
        per_trial = seconds_per_trial(storage_one)
    speedup = one / two
    predicted = args.trials / (math.ceil(args.trials / 2) + 1)
    contention = min(1.0, speedup / predicted)
    print(
        f"1 worker: {one:.1f} s   2 workers: {two:.1f} s   ratio 1/2: {speedup:.2f} "
        f"(the model above predicts {predicted:.2f} for {args.trials} trials: contention factor {contention:.2f})"
    )
    small = training_budget("reevaluation", "small")
    scale = ML_1M_RATINGS / ratings
    rows = []
    for rs, seconds in per_trial.items():
        epochs, fixed = default_epochs(str(rs)), small.get(str(rs), {}).get("epochs")
        factor = scale * (epochs / fixed if epochs and fixed else 1.0)
        rows.append({"rs": rs, "s/trial measured": seconds, "x factor": factor, "s/trial paper est.": seconds * factor})
    table = pd.DataFrame(rows)
    print(table.to_string(index=False, float_format=lambda v: f"{v:,.2f}"))
    # Pop and Random have no search space (one fit each, negligible); the six tuned ones make the paper's trials
    per_study = table["s/trial paper est."].sum() * PAPER["folds"]  # one trial of every study
    print(
        f"paper tuning ({len(table)} tuned of {PAPER['recommenders']} recommenders x {PAPER['folds']} folds x "
        f"{PAPER['trials']} trials, ML-1M, paper budget), extrapolated from {values['dataset']}: "
        f"{per_study * PAPER['trials'] / 3600:,.1f} h of trials"
    )
    for workers in (1, 4, 16):
        rounds = PAPER["trials"] if workers == 1 else math.ceil(PAPER["trials"] / workers) + 1
        wall = per_study * rounds / (1.0 if workers == 1 else contention)
        print(f"  {workers:>2} worker(s) on {workers} cores: ~{wall / 3600:,.1f} h")


if __name__ == "__main__":
    main()
