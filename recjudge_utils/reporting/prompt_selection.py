"""What chapter 1 shows about a prompt-selection run: Table 1 beside the paper, the figures, the caveats, and the
verdicts and takeaways computed from the run's own numbers."""

from __future__ import annotations

import re
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from pandas.io.formats.style import Styler

from recjudge_utils.data.serendipity2018 import SERENDIPITY_STATEMENTS
from recjudge_utils.experiments.prompt_selection import PromptSelectionRun
from recjudge_utils.metrics import judge_scores as js
from recjudge_utils.metrics.pairwise import Difference, paired_difference
from recjudge_utils.protocols.pointwise_score import SerendipityJudge, template_stages
from recjudge_utils.reporting.answer_health import NO_PARSED, AnswerHealth, unanswerable_warning
from recjudge_utils.reporting.callouts import Callout, admonition, judge_caveat, stand_in_note
from recjudge_utils.reporting.display import captioned, estimate_cell
from recjudge_utils.reporting.figures import forest_plot, palette
from recjudge_utils.reporting.paper import paper_table

__all__ = [
    "PAPER_G_DISTRIBUTION",
    "TEMPLATE_NAMES",
    "agreement_table",
    "baselines_table",
    "confusion_figure",
    "cost_table",
    "data_lines",
    "data_notes",
    "distribution_figure",
    "example_prompt",
    "examples_table",
    "g_table",
    "glue_values",
    "judging_lines",
    "logprob_lines",
    "logprob_table",
    "sample_size_lines",
    "selection_lines",
    "table1",
    "table1_notes",
    "table1_side_by_side",
    "takeaways_items",
    "template_forest",
    "tests_table",
    "unparsed_answers",
    "verdict_lines",
]

#: Distribution of the ground truth g over the 2,150 Serendipity-2018 pairs, Section 4.1 of the paper.
PAPER_G_DISTRIBUTION: dict[int, int] = {1: 321, 2: 1022, 3: 586, 4: 208, 5: 13}

#: the templates as the paper names them
TEMPLATE_NAMES: dict[str, str] = {"base": "Base", "ls": "LS", "cot": "CoT", "ltm": "LtM"}

#: how a table header or legend names the paper's numbers ("paper, GPT-4o-mini") and ours
_PAPER = "paper"
_THIS_RUN = "this run"
_DASH = "—"


def _name(template: object) -> str:
    return TEMPLATE_NAMES.get(str(template), str(template))


def _wrap(text: str, width: int = 95) -> str:
    return "\n".join(textwrap.wrap(text, width))


def _run_title(run: PromptSelectionRun) -> str:
    return _wrap(f"judge: {run.judge_name} · data: {run.data_label} · {len(run.eval_pairs)} judged pairs")


def _short(model: str) -> str:
    """A paper model's name in a header or legend ("Llama-3.1-70B"); captions give the full name."""
    return model.split("-Instruct")[0]


def _captioned(frame: pd.DataFrame, title: str, precision: int = 1) -> Styler:
    """:func:`captioned`, with the cells holding an interval kept on one line (split over lines, it misreads)."""
    styler = captioned(frame, title, precision)
    intervals = [c for c in frame.columns if "CI" in str(c)]
    return styler.set_properties(subset=intervals, **{"white-space": "nowrap"}) if intervals else styler


def _paper_models() -> tuple[pd.DataFrame, list[str]]:
    paper = paper_table("serendipity_table1")
    return paper, list(dict.fromkeys(paper["model"]))


def data_lines(run: PromptSelectionRun) -> list[str]:
    """Which data this is and how its ground truth g is made."""
    sp = run.data
    lines = [f"data: {run.data_label}", f"real Serendipity-2018: {sp.is_real}", f"source: {sp.source}"]
    if sp.is_real:
        lines.append("g = round-half-up(mean of the answered statements " + ", ".join(SERENDIPITY_STATEMENTS) + ")")
    else:
        lines.append("the stand-in has no questionnaire: g = min(relevance level, unexpectedness level), see source")
    return lines


def data_notes(run: PromptSelectionRun) -> list[Callout]:
    """The stand-in note when the run judged the MovieLens proxy instead of Serendipity-2018 (none on the real data)."""
    if run.data.is_real:
        return []
    note = stand_in_note(
        run.data_label,
        "the user-annotated Serendipity-2018 data {cite:p}`kotkov2018serendipity`",
        "Its ground truth g is a rule, min(rating level, genre-distance level), not people's answers: agreement "
        "with it says how well the judge recovers that rule.",
    )
    return [note]


