"""What notebook 1 shows about a prompt-selection run: Table 1 beside the paper, figures, and the verdicts
computed from the run's own numbers."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from recjudge_utils.data.serendipity2018 import SERENDIPITY_STATEMENTS
from recjudge_utils.experiments.prompt_selection import PromptSelectionRun
from recjudge_utils.metrics import judge_scores as js
from recjudge_utils.protocols.pointwise_score import SerendipityJudge, template_stages
from recjudge_utils.reporting.paper import paper_table

__all__ = [
    "PAPER_G_DISTRIBUTION",
    "baselines_table",
    "confusion_figure",
    "data_lines",
    "detail_table",
    "distribution_figure",
    "example_prompt",
    "examples_table",
    "g_table",
    "judging_lines",
    "logprob_lines",
    "logprob_table",
    "sample_size_lines",
    "selection_lines",
    "step_score_lines",
    "table1",
    "table1_side_by_side",
    "test_lines",
    "unparsed_answers",
    "verdict_lines",
]

#: Distribution of the ground truth g over the 2,150 Serendipity-2018 pairs, Section 4.1 of the paper.
PAPER_G_DISTRIBUTION: dict[int, int] = {1: 321, 2: 1022, 3: 586, 4: 208, 5: 13}


def data_lines(run: PromptSelectionRun) -> list[str]:
    """Which data this is and how its ground truth g is made."""
    sp = run.data
    lines = [f"data: {run.data_label}", f"real Serendipity-2018: {sp.is_real}", f"source: {sp.source}"]
    if sp.is_real:
        lines.append("g = round-half-up(mean of the answered statements " + ", ".join(SERENDIPITY_STATEMENTS) + ")")
    else:
        lines.append("the stand-in has no questionnaire: g = min(relevance level, unexpectedness level), see source")
    return lines


def g_table(run: PromptSelectionRun) -> pd.DataFrame:
    """Our ground-truth distribution beside the paper's Serendipity-2018 one."""
    ours = run.data.g_distribution()
    paper_g = pd.Series(PAPER_G_DISTRIBUTION)
    table = pd.DataFrame(
        {
            "ours (pairs)": ours,
            "ours (%)": (100 * ours / ours.sum()).round(1),
            "paper Serendipity-2018 (pairs)": paper_g,
            "paper (%)": (100 * paper_g / paper_g.sum()).round(1),
        }
    )
    table.index.name = "g"
    table.loc["total"] = table.sum().round(1)
    return table


def sample_size_lines(run: PromptSelectionRun) -> list[str]:
    """The number of judged pairs beside the paper's 2,150, and where the difference comes from (this run's counts)."""
    paper_n = sum(PAPER_G_DISTRIBUTION.values())
    pairs = run.data.pairs
    ex_users = set(run.examples["user"])
    excluded = int(pairs["user"].isin(ex_users).sum())
    pool = len(pairs) - excluded
    n = len(run.eval_pairs)
    judged = (
        "all of them judged"
        if n == pool
        else f"of which a seeded sample of n_pairs = {run.config.n_pairs} is judged (paper scale: n_pairs = None)"
    )
    return [
        f"judged pairs: n = {n:,}; the paper judged all {paper_n:,} Serendipity-2018 pairs (Sec. 4.1)",
        f"why they differ: {run.data_label} has {len(pairs):,} pairs; the {excluded:,} pairs of the {len(ex_users)} "
        f"users the {len(run.examples)} few-shot examples come from are never judged, so that no judged user appears "
        "in a prompt's examples (the paper does not say where its examples came from, nor that it left pairs out); "
        f"{pool:,} remain, {judged}",
    ]


def examples_table(run: PromptSelectionRun) -> pd.DataFrame:
    """The few-shot examples with their levels and where the step scores come from."""
    return run.examples[["user", "item", "g", "relevance", "unexpectedness", "aux_source", "candidate_text"]]


