"""Simulated annotators: people of known noise around the truth the simulated world recorded, written through the
files a real team writes (a Label Studio JSON export and the CSV sheet) so that they are read back exactly as a
team's labels are (:mod:`~recjudge_utils.annotation.read_labels`).

The truth of a task is the label the run's requests carried as truth (``truth`` in ``judgments.jsonl``: the
serendipity level, the list's SAER level, the preferred side of a duel), recorded in the sample. An annotator of
noise ``s`` gives the label ``s`` * a standard normal draw away from the truth on the kind's ordered labels, rounded
and kept on the scale (``s`` = 0: the truth itself). Every name is ``SIMULATED-annotator-<i>`` and every annotation,
task and sheet row carries ``simulated: true``, so they are never taken for people.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from recjudge_utils.annotation.kinds import kind_named
from recjudge_utils.annotation.label_studio import task_data
from recjudge_utils.annotation.sample import AnnotationSample
from recjudge_utils.annotation.sheet import sheet_columns

__all__ = [
    "SIMULATED_PREFIX",
    "SimulatedAnnotator",
    "expected_consensus_means",
    "simulate_labels",
    "write_simulated_export",
    "write_simulated_sheet",
]

SIMULATED_PREFIX = "SIMULATED"
_CREATED = "2026-01-01T00:00:00.000000Z"


@dataclass(frozen=True)
class SimulatedAnnotator:
    """One simulated person: a name that says so, and the spread of their labels around the truth."""

    index: int
    noise: float

    @property
    def name(self) -> str:
        return f"{SIMULATED_PREFIX}-annotator-{self.index}"


def simulate_labels(
    sample: AnnotationSample, noises: Sequence[float] = (0.5, 0.7, 0.9), seed: int = 0
) -> dict[str, dict[str, str]]:
    """annotator name -> task id -> label, one annotator per noise level; ValueError when a task has no truth."""
    spec = kind_named(sample.kind)
    missing = [t.task_id for t in sample.tasks if t.task_id not in sample.truth]
    if missing:
        raise ValueError(
            f"no recorded truth for {len(missing)} tasks (first {missing[0]!r}): the run's requests "
            "carried none, so there is nothing to simulate annotators around"
        )
    rng = np.random.default_rng(seed)
    out: dict[str, dict[str, str]] = {}
    truth = np.array([spec.labels.index(sample.truth[t.task_id]) for t in sample.tasks])
    for index, noise in enumerate(noises, start=1):
        codes = _noisy_codes(truth, float(noise), len(spec.labels) - 1, rng)
        name = SimulatedAnnotator(index, float(noise)).name
        out[name] = {t.task_id: spec.labels[c] for t, c in zip(sample.tasks, codes, strict=True)}
    return out


def _noisy_codes(truth: np.ndarray, noise: float, top: int, rng: np.random.Generator) -> np.ndarray:
    """One annotator's label codes: the truth's code moved by ``noise`` * a standard normal draw, rounded, clipped."""
    return np.clip(np.rint(truth + noise * rng.standard_normal(truth.shape)), 0, top).astype(int)


def expected_consensus_means(
    sample: AnnotationSample, noises: Sequence[float] = (0.5, 0.7, 0.9), reps: int = 200, seed: int = 0
) -> dict[str, float]:
    """Per stratum, what these simulated annotators' consensus (the median label) averages over *every* judged unit
    of the system, in the kind's values, by ``reps`` draws: the value the human-only and prediction-powered
    estimates aim at. It is not the recorded truth's mean: labels near the ends of the scale can only move inwards,
    so noisy people's mean sits off the truth's, and an estimate of their mean should cover theirs. NaN for a
    stratum with a unit without truth."""
    spec = kind_named(sample.kind)
    values = np.array(spec.values)
    rng = np.random.default_rng(seed)
    out: dict[str, float] = {}
    for stratum, members in sorted(sample.members.items()):
        if any(t not in sample.truth for t in members):
            out[stratum] = float("nan")
            continue
        truth = np.array([spec.labels.index(sample.truth[t]) for t in members])
        draws = np.stack([_noisy_codes(np.tile(truth, (reps, 1)), float(n), len(values) - 1, rng) for n in noises])
        lower_middle = (len(noises) - 1) // 2  # median_label's rule for an even count of annotators
        out[stratum] = float(values[np.sort(draws, axis=0)[lower_middle]].mean())
    return out


def write_simulated_export(sample: AnnotationSample, labels: dict[str, dict[str, str]], path: str | Path) -> Path:
    """``labels`` as a Label Studio JSON export of the sample's project (the shape :mod:`read_labels` reads)."""
    spec = kind_named(sample.kind)
    users = {name: number for number, name in enumerate(labels, start=1)}
    tasks = []
    for number, task in enumerate(sample.tasks, start=1):
        annotations = [
            {
                "id": number * 100 + users[name],
                "completed_by": {"id": users[name], "email": name},  # the name the sheet gives, read back alike
                "was_cancelled": False,
                "simulated": True,
                "created_at": _CREATED,
                "updated_at": _CREATED,
                "result": [
                    {
                        "from_name": spec.control,
                        "to_name": "case",
                        "type": "choices",
                        "value": {"choices": [by_task[task.task_id]]},
                    }
                ],
            }
            for name, by_task in labels.items()
            if task.task_id in by_task
        ]
        tasks.append(
            {
                "id": number,
                "data": task_data(task, sample.kind),
                "meta": {"simulated": True},
                "annotations": annotations,
            }
        )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(tasks, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def write_simulated_sheet(sample: AnnotationSample, labels: dict[str, dict[str, str]], path: str | Path) -> Path:
    """``labels`` as the CSV sheet filled in: one row per (task, annotator), with a ``simulated`` column."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=[*sheet_columns(sample.kind), "simulated"])
        writer.writeheader()
        for task in sample.tasks:
            for name, by_task in labels.items():
                if task.task_id in by_task:
                    writer.writerow(
                        {
                            **task_data(task, sample.kind),
                            "annotator": name,
                            "label": by_task[task.task_id],
                            "simulated": "true",
                        }
                    )
    return path