def g_table(run: PromptSelectionRun) -> Styler:
    """Our ground-truth distribution beside the paper's Serendipity-2018 one."""
    ours = run.data.g_distribution().reindex(list(PAPER_G_DISTRIBUTION), fill_value=0).astype(int)
    paper_g = pd.Series(PAPER_G_DISTRIBUTION)
    table = pd.DataFrame(
        {
            "g": [str(level) for level in paper_g.index],
            "this run: pairs": ours.to_numpy(),
            "this run: %": (100 * ours / ours.sum()).to_numpy(),
            "paper: pairs": paper_g.to_numpy(),
            "paper: %": (100 * paper_g / paper_g.sum()).to_numpy(),
        }
    )
    total = {"g": "total", "this run: pairs": int(ours.sum()), "this run: %": 100.0}
    table.loc[len(table)] = {**total, "paper: pairs": int(paper_g.sum()), "paper: %": 100.0}
    return captioned(table, f"Ground truth g: {run.data_label} beside the paper's Serendipity-2018 (Sec. 4.1)")


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


def examples_table(run: PromptSelectionRun) -> Styler:
    """The few-shot examples with their levels and where the step scores come from."""
    table = run.examples[["user", "item", "g", "relevance", "unexpectedness", "aux_source", "candidate_text"]].rename(
        columns={"aux_source": "step scores from", "candidate_text": "candidate item"}
    )
    return captioned(table, f"The {len(table)} few-shot examples (their users' pairs are never judged)")


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


def unparsed_answers(run: PromptSelectionRun, n: int = 10) -> Styler:
    """The first ``n`` answers no template could parse, with the raw text."""
    every = pd.concat([s.assign(template=[_name(t)] * len(s)) for t, s in run.scores.items()])
    bad = every[every["status"] != "parsed"]
    shown = bad[["template", "user", "item", "status", "reason", "raw_text"]].head(n)
    title = f"Unparseable answers: {len(bad)} of {len(every)}" + (f" (the first {n} shown)" if len(bad) > n else "")
    return captioned(shown.rename(columns={"raw_text": "the judge's answer"}), title)


def table1_side_by_side(summary: pd.DataFrame, paper: pd.DataFrame, ours: str = _THIS_RUN) -> pd.DataFrame:
    """The paper's Table 1 beside ours in one frame, one row per template in ``summary``'s order.

    ``summary``: output of :func:`~recjudge_utils.metrics.judge_scores.summarize_templates`; ``paper``: rows
    template, model, mae, accuracy_pct; ``ours``: the label of our column. Two column groups, ``MAE`` and
    ``3-class accuracy %``, each with one column per paper model (the paper's numbers as printed) and ours as
    ``point [95 % CI low, high]`` (percentile bootstrap for the MAE, two decimals; Wilson for the accuracy), then
    ``parsed / judged``. Paper models are named short (:func:`_short`). The index is the template's name; paper cells
    read ``—`` where the paper has no number.
    """
    index = pd.Index([_name(t) for t in summary.index], name="template")
    mae = paper.pivot(index="template", columns="model", values="mae").reindex(summary.index)
    acc = paper.pivot(index="template", columns="model", values="accuracy_pct").reindex(summary.index)
    models = list(dict.fromkeys(paper["model"]))
    ours_header = f"{ours} (95 % CI)"
    columns: dict[tuple[str, str], list[str]] = {}
    for model in models:
        columns[("MAE", f"{_PAPER}, {_short(model)}")] = [_DASH if pd.isna(v) else f"{v:.3f}" for v in mae[model]]
    columns[("MAE", ours_header)] = [
        estimate_cell(r.mae, r.mae_lo, r.mae_hi, 2) if r.n_parsed else NO_PARSED for r in summary.itertuples()
    ]
    for model in models:
        columns[("3-class accuracy %", f"{_PAPER}, {_short(model)}")] = [
            _DASH if pd.isna(v) else f"{v:.1f}" for v in acc[model]
        ]
    columns[("3-class accuracy %", ours_header)] = [
        estimate_cell(r.acc3, r.acc3_wilson_lo, r.acc3_wilson_hi, digits=1, scale=100.0) if r.n_parsed else NO_PARSED
        for r in summary.itertuples()
    ]
    columns[("", "parsed / judged")] = [f"{int(r.n_parsed)} / {int(r.n)}" for r in summary.itertuples()]
    return pd.DataFrame(columns, index=index)


