"""``python -m recjudge_utils.book tune``: a tuning worker for the studies notebook 2 runs, sharing them through one
Optuna storage with any number of other workers (on this machine or others).

    python -m recjudge_utils.book tune --storage journal:///shared/optuna.log --scale paper --dataset ml-1m
    python -m recjudge_utils.book tune --storage postgresql://USER@HOST/optuna --scale paper --dataset ml-1m

A worker resolves notebook 2's parameters as the book runner does (the notebook's defaults, then ``--scale``,
then ``-p``), so it tunes exactly the studies the notebook would: the same folds, recommenders, trials, seed and
fixed budgets, hence the same study names and artifact keys. It goes through the studies in the notebook's order
(:func:`recjudge_utils.experiments.reevaluation.tune_studies`), joins each one that is not complete, runs trials
until the study holds ``n_trials`` complete ones, stores the tuned model in this machine's artifact store and
moves on; it exits 0 when every study is complete. The notebook run afterwards with the same storage runs no
trial: it loads the stored models or refits the best parameters.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from recjudge_utils.book.notebooks import parameter_cell, unknown_parameters_message
from recjudge_utils.book.scales import scale_parameters

__all__ = ["NOTEBOOK", "TuningIncomplete", "WorkerReport", "notebook_parameters", "tune_worker"]

#: the notebook whose studies the workers tune
NOTEBOOK = "02_rs_reevaluation"


class TuningIncomplete(RuntimeError):
    """A study is still short of its trials after the worker finished (exit code 1)."""


@dataclass
class WorkerReport:
    """What one worker did: per fold and RS the study, its complete trials and the trials run here; seconds."""

    storage: str
    dataset: str
    studies: pd.DataFrame
    seconds: float

    def text(self) -> str:
        """The summary printed at the end: studies, trials completed by this worker, seconds."""
        s = self.studies
        tuned = s[s["study"].notna()] if len(s) else s
        lines = [
            f"storage {self.storage}, dataset {self.dataset}: {len(tuned)} studies complete "
            f"({len(s) - len(tuned)} recommenders without a search space or with n_trials 0 fitted directly)",
            f"this worker completed {int(s['run here'].sum()) if len(s) else 0} trials in {self.seconds:.1f} s; "
            f"{int(s['loaded'].sum()) if len(s) else 0} models were already in this machine's artifact store",
        ]
        if len(tuned):
            table = tuned[["fold", "rs", "study", "n_trials", "complete", "run here", "loaded"]]
            lines.append(table.to_string(index=False))
        return "\n".join(lines)


def notebook_parameters(root: Path, scale: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """Notebook 2's parameters as the book runner gives them: its declared defaults, then ``scale``, then
    ``parameters`` (each must be declared by the notebook)."""
    notebook = root / "notebooks" / f"{NOTEBOOK}.ipynb"
    declared = {p.name: p for p in parameter_cell(notebook)}
    unknown = sorted(set(parameters) - set(declared))
    if unknown:
        raise ValueError(unknown_parameters_message(unknown, declared, [NOTEBOOK]))
    values = {name: p.value for name, p in declared.items() if p.literal}
    return {**values, **scale_parameters(scale, notebook.name), **parameters}


def tune_worker(
    root: Path,
    storage: str,
    *,
    scale: str = "demo",
    parameters: Mapping[str, Any] | None = None,
    dataset: str | None = None,
    folds: Sequence[int] | None = None,
) -> WorkerReport:
    """Tune (join) every study notebook 2 would run with these parameters in ``storage``; raise
    :class:`TuningIncomplete` if one is still short of its trials at the end."""
    # imported here: the command line imports this module for every command, and these load the experiments
    from recjudge_utils.data import load_dataset
    from recjudge_utils.experiments.reevaluation import ReevaluationConfig, tune_studies

    values = notebook_parameters(root, scale, dict(parameters or {}))
    given = (parameters or {}).get("optuna_storage")
    if given is not None and given != storage:
        raise ValueError("give the storage once: --storage URL (not also -p optuna_storage)")
    if dataset is not None:
        values["dataset"] = dataset
    values["optuna_storage"] = storage
    fields = {f.name for f in dataclasses.fields(ReevaluationConfig)}
    config = ReevaluationConfig(**{name: value for name, value in values.items() if name in fields})
    data = load_dataset(str(values["dataset"]), verbose=False)
    started = time.perf_counter()
    studies = tune_studies(data.interactions, config, storage, folds, threshold=data.positive_threshold)
    report = WorkerReport(storage, str(values["dataset"]), studies, time.perf_counter() - started)
    if len(studies):
        short = studies[studies["study"].notna() & ~studies["loaded"] & (studies["complete"] < studies["n_trials"])]
        if len(short):
            raise TuningIncomplete(
                f"{len(short)} studies are short of their trials after this worker: {short['study'].tolist()}"
            )
    return report