def judging_lines(run: PromptSelectionRun) -> list[str]:
    """Examples, judged pairs and, per template, calls, cache hits, statuses, time and prompt versions."""
    ex_users = set(run.examples["user"])
    pool = int((~run.data.pairs["user"].isin(ex_users)).sum())
    lines = [
        f"{len(run.examples)} few-shot examples from {len(ex_users)} users; judging {len(run.eval_pairs)} pairs "
        f"from {run.eval_pairs['user'].nunique()} other users (pool without the example users: {pool} pairs)",
        f"g of the judged pairs: {run.eval_pairs['g'].value_counts().sort_index().to_dict()}",
    ]
    for t, s in run.scores.items():
        lines.append(
            f"{t:5s}: {len(s)} pairs, {int(s['n_calls'].sum())} calls, {int(s['cache_hits'].sum())} cache hits, "
            f"status {s['status'].value_counts().to_dict()}, {run.timings[f'judge {t}']:.1f} s wall; "
            f"prompt versions { ({st.name: st.version for st in template_stages(t)}) }"
        )
    return lines


def example_prompt(run: PromptSelectionRun, template: str = "cot") -> str:
    """What the judge sees for the first judged pair: system prompt, first example, the judged pair."""
    scorer = SerendipityJudge(
        None,  # type: ignore[arg-type]  # rendering only: no judge is called
        template=template,
        examples=run.examples,
        n_history=run.config.n_history,
        seed=run.config.seed,
    )
    first = run.eval_pairs.iloc[0]
    msgs = scorer.messages(first["history"], first["item"], run.data.items)
    parts = [f"{len(msgs)} messages: 1 system + {len(msgs) - 2} few-shot turns + 1 per-pair message"]
    parts.append("--- system ---\n" + msgs[0]["content"])
    if len(msgs) > 2:
        parts.append("--- first example ---\n" + msgs[1]["content"] + "\n>>> " + msgs[2]["content"])
    parts.append("--- the judged pair (last message) ---\n" + msgs[-1]["content"])
    return "\n".join(parts)


def unparsed_answers(run: PromptSelectionRun, n: int = 10) -> pd.DataFrame:
    """The first ``n`` answers no template could parse, with the raw text."""
    bad = pd.concat([s.assign(template=t) for t, s in run.scores.items()])
    bad = bad[bad["status"] != "parsed"]
    return bad[["template", "user", "item", "status", "reason", "raw_text"]].head(n)


def _fmt_ci(point: float, lo: float, hi: float, digits: int = 3, scale: float = 1.0) -> str:
    if np.isnan(point):
        return "n/a"
    return f"{point * scale:.{digits}f} [{lo * scale:.{digits}f}, {hi * scale:.{digits}f}]"


def table1_side_by_side(summary: pd.DataFrame, paper: pd.DataFrame, ours: str) -> pd.DataFrame:
    """The paper's Table 1 beside ours, one row per template in ``summary``'s order.

    ``summary``: output of :func:`~recjudge_utils.metrics.judge_scores.summarize_templates`; ``paper``: rows
    template, model, mae, accuracy_pct; ``ours``: a column label naming our judge model (and the data).
    MAE columns, then three-class accuracy columns in percent; ours as ``point [95 % CI low, high]``, plus
    parsed/total, kappa and calls. Paper cells are blank for templates the paper does not have.
    """
    wide_mae = paper.pivot(index="template", columns="model", values="mae")
    wide_acc = paper.pivot(index="template", columns="model", values="accuracy_pct")
    out = pd.DataFrame(index=pd.Index(summary.index, name="template"))
    for model in wide_mae.columns:
        out[f"MAE {model} (paper)"] = wide_mae[model].reindex(out.index)
    out[f"MAE {ours}"] = [_fmt_ci(r.mae, r.mae_lo, r.mae_hi) for r in summary.itertuples()]
    for model in wide_acc.columns:
        out[f"Acc % {model} (paper)"] = wide_acc[model].reindex(out.index)
    out[f"Acc % {ours}"] = [_fmt_ci(r.acc3, r.acc3_lo, r.acc3_hi, 1, 100.0) for r in summary.itertuples()]
    if "acc3_wilson_lo" in summary:
        out["Acc % Wilson 95% CI"] = [
            "n/a" if np.isnan(r.acc3) else f"[{100 * r.acc3_wilson_lo:.1f}, {100 * r.acc3_wilson_hi:.1f}]"
            for r in summary.itertuples()
        ]
    out["parsed / n"] = [f"{int(r.n_parsed)} / {int(r.n)}" for r in summary.itertuples()]
    out["kappa (quadratic)"] = summary["kappa_qw"].round(3).to_numpy()
    if "kappa_lo" in summary:
        out["kappa 95% CI (SE)"] = [
            "n/a" if np.isnan(r.kappa_lo) else f"[{r.kappa_lo:.2f}, {r.kappa_hi:.2f}] ({r.kappa_se:.2f})"
            for r in summary.itertuples()
        ]
    if "calls" in summary:
        out["calls"] = summary["calls"].to_numpy()
    return out


