"""Prompt selection for the serendipity judge (paper: serendipity-llm-judge, Sections 3-4, Table 1).

``run_prompt_selection(judge, pairs, PromptSelectionConfig(...))``: draw few-shot examples (two per level),
sample the judged pairs from the *other* users (no leakage), score every judged pair with every template,
compute MAE and three-class accuracy with CIs (and kappa) per template, the constant baselines any judge must
beat, and select the template with the lowest MAE. Tables and figures: :mod:`recjudge_utils.reporting.prompt_selection`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from recjudge_utils.data import SerendipityPairs
from recjudge_utils.judge.types import Judge
from recjudge_utils.metrics import judge_scores as js
from recjudge_utils.protocols.few_shot import sample_eval_pairs, select_few_shot_examples
from recjudge_utils.protocols.pointwise_score import TEMPLATES, SerendipityJudge, save_selected_template
from recjudge_utils.reporting.display import data_label

__all__ = ["PromptSelectionConfig", "PromptSelectionRun", "run_prompt_selection", "save_selection"]


@dataclass(frozen=True)
class PromptSelectionConfig:
    """Demo defaults; paper scale is ``n_pairs=None`` (every pair not used for examples, 2,150 in the paper)."""

    templates: tuple[str, ...] = TEMPLATES
    n_pairs: int | None = 10
    n_history: int = 10
    n_shots: int = 10
    seed: int = 0
    n_boot: int = 2000

    def __post_init__(self) -> None:
        object.__setattr__(self, "templates", tuple(self.templates))
        unknown = set(self.templates) - set(TEMPLATES)
        if unknown:
            raise ValueError(f"unknown templates {sorted(unknown)}; choose from {TEMPLATES}")
        if self.n_shots % 5:
            raise ValueError("n_shots must be a multiple of 5 (the same number of examples for every score level)")
        if self.n_history < 1:
            raise ValueError("n_history must be >= 1")


@dataclass
class PromptSelectionRun:
    """Everything one run produced; the notebook shows it through the reporting module."""

    config: PromptSelectionConfig
    judge_name: str
    data: SerendipityPairs
    examples: pd.DataFrame
    eval_pairs: pd.DataFrame
    scores: dict[str, pd.DataFrame]
    summary: pd.DataFrame  # one row per template: MAE / acc3 with CIs, kappa, unparsed, usage
    baselines: pd.DataFrame  # constant predictors on the same pairs
    selected: str
    overlapping: list[str]  # templates whose MAE CI overlaps the selected one's
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def data_label(self) -> str:
        return data_label(self.data.label, self.data.is_real)

    @property
    def truth(self) -> np.ndarray:
        return self.eval_pairs["g"].to_numpy(dtype=float)


def run_prompt_selection(
    judge: Judge, data: SerendipityPairs, config: PromptSelectionConfig | None = None
) -> PromptSelectionRun:
    """Score the judged pairs with every template and select the one with the lowest MAE."""
    cfg = config or PromptSelectionConfig()
    examples = select_few_shot_examples(data.pairs, data.items, n_per_level=cfg.n_shots // 5, seed=cfg.seed)
    example_users = set(examples["user"])
    eval_pairs = sample_eval_pairs(data.pairs, cfg.n_pairs, exclude_users=example_users, seed=cfg.seed)
    if set(eval_pairs["user"]) & example_users:
        raise AssertionError("few-shot leakage: a judged user is also an example user")

    scores: dict[str, pd.DataFrame] = {}
    timings: dict[str, float] = {}
    for t in cfg.templates:
        started = time.perf_counter()
        scorer = SerendipityJudge(judge, template=t, examples=examples, n_history=cfg.n_history, seed=cfg.seed)
        scores[t] = scorer.score(eval_pairs, data.items)
        timings[t] = time.perf_counter() - started

    truth = eval_pairs["g"].to_numpy(dtype=float)
    summary = js.summarize_templates(scores, truth, n_boot=cfg.n_boot, seed=cfg.seed)
    summary["wall_s"] = pd.Series(timings).round(1)

    rest = data.pairs.loc[~data.pairs.index.isin(eval_pairs.index), "g"]
    majority = int(rest.value_counts().sort_index().idxmax())
    constants = {
        f"constant {majority} (majority g of unjudged pairs)": js.constant_predictions(truth, majority),
        "constant 3 (neutral)": js.constant_predictions(truth, 3),
    }
    baselines = pd.DataFrame(
        {
            name: js.summarize_predictions(pred, truth, n_boot=cfg.n_boot, seed=cfg.seed)
            for name, pred in constants.items()
        }
    ).T

    ranked = summary[summary["n_parsed"] > 0].sort_values(["mae", "unparsed_rate"])
    if ranked.empty:
        raise RuntimeError("no template produced a single parsed answer: nothing to select")
    selected = str(ranked.index[0])
    best = ranked.iloc[0]
    overlapping = [str(t) for t in ranked.index[1:] if ranked.loc[t, "mae_lo"] <= best["mae_hi"]]
    return PromptSelectionRun(
        config=cfg,
        judge_name=judge.model_name,
        data=data,
        examples=examples,
        eval_pairs=eval_pairs,
        scores=scores,
        summary=summary,
        baselines=baselines,
        selected=selected,
        overlapping=overlapping,
        timings=timings,
    )


def save_selection(run: PromptSelectionRun, path: str | Path | None = None) -> Path:
    """Write the selected template (with its MAE, judge, data and examples) where notebook 2 reads it."""
    best = run.summary.loc[run.selected]
    cfg = run.config
    return save_selected_template(
        run.selected,
        path,
        mae=float(best["mae"]),
        mae_ci=[float(best["mae_lo"]), float(best["mae_hi"])],
        acc3=float(best["acc3"]),
        unparsed_rate=float(best["unparsed_rate"]),
        judge_model=run.judge_name,
        data=run.data_label,
        data_is_real=bool(run.data.is_real),
        n_pairs=len(run.eval_pairs),
        n_shots=int(cfg.n_shots),
        n_history=int(cfg.n_history),
        seed=int(cfg.seed),
        examples=run.examples[["user", "item", "g", "relevance", "unexpectedness"]].to_dict("records"),
    )