def table1(run: PromptSelectionRun) -> Styler:
    """Table 1: our MAE and 3-class accuracy per template, beside the paper's GPT-4o-mini and Llama-3.1-70B numbers."""
    cfg = run.config
    paper, models = _paper_models()
    frame = table1_side_by_side(run.summary, paper)
    title = (
        f"Table 1 beside the paper's. This run: judge {run.judge_name}; data {run.data_label}; "
        f"{len(run.eval_pairs)} judged pairs, {cfg.n_shots}-shot, the last {cfg.n_history} items. Paper: "
        f"{' and '.join(models)} on the {sum(PAPER_G_DISTRIBUTION.values()):,} user-annotated Serendipity-2018 pairs. "
        "MAE: lower is better (95 % percentile bootstrap CI); 3-class accuracy: higher is better (95 % Wilson "
        "interval). Unparseable answers are left out and counted."
    )
    return _captioned(frame.reset_index(), title)


def table1_notes(run: PromptSelectionRun) -> list[Callout]:
    """The admonitions that belong beside Table 1: the judge caveat, and on the stand-in, that CoT and LtM are
    shown the rule that made g."""
    notes = [c for c in (judge_caveat(run.judge_name),) if c is not None]
    source = set(run.examples["aux_source"]) if "aux_source" in run.examples else {"g"}
    if not run.data.is_real and source == {"data"}:
        body = (
            "On the stand-in, the CoT and LtM examples show the two levels g was computed from (g = min of them): "
            "those templates are shown the rule that generated the ground truth, which favours them by construction. "
            "A lower MAE of CoT or LtM here is not evidence for the paper's finding; only the real Serendipity-2018 "
            "data can test it."
        )
        notes.append(Callout(admonition("admonition", body, title="CoT and LtM see the rule", classes=("note",))))
    return notes


def _best_constant(run: PromptSelectionRun, metric: str = "mae") -> tuple[str, float]:
    values = run.baselines[metric].astype(float)
    name = str(values.idxmin() if metric == "mae" else values.idxmax())
    return name, float(values[name])


def _constant_value(name: str) -> int:
    """The level a constant predictor always answers, from its name in ``run.baselines`` ("constant 2 (...)")."""
    match = re.match(r"constant (\d)\b", name)
    if match is None:
        raise ValueError(f"not a constant predictor's name: {name!r}")
    return int(match.group(1))


def _versus_constant(run: PromptSelectionRun, template: str) -> tuple[str, Difference]:
    """The template's MAE minus the best constant predictor's, paired over the pairs the template parsed, and the
    relation the CI allows: "beats", "is worse than" or "cannot be told apart from"."""
    name, _ = _best_constant(run)
    score = run.scores[template]["score"].to_numpy(dtype=float)
    ok = ~np.isnan(score)
    truth = run.truth[ok]
    diff = paired_difference(
        np.abs(score[ok] - truth), np.abs(_constant_value(name) - truth), n_boot=run.config.n_boot, seed=run.config.seed
    )
    if diff.high < 0:
        return "beats", diff
    if diff.low > 0:
        return "is worse than", diff
    return "cannot be told apart from", diff


def baselines_table(run: PromptSelectionRun) -> Styler:
    """The constant predictors' MAE, 3-class accuracy and weighted kappa with their CIs."""
    b = run.baselines.astype(float)
    table = pd.DataFrame(
        {
            "predictor (no LLM)": list(b.index),
            "MAE (95 % CI)": [estimate_cell(r.mae, r.mae_lo, r.mae_hi) for r in b.itertuples()],
            "3-class accuracy % (95 % CI)": [
                estimate_cell(r.acc3, r.acc3_wilson_lo, r.acc3_wilson_hi, digits=1, scale=100.0) for r in b.itertuples()
            ],
            "weighted κ": [estimate_cell(v) for v in b["kappa_qw"]],
        }
    )
    return _captioned(
        table, f"Constant predictors on the same {len(run.eval_pairs)} pairs: the floor a judge must beat"
    )


