"""Prompt selection for the serendipity judge (paper: serendipity-llm-judge, Sections 3-4, Table 1).

``run(judge, pairs, PromptSelectionConfig(...))``: draw few-shot examples (two per level), sample the judged pairs
from the *other* users (no leakage), score every judged pair with every template, compute MAE and three-class
accuracy with CIs (and kappa) per template, the constant baselines any judge must beat, select the template with
the lowest MAE (an unparsed answer counted at its worst possible error, so a template cannot win by failing to
answer; with every answer parsed this is the paper's rule), and test it against each other template on the same
pairs. A run in which no template produced a parsed answer selects none (``selected is None``) and says so.
Tables and figures: :mod:`recjudge_utils.reporting.prompt_selection`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from recjudge_utils.data import SerendipityPairs
from recjudge_utils.experiments.run import Result, Run, result
from recjudge_utils.judge.types import Judge
from recjudge_utils.metrics import judge_scores as js
from recjudge_utils.metrics.pairwise import paired_difference
from recjudge_utils.protocols.few_shot import sample_eval_pairs, select_few_shot_examples
from recjudge_utils.protocols.pointwise_score import TEMPLATES, SerendipityJudge, save_selected_template

__all__ = ["PromptSelectionConfig", "PromptSelectionRun", "run", "save_selection", "select_template", "template_tests"]


@dataclass(frozen=True)
class PromptSelectionConfig:
    """Demo defaults; paper scale is ``n_pairs=None``: every pair of the users no few-shot example comes from (the
    paper judged all 2,150 pairs; the example users' pairs are left out here, so fewer are judged)."""

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


@dataclass(kw_only=True)
class PromptSelectionRun(Run):
    """Everything one run produced; the notebook shows it through the reporting module."""

    experiment: ClassVar[str] = "prompt_selection"

    config: PromptSelectionConfig
    data: SerendipityPairs
    examples: pd.DataFrame
    eval_pairs: pd.DataFrame
    scores: dict[str, pd.DataFrame]
    summary: pd.DataFrame  # one row per template: MAE / acc3 with CIs, kappa, unparsed, usage
    baselines: pd.DataFrame  # constant predictors on the same pairs
    selected: str | None  # None: no template produced a single parsed answer
    overlapping: list[str]  # templates whose MAE CI overlaps the selected one's
    template_tests: pd.DataFrame  # the selected template against each other one (see :func:`template_tests`)

    @property
    def truth(self) -> np.ndarray:
        """The ground truth g of the judged pairs, aligned with every template's scores."""
        return self.eval_pairs["g"].to_numpy(dtype=float)

    def results(self) -> list[Result]:
        """Per template: MAE (bootstrap CI), accuracy (Wilson CI), kappa (bootstrap CI), unparsed; the selection."""
        out = []
        for t, r in self.summary.iterrows():
            boot = "95% percentile bootstrap"
            out.append(result("mae", r["mae"], r["mae_lo"], r["mae_hi"], r["n_parsed"], boot, template=str(t)))
            # a share over a few pairs: the Wilson interval (a bootstrap one collapses when every answer agrees)
            out.append(
                result("acc3", r["acc3"], r.get("acc3_wilson_lo"), r.get("acc3_wilson_hi"), r["n_parsed"],
                       "95% Wilson", template=str(t))
            )  # fmt: skip
            out.append(
                result("kappa_qw", r["kappa_qw"], r.get("kappa_lo"), r.get("kappa_hi"), r["n_parsed"],
                       "95% percentile bootstrap", template=str(t))
            )  # fmt: skip
            out.append(result("unparsed_rate", r["unparsed_rate"], n=r["n"], template=str(t)))
        if self.selected is not None:
            out.append(result("selected", float(TEMPLATES.index(self.selected)), template=self.selected))
        return out

    def items(self) -> dict[str, list[dict[str, Any]]]:
        """Every template's score of every judged pair (None when unparsed), with the pair's g."""
        return {
            "scores": [
                {
                    "template": t,
                    "user": int(u),
                    "item": int(i),
                    "label": None if np.isnan(s) else int(s),
                    "truth": int(g),
                }
                for t, frame in self.scores.items()
                for u, i, s, g in zip(frame["user"], frame["item"], frame["score"], self.eval_pairs["g"], strict=True)
            ]
        }


def template_tests(scores: dict[str, pd.DataFrame], truth: np.ndarray, selected: str, seed: int) -> pd.DataFrame:
    """The selected template against each other one, on the pairs both parsed: McNemar's exact test on three-class
    correctness (statsmodels), the paired MAE difference with its bootstrap CI, and Holm-adjusted p-values over
    the comparisons (``multipletests``)."""
    best = scores[selected]["score"].to_numpy(dtype=float)
    rows = []
    for t, frame in scores.items():
        if t == selected:
            continue
        other = frame["score"].to_numpy(dtype=float)
        both = ~np.isnan(best) & ~np.isnan(other)
        if both.sum() < 2:
            rows.append({"selected": selected, "other": t, "n both parsed": int(both.sum())})
            continue
        right_a = np.sign(best[both] - 3) == np.sign(truth[both] - 3)
        right_b = np.sign(other[both] - 3) == np.sign(truth[both] - 3)
        table = [
            [int(np.sum(right_a & right_b)), int(np.sum(right_a & ~right_b))],
            [int(np.sum(~right_a & right_b)), int(np.sum(~right_a & ~right_b))],
        ]
        test = mcnemar(table, exact=True)
        diff = paired_difference(np.abs(best[both] - truth[both]), np.abs(other[both] - truth[both]), seed=seed)
        rows.append(
            {"selected": selected, "other": t, "n both parsed": int(both.sum()),
             "only selected right": table[0][1], "only other right": table[1][0], "McNemar p": float(test.pvalue),
             "MAE difference": diff.point, "MAE diff low": diff.low, "MAE diff high": diff.high}
        )  # fmt: skip
    out = pd.DataFrame(rows)
    if "McNemar p" in out and out["McNemar p"].notna().any():
        ok = out["McNemar p"].notna()
        out.loc[ok, "Holm-adjusted p"] = multipletests(out.loc[ok, "McNemar p"], method="holm")[1]
    return out


def run(judge: Judge, data: SerendipityPairs, config: PromptSelectionConfig | None = None) -> PromptSelectionRun:
    """Score the judged pairs with every template and select the one with the lowest MAE."""
    cfg = config or PromptSelectionConfig()
    examples = select_few_shot_examples(data.pairs, data.items, n_per_level=cfg.n_shots // 5, seed=cfg.seed)
    example_users = set(examples["user"])
    eval_pairs = sample_eval_pairs(data.pairs, cfg.n_pairs, exclude_users=example_users, seed=cfg.seed)
    if set(eval_pairs["user"]) & example_users:
        raise AssertionError("few-shot leakage: a judged user is also an example user")

    scores: dict[str, pd.DataFrame] = {}
    wall: dict[str, float] = {}
    for t in cfg.templates:
        started = time.perf_counter()
        scorer = SerendipityJudge(judge, template=t, examples=examples, n_history=cfg.n_history, seed=cfg.seed)
        scores[t] = scorer.score(eval_pairs, data.items)
        wall[t] = time.perf_counter() - started

    truth = eval_pairs["g"].to_numpy(dtype=float)
    summary = js.summarize_templates(scores, truth, n_boot=cfg.n_boot, seed=cfg.seed)
    summary["wall_s"] = pd.Series(wall).round(1)
    summary["mae_selection"] = pd.Series({t: js.mae_unparsed_at_worst(f["score"], truth) for t, f in scores.items()})

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

    selected, overlapping = select_template(summary)
    return PromptSelectionRun(
        config=cfg,
        judge_name=judge.model_name,
        data_label=data.display_label,
        timings={f"judge {t}": s for t, s in wall.items()},
        data=data,
        examples=examples,
        eval_pairs=eval_pairs,
        scores=scores,
        summary=summary,
        baselines=baselines,
        selected=selected,
        overlapping=overlapping,
        template_tests=template_tests(scores, truth, selected, cfg.seed) if selected else pd.DataFrame(),
    )


def select_template(summary: pd.DataFrame) -> tuple[str | None, list[str]]:
    """The template with the lowest selection MAE (unparsed answers at their worst error; ties: the parsed MAE, then
    the unparsed rate) among those with a parsed answer, and the templates whose MAE CI overlaps its; ``(None, [])``
    when no template produced a parsed answer."""
    ranked = summary[summary["n_parsed"] > 0].sort_values(["mae_selection", "mae", "unparsed_rate"])
    if ranked.empty:
        return None, []
    best = ranked.iloc[0]
    overlapping = [str(t) for t in ranked.index[1:] if ranked.loc[t, "mae_lo"] <= best["mae_hi"]]
    return str(ranked.index[0]), overlapping


def save_selection(run: PromptSelectionRun, path: str | Path | None = None) -> Path:
    """Write the selected template (with its MAE, judge, data and examples) where notebook 2 reads it; with none
    selected, the record says why and which template the later chapters use instead."""
    cfg = run.config
    if run.selected is None:
        return save_selected_template(
            None,
            path,
            reason=f"no template produced a parsed answer ({len(run.eval_pairs)} pairs x {len(run.scores)} templates)",
            judge_model=run.judge_name,
            data=run.data_label,
        )
    best = run.summary.loc[run.selected]
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
