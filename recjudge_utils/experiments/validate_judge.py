"""Chapter 8: is the judge good enough? A run's judgments set against people's labels of a random sample of them.

The pipeline, each step a function of :mod:`recjudge_utils.annotation`:

1. **the sample**: a random sample of one chapter's judgments of one kind, stratified by system, recorded in the run
   (:func:`~recjudge_utils.annotation.export.export_tasks`, which also writes the Label Studio import and the CSV
   sheet); a sample the run already records is kept when people's labels are given, since they labelled that one;
2. **the labels**: people's (a Label Studio export or a filled sheet, ``labels``), or, without people, simulated
   annotators of known noise around the truth the run recorded, written as both files a team writes and read back
   through the same reader, the two readings checked equal;
3. **agreement with people**: the annotators among themselves (the ceiling) and the judge against their consensus,
   over all systems and per system;
4. **the users' own ratings**: for scores, the judge against the ratings users gave the judged items after the
   chapter's training cut (:mod:`~recjudge_utils.annotation.ratings`): real people's, but not a random sample;
5. **system estimates**: human-only, judge-only and prediction-powered per system, the systems ranked and compared
   under each (Holm-corrected), and the labels-needed curve per system.

:func:`validate` runs all five and returns a :class:`JudgeValidation`; the chapter's words are in
:mod:`recjudge_utils.reporting.validate_judge`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from recjudge_utils.annotation.agreement_with_people import human_agreement, judge_agreement
from recjudge_utils.annotation.chapter_record import judgment_records
from recjudge_utils.annotation.export import export_tasks
from recjudge_utils.annotation.kinds import kind_named
from recjudge_utils.annotation.label_studio import write_label_studio
from recjudge_utils.annotation.ppi import labels_needed_curve, stratum_arrays, system_estimates
from recjudge_utils.annotation.ranking import compare_estimates, ranking_agreement, rankings
from recjudge_utils.annotation.ratings import RatingsComparison, judge_against_ratings
from recjudge_utils.annotation.read_labels import Labels, read_labels
from recjudge_utils.annotation.sample import AnnotationSample, load_units, read_sample, sample_path
from recjudge_utils.annotation.sheet import write_sheet
from recjudge_utils.annotation.simulated_annotators import (
    expected_consensus_means,
    simulate_labels,
    write_simulated_export,
    write_simulated_sheet,
)
from recjudge_utils.paths import MANIFEST_FILE, RUN_DIR_ENV, runs_dir

__all__ = [
    "NOTEBOOK",
    "CurveConfig",
    "JudgeValidation",
    "ValidateJudgeConfig",
    "judge_of",
    "resolve_run",
    "simulated_people_means",
    "tested_against",
    "validate",
]

#: this chapter's folder in a run (its annotation files, the simulated annotators' files)
NOTEBOOK = "08_validate_your_judge"
#: the null a duel's win rate is tested against (a tie is half a win): neither system preferred
_DUEL_NULL = 0.5


def tested_against(kind: str) -> float | None:
    """What each system's estimate is tested against: a duel's win rate against a coin; None: every two systems."""
    return _DUEL_NULL if kind == "duels" else None


@dataclass(frozen=True)
class CurveConfig:
    """The labels-needed curve: the labelled sample redrawn (with replacement) at ``fractions`` of its size."""

    fractions: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0)
    reps: int = 200


@dataclass(frozen=True)
class ValidateJudgeConfig:
    """What chapter 8 validates and how: the chapter and kind of judgments, the sample, the simulated annotators'
    noise (used only without people's labels), the bootstrap and the curve."""

    notebook: str = "07_your_recommenders"
    kind: str = "scores"
    per_system: int = 40
    seed: int = 0
    noises: tuple[float, ...] = (0.5, 0.7, 0.9)
    n_boot: int = 1000
    ci: float = 0.95
    curve: CurveConfig = field(default_factory=CurveConfig)

    def __post_init__(self) -> None:
        kind_named(self.kind)
        if self.per_system < 2:
            raise ValueError(f"per_system must be at least 2 (an interval needs two labels), got {self.per_system}")
        if not self.noises or any(n < 0 for n in self.noises):
            raise ValueError(f"noises must be non-negative, at least one, got {self.noises}")


@dataclass
class JudgeValidation:
    """Everything chapter 8 shows: the sample, the labels and where they came from, the agreement tables, the
    estimates and the decisions on them, the curve."""

    config: ValidateJudgeConfig
    run_dir: Path
    judge_name: str
    sample: AnnotationSample
    labels: Labels
    #: the files the labels were read from (the simulated annotators: both the export and the sheet)
    label_files: list[Path]
    #: the Label Studio import, its configuration and the sheet written for people
    task_files: list[Path]
    human: pd.DataFrame
    judge: pd.DataFrame
    estimates: pd.DataFrame
    ranks: pd.DataFrame
    rank_agreement: pd.DataFrame
    comparisons: dict[str, pd.DataFrame]
    curve: pd.DataFrame
    #: the judge against the users' own held-out ratings: None for lists and duels (no one rated them), a sentence
    #: when the run does not record the split its lists were made for
    ratings: RatingsComparison | str | None = None
    #: per system, what the SIMULATED annotators' consensus averages over every judged unit (system, people); empty
    #: for people's labels (:func:`simulated_people_means`)
    people_means: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["system", "people"]))

    @property
    def simulated(self) -> bool:
        return self.labels.simulated

    @property
    def null(self) -> float | None:
        """What each system is tested against (:func:`tested_against`)."""
        return tested_against(self.config.kind)