def agreement_table(run: PromptSelectionRun) -> Styler:
    """Per template: parsed answers, quadratic weighted kappa with its CI, the mean score and the levels used."""
    s = run.summary
    table = pd.DataFrame(
        {
            "template": [_name(t) for t in s.index],
            "parsed / judged": [f"{int(r.n_parsed)} / {int(r.n)}" for r in s.itertuples()],
            "unparsed %": [estimate_cell(v, digits=0, scale=100.0) for v in s["unparsed_rate"]],
            "weighted κ (95 % CI)": [estimate_cell(r.kappa_qw, r.kappa_lo, r.kappa_hi, 2) for r in s.itertuples()],
            "mean score": [estimate_cell(v, digits=2) for v in s["mean_pred"]],
            "levels used": [
                ", ".join(str(int(v)) for v in sorted(run.scores[str(t)]["score"].dropna().unique())) or _DASH
                for t in s.index
            ],
        }
    )
    return _captioned(
        table, f"Agreement with g per template (quadratic weighted kappa, labels 1-5; mean g {run.truth.mean():.2f})"
    )


def cost_table(run: PromptSelectionRun) -> Styler:
    """Per template: calls, tokens, cost and time."""
    s = run.summary
    columns = {
        "calls": "calls",
        "prompt_tokens": "prompt tokens",
        "completion_tokens": "completion tokens",
        "cost_usd": "cost (USD)",
        "judge_time_s": "judge time (s)",
        "wall_s": "wall time (s)",
    }
    present = [c for c in columns if c in s]
    table = s[present].rename(columns=columns).reset_index(names="template")
    table["template"] = table["template"].map(_name)
    return captioned(table, f"What each template cost (judge {run.judge_name}; cache hits cost nothing)", precision=2)


def tests_table(run: PromptSelectionRun) -> Styler:
    """The selected template against each other one on the same pairs: paired MAE difference and McNemar's test."""
    rows = []
    for row in run.template_tests.to_dict("records"):
        tested = not pd.isna(row.get("McNemar p", np.nan))
        rows.append(
            {
                "comparison": f"{_name(row['selected'])} vs {_name(row['other'])}",
                "pairs parsed by both": int(row["n both parsed"]),
                "MAE difference (95 % CI)": estimate_cell(row.get("MAE difference"), row.get("MAE diff low"),
                                                          row.get("MAE diff high")) if tested else _DASH,
                "only selected right": int(row["only selected right"]) if tested else _DASH,
                "only other right": int(row["only other right"]) if tested else _DASH,
                "McNemar p": f"{row['McNemar p']:.3f}" if tested else _DASH,
                "Holm-adjusted p": f"{row['Holm-adjusted p']:.3f}" if tested else _DASH,
            }
        )  # fmt: skip
    if run.selected is None:
        return _captioned(pd.DataFrame({"comparison": [f"none: no template selected ({NO_PARSED})"]}), "Template tests")
    return _captioned(
        pd.DataFrame(rows),
        "The selected template against each other one, on the pairs both parsed (a negative MAE difference favours "
        "the selected one; McNemar's exact test on 3-class correctness, Holm-adjusted over the comparisons)",
    )


def forest_rows(run: PromptSelectionRun, metric: str = "mae") -> pd.DataFrame:
    """One row per template and source (this run with its CI; each paper model, a point) for :func:`template_forest`.

    ``metric``: ``"mae"`` (bootstrap CI) or ``"acc3"`` (in percent, Wilson interval)."""
    if metric not in ("mae", "acc3"):
        raise ValueError(f"metric is 'mae' or 'acc3', not {metric!r}")
    s = run.summary
    if metric == "mae":
        ours = pd.DataFrame({"value": s["mae"], "low": s["mae_lo"], "high": s["mae_hi"]})
    else:
        ours = 100 * pd.DataFrame({"value": s["acc3"], "low": s["acc3_wilson_lo"], "high": s["acc3_wilson_hi"]})
    ours = ours.astype(float).assign(source=f"{_THIS_RUN} (95 % CI)").reset_index(names="template")
    paper, _ = _paper_models()
    paper = paper[paper["template"].isin(s.index)]
    theirs = pd.DataFrame(
        {
            "template": paper["template"],
            "value": paper["mae" if metric == "mae" else "accuracy_pct"].astype(float),
            "source": [f"{_PAPER}, {_short(m)}" for m in paper["model"]],
        }
    )
    rows = pd.concat([ours, theirs], ignore_index=True)
    order = {t: k for k, t in enumerate(s.index)}
    rows = rows.sort_values("template", key=lambda c: c.map(order), kind="stable")
    return rows.assign(template=rows["template"].map(_name)).reset_index(drop=True)


