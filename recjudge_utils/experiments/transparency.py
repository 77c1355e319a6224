"""RecSys Arena's transparency experiment (Sec. 4.2.2, Fig. 5): can the judge see which features a model used?

``run(judge, dataset, TransparencyConfig(...))``: DeepFM is trained twice on chapter 3's split, with user features
(age, gender, occupation, genres) and with user and item ids only (the paper's two models); both are judged pairwise,
in both orders, with chapter 3's full six-aspect prompt (the paper reads the Transparency aspect of that judgment,
Fig. 5), for the same judged users as :func:`recjudge_utils.experiments.arena.run` (the same parameters, same seed),
through the arena's own steps. The tables read the Transparency verdict and the overall one of each answer.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import pandas as pd

from recjudge_utils.answer_formats.arena_verdicts import OVERALL
from recjudge_utils.data import Dataset
from recjudge_utils.experiments import arena
from recjudge_utils.experiments.arena import ArenaConfig, ArenaSample
from recjudge_utils.experiments.run import Result, Run, result
from recjudge_utils.judge.types import Judge
from recjudge_utils.protocols.pairwise import games

__all__ = ["KEYS", "TRANSPARENCY_MODELS", "TransparencyConfig", "TransparencyRun", "run"]

#: the two DeepFM models (x with user features, y with ids only) and the parameters that make them differ
TRANSPARENCY_MODELS = {"deepfm+features": {"use_side_features": True}, "deepfm-ids": {"use_side_features": False}}
#: the verdicts read from each six-aspect answer
KEYS = ("transparency", OVERALL)
#: the measures of :attr:`TransparencyRun.outcomes` that ``results.json`` carries: measure -> (metric, interval method)
_HEADLINE = {"win": ("transparency_win_pct", "95% Wilson"), "Q": ("transparency_Q", "95% percentile bootstrap")}


@dataclass(frozen=True)
class TransparencyConfig:
    """Chapter 3's parameters this experiment uses (same names, same defaults): it always asks the prompt's six
    aspects in both orders, so ``aspects`` and ``both_orders`` are not among them."""

    top_k: int = 5
    n_users: int = 2  # judged users (the same draw as chapter 3's run); 0 = every user with test items
    n_history: int = 10
    n_test: int = 10
    train_budget: str = "small"
    n_boot: int = 2000
    seed: int = 0

    @property
    def main_source(self) -> str:
        """The view the takeaway reads: adjudicated (both orders are always judged)."""
        return "adjudicated"

    def arena(self) -> ArenaConfig:
        """The config of the arena steps run here: six aspects (None: the prompt file's), both orders."""
        return ArenaConfig(aspects=None, both_orders=True, **asdict(self))


@dataclass(kw_only=True)
class TransparencyRun(Run):
    """DeepFM with user features (x) against DeepFM with ids only (y), judged on all six aspects; the Transparency
    and overall verdicts are read."""

    experiment: ClassVar[str] = "arena_transparency"

    config: TransparencyConfig
    sample: ArenaSample
    raw: pd.DataFrame  # one row per (user, order): every aspect's verdict, with the judge's analyses
    adjudicated: pd.DataFrame
    outcomes: pd.DataFrame  # Win/Tie/Lose %, Q and CIs per aspect (transparency, overall), source and measure

    def results(self) -> list[Result]:
        """Win % and Q (with CIs) of the features model per aspect and source, named apart from chapter 3's own
        ``win_pct`` and ``Q`` (both runs write the chapter's ``results.json``)."""
        out = []
        for r in self.outcomes.to_dict("records"):
            if r["measure"] in _HEADLINE:
                metric, method = _HEADLINE[r["measure"]]
                group = {"aspect": str(r["aspect"]), "source": str(r["source"])}
                out.append(result(metric, r["value"], r["low"], r["high"], r["n"], method, **group))
        return out

    def items(self) -> dict[str, list[dict[str, Any]]]:
        """The transparency outcome for the features model, per user and order."""
        raw = self.raw
        return {
            "transparency": [
                {"user": int(u), "order": str(o), "label": None if pd.isna(v) else str(v)}
                for u, o, v in zip(raw["user"], raw["order"], raw["transparency"], strict=True)
            ]
        }


def run(judge: Judge, dataset: Dataset, config: TransparencyConfig) -> TransparencyRun:
    """Train both DeepFM models, judge them against each other in both orders with the full six-aspect prompt, and
    compute the tables' numbers from the Transparency and overall verdicts."""
    cfg = config.arena()
    timings: dict[str, float] = {}
    train, test = arena.split(dataset, cfg)
    fitted = arena.train_models(dataset, train, {n: ("deepfm", extra) for n, extra in TRANSPARENCY_MODELS.items()}, cfg)
    models = {name: fit.model for name, fit in fitted.items()}
    timings.update({f"train {name}": fit.seconds for name, fit in fitted.items()})
    sample = arena.build_sample(dataset, models, train, test, cfg)
    x, y = TRANSPARENCY_MODELS
    comparisons = pd.DataFrame({"user": sample.users, "x": x, "y": y})
    t0 = time.perf_counter()
    raw, _ = arena.judge_comparisons(judge, sample, comparisons, cfg, with_analysis=True)
    timings["judge pairwise"] = time.perf_counter() - t0
    adjudicated = games(raw, KEYS)
    return TransparencyRun(
        config=config,
        judge_name=judge.model_name,
        data_label=dataset.display_label,
        timings=timings,
        sample=sample,
        raw=raw,
        adjudicated=adjudicated,
        outcomes=arena.outcome_tables(raw, adjudicated, KEYS, cfg.sources, cfg.n_boot, cfg.seed),
    )