def simulated_people_means(sample: AnnotationSample, labels: Labels, config: ValidateJudgeConfig) -> pd.DataFrame:
    """Per system, what the simulated annotators' consensus averages over every judged unit (system, people): the
    value the human-only and prediction-powered estimates aim at, known only because the annotators are simulated
    (:func:`~recjudge_utils.annotation.simulated_annotators.expected_consensus_means`). Empty for people's labels."""
    if not labels.simulated:
        return pd.DataFrame(columns=["system", "people"])
    means = expected_consensus_means(sample, config.noises, seed=config.seed)
    return pd.DataFrame({"system": list(means), "people": list(means.values())})


def resolve_run(run: str | Path | None) -> Path:
    """The run folder validated: ``None`` the run executing this chapter (the book runner's), else a name under
    ``runs/`` or a folder; ValueError saying what was looked for when there is none."""
    if run is None:
        here = Path(os.environ[RUN_DIR_ENV]) if os.environ.get(RUN_DIR_ENV) else None
        if here is None or not here.is_dir():
            raise ValueError(
                "run=None validates the run executing this chapter, and none is: give run= a run name under "
                f"{runs_dir()} or a run folder"
            )
        return here
    path = Path(run)
    for candidate in (runs_dir() / str(run), path):
        if candidate.is_dir():
            return candidate
    raise ValueError(f"no run {str(run)!r}: neither {runs_dir() / str(run)} nor {path.resolve()} is a folder")


def judge_of(run_dir: Path, notebook: str) -> str:
    """The judge that made the chapter's latest judgments: its model name as the judgment log records it (an earlier
    execution's records, before the manifest's ``judgments_from``, may be another judge's)."""
    try:
        records = judgment_records(run_dir, notebook)
    except FileNotFoundError:
        return "unknown judge"
    first = records[0] if records else {}
    return str(first.get("model_name") or first.get("model") or "unknown judge")


def _check_judge(run_dir: Path, judge: str | Mapping[str, Any] | None) -> None:
    """A named judge profile must be the one the run's manifest names (the runner passes this run's own)."""
    if judge is None:
        return
    wanted = judge.get("name") if isinstance(judge, Mapping) else str(judge)
    manifest = run_dir / MANIFEST_FILE
    if not manifest.is_file():
        return
    recorded = (json.loads(manifest.read_text(encoding="utf-8")).get("judge") or {}).get("name")
    if recorded and wanted and recorded != wanted:
        raise ValueError(
            f"judge {wanted!r} did not judge run {run_dir.name!r} ({manifest} names {recorded!r}): chapter 8 validates "
            "the answers a run recorded; run the chapter with that judge first, or give judge=None"
        )


def _recorded_sample(run_dir: Path, config: ValidateJudgeConfig) -> AnnotationSample:
    """The sample people labelled, checked against the run's judgments as they are now."""
    path = sample_path(run_dir, config.notebook, config.kind)
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: the run records no sample of {config.kind} for {config.notebook}, so there is nothing people's "
            f"labels can be read against: draw one with python -m recjudge_utils.annotation export {run_dir} "
            f"--notebook {config.notebook} --kind {config.kind} --per-system N --out DIR, and label that"
        )
    sample = read_sample(path)
    _, units = load_units(run_dir, config.notebook, config.kind, template=sample.template)
    now = {u.task_id: u.judge_label for u in units if u.judge_label is not None}
    changed = sorted(t for t, label in sample.judge_labels.items() if now.get(t) != label)
    if changed or set(now) != set(sample.judge_labels):
        first = changed[0] if changed else sorted(set(now) ^ set(sample.judge_labels))[0]
        raise ValueError(
            f"{path}: the run's judgments of {config.notebook} changed since this sample was drawn (first {first!r}): "
            "the sample's population and inclusion probabilities no longer describe them; validate the run the "
            "sample was drawn from"
        )
    return sample