def table1(run: PromptSelectionRun) -> pd.DataFrame:
    """Table 1 (templates as columns) with the paper's GPT-4o-mini and Llama-3.1-70B numbers beside ours."""
    return table1_side_by_side(run.summary, paper_table("serendipity_table1"), f"ours: {run.judge_name}").T


def baselines_table(run: PromptSelectionRun) -> pd.DataFrame:
    """The constant predictors' MAE, accuracy and kappa with their CIs."""
    cols = ["mae", "mae_lo", "mae_hi", "acc3", "acc3_lo", "acc3_hi", "kappa_qw"]
    return run.baselines[cols].astype(float).round(3)


def detail_table(run: PromptSelectionRun) -> pd.DataFrame:
    """Per template: counts, MAE and accuracy with CIs, kappa, calls, tokens, cost and time."""
    cols = [
        "n", "n_parsed", "n_unparsed", "unparsed_rate", "mae", "mae_lo", "mae_hi", "acc3", "acc3_lo", "acc3_hi",
        "kappa_qw", "mean_pred", "calls", "prompt_tokens", "completion_tokens", "cost_usd", "judge_time_s", "wall_s",
    ]  # fmt: skip
    return run.summary[[c for c in cols if c in run.summary]].round(3)


def confusion_figure(run: PromptSelectionRun) -> Figure:
    """One confusion matrix (g against the predicted score) per template."""
    templates = list(run.scores)
    fig, axes = plt.subplots(1, len(templates), figsize=(4.2 * len(templates), 4), squeeze=False)
    for ax, t in zip(axes[0], templates, strict=True):
        cm = js.confusion_frame(run.scores[t]["score"], run.truth)
        sns.heatmap(cm, annot=True, fmt="d", cmap="Blues", cbar=False, ax=ax)
        ax.set_title(f"{t}  (MAE {run.summary.loc[t, 'mae']:.2f}, acc {100 * run.summary.loc[t, 'acc3']:.0f}%)")
    fig.suptitle(f"Predicted score vs g - judge {run.judge_name} - {run.data_label}", fontsize=10)
    fig.tight_layout()
    plt.close(fig)
    return fig


def distribution_figure(run: PromptSelectionRun) -> Figure:
    """The share of each predicted score per template, beside the distribution of g."""
    dist = js.score_distribution(run.scores, run.truth)
    fig, ax = plt.subplots(figsize=(9, 3.8))
    sns.barplot(data=dist, x="score", y="share", hue="source", ax=ax)
    ax.set_title(f"Score distribution per template vs g - judge {run.judge_name} - {run.data_label}", fontsize=10)
    ax.set_ylabel("share of judged pairs")
    fig.tight_layout()
    plt.close(fig)
    return fig


def logprob_table(run: PromptSelectionRun) -> pd.DataFrame:
    """Per template: MAE of the argmax and of the expected score on the pairs with logprobs."""
    lp = run.summary[["n_parsed", "n_expected", "mae_argmax_same", "mae_expected"]].copy()
    lp["difference (expected - argmax)"] = lp["mae_expected"] - lp["mae_argmax_same"]
    return lp.round(3)


def logprob_lines(run: PromptSelectionRun) -> list[str]:
    """Whether the expected score lowers the MAE, per template, in words."""
    lp = logprob_table(run)
    if (lp["n_expected"] == 0).all():
        return ["No logprobs in this run (the embedded model skips them unless logprobs=True), so no expected score."]
    lines = []
    for t, r in lp.iterrows():
        if r["n_expected"]:
            verdict = "lowers" if r["mae_expected"] < r["mae_argmax_same"] else "does not lower"
            lines.append(
                f"{t}: the expected score {verdict} the MAE ({r['mae_argmax_same']:.3f} -> {r['mae_expected']:.3f}, "
                f"{int(r['n_expected'])} pairs)"
            )
    return lines