def template_forest(run: PromptSelectionRun, metric: str = "mae") -> Figure:
    """MAE (``"mae"``) or 3-class accuracy (``"acc3"``) per template: this run with its CI beside the paper's models,
    and the best constant predictor as the reference line."""
    name, value = _best_constant(run, metric)
    fig = forest_plot(
        forest_rows(run, metric),
        label="template",
        group="source",
        xlabel="MAE against g (lower is better)" if metric == "mae" else "3-class accuracy % (higher is better)",
        reference=value if metric == "mae" else 100 * value,
        reference_label=f"best constant predictor: always {_constant_value(name)}",
        width=8.0,
    )
    fig.axes[0].set_title(_run_title(run), fontsize=8, loc="left")
    fig.tight_layout()
    return fig


def confusion_figure(run: PromptSelectionRun) -> Figure:
    """One confusion matrix (g against the predicted score, unparsed answers last) per template, two per row."""
    templates = list(run.scores)
    ncols = min(2, len(templates))
    nrows = -(-len(templates) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.3 * ncols, 3.6 * nrows + 0.4), squeeze=False)
    for ax, t in zip(axes.flat, templates, strict=False):
        cm = js.confusion_frame(run.scores[t]["score"], run.truth)
        # a sequential map read by lightness, with counts written in: the same in grey scale
        sns.heatmap(cm, annot=True, fmt="d", cmap="Greys", cbar=False, ax=ax, linewidths=0.5, linecolor="0.8")
        r = run.summary.loc[t]
        scores = "nothing parsed" if pd.isna(r["mae"]) else f"MAE {r['mae']:.2f}, accuracy {100 * r['acc3']:.0f} %"
        ax.set_title(f"{_name(t)}: {scores}", fontsize=10)
        ax.set_xlabel("judge's score")
        ax.set_ylabel("g (ground truth)")
    for ax in list(axes.flat)[len(templates) :]:
        ax.set_axis_off()
    fig.suptitle(_run_title(run), fontsize=8)
    fig.tight_layout()
    plt.close(fig)
    return fig


#: one hatch per series, so bars stay apart in grey scale
_HATCHES = ("", "//", "\\\\", "xx", "..", "++", "--", "oo")


def distribution_figure(run: PromptSelectionRun) -> Figure:
    """The share of each predicted score per template, beside the distribution of g (colour and hatch per series)."""
    dist = js.score_distribution(run.scores, run.truth)
    sources = list(dict.fromkeys(dist["source"]))
    categories = list(dict.fromkeys(dist["score"]))
    colours = palette(len(sources))
    fig, ax = plt.subplots(figsize=(8.0, 3.8))
    width = 0.8 / len(sources)
    x = np.arange(len(categories))
    for k, source in enumerate(sources):
        share = dist[dist["source"] == source].set_index("score")["share"].reindex(categories)
        label = source if source not in TEMPLATE_NAMES else _name(source)
        ax.bar(
            x + (k - (len(sources) - 1) / 2) * width, share, width, color=colours[k], hatch=_HATCHES[k % len(_HATCHES)],
            edgecolor="0.2", linewidth=0.5, label=label,
        )  # fmt: skip
    ax.set_xticks(x, categories)
    ax.set_xlabel("score")
    ax.set_ylabel("share of judged pairs")
    ax.set_title(_run_title(run), fontsize=8, loc="left")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    plt.close(fig)
    return fig


def logprob_table(run: PromptSelectionRun) -> Styler:
    """Per template: MAE of the argmax and of the expected score on the pairs with logprobs."""
    lp = run.summary[["n_parsed", "n_expected", "mae_argmax_same", "mae_expected"]].astype(float)
    table = pd.DataFrame(
        {
            "template": [_name(t) for t in lp.index],
            "parsed": lp["n_parsed"].astype(int).to_numpy(),
            "with logprobs": lp["n_expected"].astype(int).to_numpy(),
            "MAE, argmax score": [estimate_cell(v) for v in lp["mae_argmax_same"]],
            "MAE, expected score": [estimate_cell(v) for v in lp["mae_expected"]],
            "expected − argmax": [estimate_cell(v) for v in lp["mae_expected"] - lp["mae_argmax_same"]],
        }
    )
    return captioned(table, "Expected score (probability-weighted) against the argmax, on the same pairs")