def _simulated_labels(sample: AnnotationSample, config: ValidateJudgeConfig, folder: Path) -> tuple[Labels, list[Path]]:
    """Simulated annotators written as a Label Studio export and a sheet, both read back; the export's labels, after
    checking the sheet reads the same (two files, one reader each: a difference is a bug in one of them)."""
    drawn = simulate_labels(sample, config.noises, seed=config.seed)
    export = write_simulated_export(sample, drawn, folder / f"SIMULATED-{config.kind}-label-studio-export.json")
    sheet = write_simulated_sheet(sample, drawn, folder / f"SIMULATED-{config.kind}-sheet.csv")
    from_export, from_sheet = read_labels(export, sample), read_labels(sheet, sample)
    if not from_export.frame.equals(from_sheet.frame):
        raise RuntimeError(f"{export} and {sheet} hold the same simulated labels but read back differently")
    return from_export, [export, sheet]


def _curve(labels: Labels, sample: AnnotationSample, config: ValidateJudgeConfig) -> pd.DataFrame:
    """Per system with at least 2 labelled tasks and some unlabelled one, CI widths against the number of labels."""
    frames = []
    for system in sorted(sample.members):
        y, yhat, rest = stratum_arrays(labels, sample, system)
        if len(y) < 2 or not len(rest):
            continue
        sizes = sorted({max(2, round(len(y) * f)) for f in config.curve.fractions})
        curve = labels_needed_curve(y, yhat, rest, sizes, reps=config.curve.reps, ci=config.ci, seed=config.seed)
        frames.append(curve.assign(system=system, labelled=len(y)))
    columns = ["system", "labelled", "n", "human_width", "ppi_width"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def _ratings(run_dir: Path, config: ValidateJudgeConfig, template: str) -> RatingsComparison | str | None:
    """The judge against the users' held-out ratings (scores only: None otherwise), or why the run's record does not
    say which cut its lists were made at (the comparison never guesses one)."""
    if config.kind != "scores":
        return None
    try:
        return judge_against_ratings(
            run_dir, config.notebook, template=template, n_boot=config.n_boot, seed=config.seed
        )
    except ValueError as exc:
        return str(exc)


def validate(
    run: str | Path | None,
    config: ValidateJudgeConfig,
    labels: str | Path | None = None,
    judge: str | Mapping[str, Any] | None = None,
) -> JudgeValidation:
    """Chapter 8 on ``run`` (see :func:`resolve_run`): with ``labels`` (a Label Studio export or a filled sheet of
    the sample the run records) people's; without, simulated annotators'. Bad labels are refused (the reader's
    :class:`~recjudge_utils.data._common.DataFormatError`) before anything is computed."""
    run_dir = resolve_run(run)
    _check_judge(run_dir, judge)
    folder = run_dir / NOTEBOOK / "annotation"
    folder.mkdir(parents=True, exist_ok=True)
    if labels is not None:
        sample = _recorded_sample(run_dir, config)
        read = read_labels(labels, sample)
        task_files = [*write_label_studio(sample, folder), write_sheet(sample, folder)]
        label_files = [Path(labels)]
    else:  # drawn afresh from the judgments as they are: nobody labels a simulated run's sample
        exported = export_tasks(
            run_dir, config.notebook, config.kind, per_system=config.per_system, seed=config.seed, out_dir=folder,
            replace=True,
        )  # fmt: skip
        sample = exported.sample
        task_files = [exported.tasks_path, exported.config_path, exported.sheet_path]
        read, label_files = _simulated_labels(sample, config, folder)
    estimates = system_estimates(read, sample, ci=config.ci)
    null = tested_against(config.kind)
    comparisons = {name: compare_estimates(estimates, name, null=null, ci=config.ci) for name in ("ppi", "human")}
    return JudgeValidation(
        config=config,
        run_dir=run_dir,
        judge_name=judge_of(run_dir, config.notebook),
        sample=sample,
        labels=read,
        label_files=label_files,
        task_files=task_files,
        human=human_agreement(read, config.kind, n_boot=config.n_boot, seed=config.seed),
        judge=judge_agreement(read, sample, n_boot=config.n_boot, seed=config.seed),
        estimates=estimates,
        ranks=rankings(estimates),
        rank_agreement=ranking_agreement(estimates),
        comparisons=comparisons,
        curve=_curve(read, sample, config),
        ratings=_ratings(run_dir, config, sample.template),
        people_means=simulated_people_means(sample, read, config),
    )