def selection_lines(run: PromptSelectionRun, path: object = None) -> list[str]:
    """The selected template, where it was written, and whether the choice is statistically clear."""
    best = run.summary.loc[run.selected]
    where = f" -> {path}" if path is not None else ""
    lines = [
        f"selected template: {run.selected} (MAE {best['mae']:.3f} [{best['mae_lo']:.3f}, {best['mae_hi']:.3f}]){where}"
    ]
    if run.overlapping:
        lines.append(
            f"its MAE CI overlaps those of {run.overlapping}: on {len(run.eval_pairs)} pairs the choice is not "
            "statistically clear"
        )
    lines.append("paper's choice: cot (GPT-4o-mini MAE 0.847)")
    return lines


def verdict_lines(run: PromptSelectionRun) -> list[str]:
    """Each template against the best constant predictor, from this run's CIs."""
    base = run.baselines["mae"].astype(float)
    best_const, best_const_name = base.min(), base.idxmin()
    lines = [f"judge {run.judge_name} on {run.data_label}, {len(run.eval_pairs)} pairs"]
    for t, r in run.summary.iterrows():
        if not r["n_parsed"]:
            lines.append(f"- {t}: nothing parsed")
            continue
        rel = (
            "beats"
            if r["mae_hi"] < best_const
            else ("is worse than" if r["mae_lo"] > best_const else "is not distinguishable from")
        )
        used = sorted(int(v) for v in run.scores[str(t)]["score"].dropna().unique())
        lines.append(
            f"- {t}: MAE {r['mae']:.3f} [{r['mae_lo']:.3f}, {r['mae_hi']:.3f}] {rel} the best constant predictor "
            f"({best_const_name}: {best_const:.3f}); kappa {r['kappa_qw']:.3f}; "
            f"unparsed {100 * r['unparsed_rate']:.0f}%; predicted levels used: {used}"
        )
    return lines


def test_lines(run: PromptSelectionRun) -> list[str]:
    """The selected template against each other one, in words, from the run's ``template_tests``."""
    lines = []
    for row in run.template_tests.to_dict("records"):
        if pd.isna(row.get("McNemar p", np.nan)):
            lines.append(f"{row['selected']} vs {row['other']}: too few pairs parsed by both")
            continue
        lo, hi = row["MAE diff low"], row["MAE diff high"]
        ci = "no CI" if np.isnan(lo) else ("excludes 0" if not lo <= 0 <= hi else "includes 0")
        lines.append(
            f"{row['selected']} vs {row['other']} on {row['n both parsed']} pairs: MAE difference "
            f"{row['MAE difference']:+.3f} [{lo:+.3f}, {hi:+.3f}] ({ci}); "
            f"McNemar p = {row['McNemar p']:.3f}, Holm-adjusted {row['Holm-adjusted p']:.3f}"
        )
    return lines


def step_score_lines(run: PromptSelectionRun) -> list[str]:
    """Where the CoT and LtM examples' relevance and unexpectedness step scores come from, and what that implies."""
    source = set(run.examples["aux_source"]) if "aux_source" in run.examples else {"g"}
    if run.data.is_real:
        return [
            "CoT/LtM example step scores are derived from the data: relevance from the user's rating, unexpectedness "
            "from the unexpectedness statements (6 - s3, s4, s5, s6); g is the mean of s1-s6."
        ]
    if source == {"data"}:
        return [
            "On the stand-in, the CoT and LtM examples show the two levels g was computed from (g = min of them): "
            "those templates are shown the rule that generated the ground truth, which favours them by construction. A "
            "lower MAE of CoT or LtM here is not evidence for the paper's finding; only the real Serendipity-2018 "
            "data can test it."
        ]
    return ["The examples have no step scores of their own: CoT/LtM examples repeat g as each step (aux_source = g)."]