def logprob_lines(run: PromptSelectionRun) -> list[str]:
    """Whether the expected score lowers the MAE, per template, in words."""
    lp = run.summary[["n_expected", "mae_argmax_same", "mae_expected"]]
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


def _paper_choice() -> tuple[str, str, float]:
    """The template with the lowest MAE for the paper's first model (GPT-4o-mini), with that model and MAE."""
    paper, models = _paper_models()
    first = paper[paper["model"] == models[0]].set_index("template")["mae"]
    return str(first.idxmin()), models[0], float(first.min())


def selection_lines(run: PromptSelectionRun, path: object = None) -> list[str]:
    """The selected template, where it was written, and whether the choice is statistically clear."""
    where = f" -> {path}" if path is not None else ""
    if run.selected is None:
        return [
            f"selected template: none. {_health(run).sentence()}{where}",
            "Chapter 2 then judges with its `template` parameter (CoT, the paper's choice by default).",
        ]
    best = run.summary.loc[run.selected]
    lines = [
        f"selected template: {run.selected} (MAE {estimate_cell(best['mae'], best['mae_lo'], best['mae_hi'])}){where}"
    ]
    if run.overlapping:
        lines.append(
            f"its MAE CI overlaps those of {run.overlapping}: on {len(run.eval_pairs)} pairs the choice is not "
            "statistically clear"
        )
    template, model, mae = _paper_choice()
    lines.append(f"paper's choice: {template} ({model} MAE {mae:.3f})")
    return lines


def verdict_lines(run: PromptSelectionRun) -> list[str]:
    """Each template against the best constant predictor on the pairs it parsed (paired MAE difference, its CI)."""
    name, value = _best_constant(run)
    lines = [
        f"judge {run.judge_name} on {run.data_label}, {len(run.eval_pairs)} pairs; best constant predictor: "
        f"{name}, MAE {value:.3f}"
    ]
    for t, r in run.summary.iterrows():
        if not r["n_parsed"]:
            lines.append(f"- {t}: nothing parsed")
            continue
        relation, diff = _versus_constant(run, str(t))
        used = sorted(int(v) for v in run.scores[str(t)]["score"].dropna().unique())
        lines.append(
            f"- {t}: MAE {estimate_cell(r['mae'], r['mae_lo'], r['mae_hi'])} {relation} the best constant predictor "
            f"(paired MAE difference {estimate_cell(diff.point, diff.low, diff.high)}); "
            f"weighted kappa {estimate_cell(r['kappa_qw'])}; unparsed {100 * r['unparsed_rate']:.0f}%; "
            f"predicted levels used: {used}"
        )
    return lines


def _ranking_item(run: PromptSelectionRun, selected: str) -> str:
    sel = _name(selected)
    best = run.summary.loc[selected]
    cell = estimate_cell(best["mae"], best["mae_lo"], best["mae_hi"], 2)
    tests = run.template_tests
    if tests.empty:
        return f"Only {sel} was run: there is no ranking to read (MAE {cell})."
    high = tests["MAE diff high"] if "MAE diff high" in tests else pd.Series(np.nan, index=tests.index)
    apart = [_name(t) for t, hi in zip(tests["other"], high, strict=True) if hi < 0]
    together = [_name(t) for t, hi in zip(tests["other"], high, strict=True) if not hi < 0]
    if not together:
        return (
            f"{sel} had the lowest MAE, {cell}, and the paired MAE differences to every other template exclude 0: "
            f"on these pairs this run ranks {sel} first."
        )
    beats = f"; it does beat {', '.join(apart)}" if apart else ""
    untested = " (or have no interval: too few pairs parsed by both)" if high.isna().any() else ""
    return (
        f"{sel} had the lowest MAE, {cell}, but the paired MAE differences to {', '.join(together)} include 0"
        f"{untested}: this run cannot rank {sel} above {'it' if len(together) == 1 else 'them'}{beats}."
    )


def _constant_item(run: PromptSelectionRun, selected: str) -> str:
    sel = _name(selected)
    name, value = _best_constant(run)
    relation, diff = _versus_constant(run, selected)
    d = estimate_cell(diff.point, diff.low, diff.high, 2)
    constant = f"the best constant predictor (always {_constant_value(name)}, MAE {value:.2f}, no LLM)"
    if relation == "beats":
        return f"{sel} beats {constant}: MAE difference {d} on the pairs it parsed, a CI below 0."
    if relation == "is worse than":
        return (
            f"{sel} is worse than {constant}: MAE difference {d}, a CI above 0. Whatever the ranking of the "
            "templates, this judge has learned nothing here that the label mix does not already give."
        )
    return (
        f"{sel} cannot be told apart from {constant}: the MAE difference {d} includes 0, so this run does not show "
        "that the judge knows more than the label mix."
    )


