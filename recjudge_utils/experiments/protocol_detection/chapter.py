"""The chapter: its two datasets (:class:`DetectionData`), every study run in turn (:func:`run`) into one
:class:`DetectionRun`, and the results it writes."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import pandas as pd

from recjudge_utils.data import Dataset, SerendipityPairs
from recjudge_utils.experiments.protocol_detection.arena_bias import arena_position_bias
from recjudge_utils.experiments.protocol_detection.config import (
    BOOT,
    WILSON,
    DetectionConfig,
)
from recjudge_utils.experiments.protocol_detection.coverage import ci_coverage
from recjudge_utils.experiments.protocol_detection.judges import sweep_judges
from recjudge_utils.experiments.protocol_detection.noise import serendipity_noise
from recjudge_utils.experiments.protocol_detection.panels import judge_panels
from recjudge_utils.experiments.protocol_detection.reevaluation_noise import (
    ReevalDetection,
    reevaluation_noise,
)
from recjudge_utils.experiments.protocol_detection.saer_safeguards import SaerDetection, saer_protocols
from recjudge_utils.experiments.protocol_detection.separation import Separation, pairs_to_separate
from recjudge_utils.experiments.run import Result, Run, result
from recjudge_utils.judge.backends.sim import SimParameters
from recjudge_utils.judge.types import Judge
from recjudge_utils.metrics import judge_scores as js


@dataclass(frozen=True)
class DetectionData:
    """The chapter's two datasets: judged serendipity pairs (chapter 1's) and a ratings dataset (chapters 2-4's)."""

    pairs: SerendipityPairs
    dataset: Dataset

    @property
    def display_label(self) -> str:
        """Both datasets' labels, each marked ``[STAND-IN]`` when it is not the paper's data."""
        return f"{self.pairs.display_label}; {self.dataset.display_label}"


@dataclass(kw_only=True)
class DetectionRun(Run):
    """The six studies of what each protocol detects, all judged by the simulated judge."""

    experiment: ClassVar[str] = "protocol_detection"

    config: DetectionConfig
    noise: pd.DataFrame
    coverage: pd.DataFrame
    separation: Separation
    arena: pd.DataFrame
    saer: SaerDetection
    reevaluation: ReevalDetection
    panels: pd.DataFrame

    def results(self) -> list[Result]:
        """MAE per score noise with its bootstrap CI, and the coverage of each CI method per sample size."""
        out = [
            result("mae", r["value"], r["low"], r["high"], r["n"], BOOT, noise=float(noise))
            for noise, r in js.measure_by(self.noise, "mae", "noise").iterrows()
        ]
        out += [
            result("ci_coverage", r["value"], r["low"], r["high"], r["n"], "95% Wilson", n_pairs=int(r["pairs"]),
                   interval_of=str(r["interval"]))
            for _, r in self.coverage.loc[self.coverage["measure"] == "coverage"].iterrows()
        ]  # fmt: skip
        panels = self.panels.set_index(["condition", "measure"])
        out += [
            result(f"panel_{m}", r["value"], r["low"], r["high"], r["n"], interval, condition=str(condition))
            for condition in dict.fromkeys(self.panels["condition"])
            for m, interval in (("acc3", WILSON), ("kappa", BOOT), ("bias", BOOT), ("consistency", WILSON))
            for r in [panels.loc[(condition, m)]]
        ]
        return out


def run(judge: Judge, data: DetectionData, config: DetectionConfig) -> DetectionRun:
    """Every study of the chapter, each judged by simulated judges derived from ``judge`` (a client over the
    simulated backend: :func:`sweep_judges`) with the error model the study sweeps."""
    if not config.reeval_noise:
        raise ValueError("reeval_noise needs at least one noise level")
    sim = sweep_judges(judge)
    judge_name = SimParameters().describe()  # the studies' judges: perfect but for the error each one sweeps
    timings: dict[str, float] = {}

    def timed(step: str, fn: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        out = fn()
        timings[step] = time.perf_counter() - started
        return out

    return DetectionRun(
        config=config,
        judge_name=judge_name,
        data_label=data.display_label,
        timings=timings,
        noise=timed("judge serendipity noise", lambda: serendipity_noise(sim, data.pairs, config)),
        coverage=timed("judge ci coverage", lambda: ci_coverage(sim, data.pairs, config)),
        separation=timed("judge template separation", lambda: pairs_to_separate(sim, data.pairs, config)),
        arena=timed("judge arena position bias", lambda: arena_position_bias(sim, data.dataset, config)),
        saer=timed("judge saer protocols", lambda: saer_protocols(sim, data.dataset, config)),
        reevaluation=timed("judge reevaluation noise", lambda: reevaluation_noise(sim, data.dataset, config)),
        panels=timed("judge panels", lambda: judge_panels(judge, data.pairs, data.dataset, config)),
    )