def _kappa_item(run: PromptSelectionRun, selected: str) -> str:
    sel = _name(selected)
    r = run.summary.loc[selected]
    cell = estimate_cell(r["kappa_qw"], r["kappa_lo"], r["kappa_hi"], 2)
    if pd.isna(r["kappa_lo"]) or pd.isna(r["kappa_hi"]):
        return f"{sel}'s weighted κ ({cell}) has no interval on this run: agreement beyond chance is not shown."
    if round(r["kappa_lo"], 2) > 0:  # judged as shown: a bound printed as 0.00 does not exclude 0
        return f"{sel}'s weighted κ {cell} excludes 0: its scores agree with g beyond chance."
    return f"{sel}'s weighted κ {cell} includes 0: agreement with g beyond chance is not shown."


def _paper_item(run: PromptSelectionRun) -> str:
    template, model, mae = _paper_choice()
    if not run.data.is_real:
        return (
            f"The ground truth here is the stand-in's rule, not people's answers: this run can neither confirm nor "
            f"refute the paper's Table 1 ({_name(template)} best, MAE {mae:.3f} with {model})."
        )
    if template not in run.summary.index or pd.isna(run.summary.loc[template, "mae_lo"]):
        return f"This run has no MAE interval for the paper's choice, {_name(template)}, to set beside its {mae:.3f}."
    r = run.summary.loc[template]
    inside = r["mae_lo"] <= mae <= r["mae_hi"]
    where = "lies inside" if inside else "lies outside"
    return (
        f"The paper's {_name(template)} MAE with {model}, {mae:.3f}, {where} this run's CI "
        f"{estimate_cell(r['mae'], r['mae_lo'], r['mae_hi'], 2)} (judge {run.judge_name})."
    )


def _mean_mae_ci_width(run: PromptSelectionRun) -> float:
    width = (run.summary["mae_hi"] - run.summary["mae_lo"]).astype(float)
    return float(width.mean()) if width.notna().any() else float("nan")


def _sample_item(run: PromptSelectionRun) -> str:
    n = len(run.eval_pairs)
    width = _mean_mae_ci_width(run)
    if np.isnan(width):
        return f"On {n} judged pairs no template has an MAE interval."
    return (
        f"On {n} judged pairs the MAE CIs are {width:.2f} wide on average; a CI narrows roughly as 1/√n, so four "
        "times the pairs would about halve it."
    )


def _health(run: PromptSelectionRun) -> AnswerHealth:
    return AnswerHealth.of_frames(*run.scores.values())


def health_notes(run: PromptSelectionRun) -> list[Callout]:
    """The warning shown when no template produced a parsed answer (nothing otherwise)."""
    if run.selected is not None:
        return []
    return [unanswerable_warning("which template judges best", _health(run))]


def takeaways_items(run: PromptSelectionRun) -> list[str]:
    """The chapter's key takeaways, each saying what this run's CIs allow: the ranking of the templates, the selected
    one against the constant floor and against chance agreement, the paper's number, and the sample size. With no
    parsed answer: what the judge returned, and nothing else."""
    if run.selected is None:
        return [
            f"No template produced a parsed answer, so none was selected and nothing about the templates can be "
            f"read from this run. {_health(run).sentence()}",
            "Chapter 2 judges with its `template` parameter instead (CoT, the paper's choice, by default).",
        ]
    sel = run.selected
    health = _health(run)
    unusable = [f"Every number below rests on the answers that could be read: {health.sentence()}"]
    return [
        *(unusable if health.flagged else []),
        _ranking_item(run, sel),
        _constant_item(run, sel),
        _kappa_item(run, sel),
        _paper_item(run),
        _sample_item(run),
    ]


def glue_values(run: PromptSelectionRun) -> dict[str, int | float]:
    """The numbers chapter 1's prose quotes (glued by name): judged pairs and the mean width of the MAE CIs."""
    return {"ch1-n-pairs": len(run.eval_pairs), "ch1-mae-ci-width": _mean_mae_ci_width(run)}
