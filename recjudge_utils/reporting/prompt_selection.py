"""What chapter 1 shows about a prompt-selection run: Table 1 beside the paper, the figures, the caveats, and the
verdicts and takeaways its CIs allow. Captions are the notebook's (each table function takes one),
headers, labels and fixed lines are written here, and ``text/prompt_selection.yaml`` holds the notes shown only for
some runs and the sentences chosen by the run's intervals; every number comes from
:class:`~recjudge_utils.experiments.prompt_selection.PromptSelectionRun`."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from os import PathLike
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure
from pandas.io.formats.style import Styler

from recjudge_utils.data.serendipity2018 import SERENDIPITY_STATEMENTS
from recjudge_utils.experiments.prompt_selection import PromptSelectionRun
from recjudge_utils.judge.records import AnswerHealth
from recjudge_utils.metrics import judge_scores as js
from recjudge_utils.metrics.estimate import Estimate
from recjudge_utils.paper_tables import paper_table
from recjudge_utils.paths import shown_path
from recjudge_utils.reporting.answer_health import NO_PARSED, health_sentence, unanswerable_warning
from recjudge_utils.reporting.callouts import Callout, admonition, judge_caveat, stand_in_note
from recjudge_utils.reporting.cells import estimate_cell
from recjudge_utils.reporting.claims import side, sides
from recjudge_utils.reporting.figures import count_grid, done, forest_plot, grouped_bars, palette
from recjudge_utils.reporting.judge_saw import judge_saw, serendipity_use
from recjudge_utils.reporting.tables import captioned
from recjudge_utils.reporting.text import chapter_text

__all__ = [
    "agreement_table", "baselines_table", "confusion_figure", "cost_table", "data_lines", "data_notes",
    "distribution_figure", "example_prompt", "examples_table", "forest_rows", "g_table", "health_notes",
    "judge_saw_note", "judging_lines", "logprob_lines", "logprob_table", "reference_lines", "reference_notes",
    "sample_sentence", "sample_size_lines", "selection_lines",
    "table1", "table1_notes", "table1_side_by_side", "takeaways_items", "template_forest", "tests_table",
    "unparsed_answers", "verdict_lines",
]  # fmt: skip

T = chapter_text("prompt_selection")
_NAMES = {"base": "Base", "ls": "LS", "cot": "CoT", "ltm": "LtM"}  # as the paper names them
#: the headers of the ground-truth, examples, unparsed, cost and tests tables (a mapping renames a run frame's columns)
_G_COLUMNS = {"g": "g", "pairs": "this run: pairs", "pct": "this run: %", "paper_pairs": "paper: pairs",
              "paper_pct": "paper: %"}  # fmt: skip
_EXAMPLES_COLUMNS = {"aux_source": "step scores from", "candidate_text": "candidate item"}
_UNPARSED_COLUMNS = {"raw_text": "the judge's answer"}
_COST_COLUMNS = {"calls": "calls", "prompt_tokens": "prompt tokens", "completion_tokens": "completion tokens",
                 "cost_usd": "cost (USD)", "judge_time_s": "judge time (s)", "wall_s": "wall time (s)"}  # fmt: skip
_TESTS_COLUMNS = ["comparison", "pairs parsed by both", "MAE difference (95 % CI)", "only selected right",
                  "only other right", "McNemar p", "Holm-adjusted p"]  # fmt: skip
#: the headers of the constant predictors', the agreement and the logprob tables
_BASELINES_COLUMNS = ["predictor (no LLM)", "MAE (95 % CI)", "3-class accuracy % (95 % CI)", "weighted κ"]
_AGREEMENT_COLUMNS = ["template", "parsed / judged", "unparsed %", "weighted κ (95 % CI)", "mean score", "levels used"]
_LOGPROB_COLUMNS = [
    "template",
    "parsed",
    "with logprobs",
    "MAE, argmax score",
    "MAE, expected score",
    "expected − argmax",
]
_DASH = "—"
#: per measure: the scale it is shown at (acc3 in percent), and the paper's Table 1 column of it
_SCALE = {"mae": 1, "acc3": 100, "kappa_qw": 1}
_PAPER_COLUMN = {"mae": "mae", "acc3": "accuracy_pct"}
#: the words chosen by where an interval lies (:func:`~recjudge_utils.reporting.claims.side`): against the best
#: constant predictor (a paired MAE difference against 0), kappa against 0, the paper's MAE against this run's CI
_RELATION = {"below": "relation.below", "above": "relation.above", "contains": "relation.contains",
             "none": "relation.none"}  # fmt: skip
_VERSUS = {"below": "takeaways.versus.below", "above": "takeaways.versus.above",
           "contains": "takeaways.versus.contains", "none": "takeaways.versus.none"}  # fmt: skip
_KAPPA = {"below": "takeaways.kappa.below", "above": "takeaways.kappa.above", "contains": "takeaways.kappa.contains",
          "none": "takeaways.kappa.none"}  # fmt: skip
_BESIDE_PAPER = {"standin": "takeaways.paper.standin", "below": "takeaways.paper.below",
                 "above": "takeaways.paper.above", "contains": "takeaways.paper.contains",
                 "none": "takeaways.paper.none"}  # fmt: skip


def _name(template: object) -> str:
    return _NAMES.get(str(template), str(template))


def _paper(model: str) -> str:
    return f"paper, {model.split('-Instruct')[0]}"  # a header or legend names it short; a caption in full


def _frame(headers: Sequence[str], *columns: Sequence[Any]) -> pd.DataFrame:
    return pd.DataFrame(dict(zip(headers, columns, strict=True)))


def _metric_cell(r: pd.Series, metric: str = "mae", digits: int = 3) -> str:
    """A measure's row of a summary (value, low, high) as a cell, at the measure's scale (:data:`_SCALE`)."""
    return estimate_cell(Estimate.of_row(r), digits=digits, scale=_SCALE[metric])


def _parsed_of_judged(summary: pd.DataFrame) -> list[str]:
    """Per template of a summary: its parsed answers (the pairs its MAE rests on) out of the judged pairs."""
    parsed, judged = (js.measure_by(summary, m, "template")["n"] for m in ("mae", "unparsed_rate"))
    return [f"{int(p)} / {int(n)}" for p, n in zip(parsed, judged, strict=True)]


def _diff(run: PromptSelectionRun, template: object) -> Estimate:  # MAE minus the best constant predictor's
    return Estimate.of_row(run.versus_constant.loc[template])


def _health(run: PromptSelectionRun) -> AnswerHealth:
    return AnswerHealth.of_frames(*run.scores.values())


def _title(run: PromptSelectionRun) -> str:
    title = f"judge: {run.judge_name} · data: {run.data_label} · {len(run.judged)} judged pairs"
    return textwrap.fill(title + (f" · against {_people(run)}" if run.reference is not None else ""), 95)


# -- people's labels as the reference (what a run with the chapter's ``labels`` parameter says of them) -----------


def _annotators(run: PromptSelectionRun) -> str:
    ref = run.reference
    assert ref is not None
    return f"{ref.n_annotators} {'SIMULATED ' if ref.simulated else ''}annotator{'s' * (ref.n_annotators != 1)}"


def _people(run: PromptSelectionRun) -> str:
    """The reference in a few words: whose labels, of how many pairs (captions and figure titles)."""
    return f"the consensus of {_annotators(run)} on {len(run.eval_pairs)} labelled pairs"


def reference_lines(run: PromptSelectionRun) -> list[str]:
    """What every number from Table 1 on is computed against: the data's g of every judged pair, or people's labels
    (the file, labels, annotators, pairs, SIMULATED when they are) and what that changes."""
    n, judged = len(run.eval_pairs), len(run.judged)
    ref = run.reference
    if ref is None:
        return [f"reference: the data's g ({run.data_label}) of all {judged} judged pairs (no labels file given)"]
    same = int((run.eval_pairs["data_g"] == run.eval_pairs["g"]).sum())
    return [
        f"reference: people's labels, {ref.source}: {ref.n_labels} labels by {_annotators(run)}; per pair their "
        f"consensus (the median label), on {n} of the {judged} judged pairs",
        f"Table 1, the constant predictors, the agreement table, the figures, the tests and the selection below are "
        f"computed on these {n} pairs against the consensus, which stands in for g wherever g is named; the data's "
        f"g of the same pairs equals the consensus on {same} of them",
    ]


def reference_notes(run: PromptSelectionRun) -> list[Callout]:
    """A warning when the labels the selection was made on are simulated annotators', never people's."""
    ref = run.reference
    if ref is None or not ref.simulated:
        return []
    body = (
        f"Every annotator in {ref.source} is a simulated one: labels drawn around the truth the run recorded "
        "(recjudge_utils.annotation.simulated_annotators), not people's. The selection below shows the machinery "
        "working; it is not a selection on people's judgments of serendipity."
    )
    return [Callout(admonition("admonition", body, "SIMULATED annotators", ("warning",)))]


def data_lines(run: PromptSelectionRun) -> list[str]:
    """Which data this is and how its ground truth g is made."""
    g = T("data.real_g", statements=", ".join(SERENDIPITY_STATEMENTS)) if run.data.is_real else T("data.standin_g")
    return [f"data: {run.data_label}", f"real Serendipity-2018: {run.data.is_real}", f"source: {run.data.source}", g]


def data_notes(run: PromptSelectionRun) -> list[Callout]:
    """The stand-in note when the run judged the MovieLens proxy instead of Serendipity-2018."""
    return [] if run.data.is_real else [stand_in_note(run.data_label, T("data.note_paper"), T("data.note_detail"))]


def g_table(run: PromptSelectionRun, caption: str) -> Styler:
    """The data's ground-truth distribution beside the paper's Serendipity-2018 one."""
    return captioned(run.g_counts.reset_index().rename(columns=_G_COLUMNS), caption)


def sample_size_lines(run: PromptSelectionRun) -> list[str]:
    """The number of judged pairs beside the paper's, and where the difference comes from."""
    n, pool, pairs = len(run.judged), run.n_pool, len(run.data.pairs)
    paper_n = run.g_counts.loc["total", "paper_pairs"]
    judged = (
        "all of them judged"
        if n == pool
        else f"of which a seeded sample of n_pairs = {run.config.n_pairs} is judged (paper scale: n_pairs = None)"
    )
    return [
        f"judged pairs: n = {n:,}; the paper judged all {paper_n:,} Serendipity-2018 pairs (Sec. 4.1)",
        f"why they differ: {run.data_label} has {pairs:,} pairs; the {pairs - pool:,} pairs of the "
        f"{run.n_example_users} users the {len(run.examples)} few-shot examples come from are never judged, so that "
        "no judged user appears in a prompt's examples (the paper does not say where its examples came from, nor that "
        f"it left pairs out); {pool:,} remain, {judged}",
    ]


def examples_table(run: PromptSelectionRun, caption: str) -> Styler:
    """The few-shot examples with their levels and where the step scores come from."""
    table = run.examples[["user", "item", "g", "relevance", "unexpectedness", "aux_source", "candidate_text"]]
    return captioned(table.rename(columns=_EXAMPLES_COLUMNS), caption)


def judging_lines(run: PromptSelectionRun) -> list[str]:
    """Examples, judged pairs and, per template, calls, cache hits, statuses, time and prompt versions."""
    lines = [
        f"{len(run.examples)} few-shot examples from {run.n_example_users} users; judging {len(run.judged)} pairs from "
        f"{run.n_judged_users} other users (pool without the example users: {run.n_pool} pairs)",
        f"g of the judged pairs: {run.judged_g}",
    ]
    return lines + [
        f"{t:5s}: {j['pairs']} pairs, {j['calls']} calls, {j['cache_hits']} cache hits, status {j['status']}, "
        f"{run.timings[f'judge {t}']:.1f} s wall; prompt versions {j['versions']}"
        for t, j in run.judging.iterrows()
    ]


def example_prompt(run: PromptSelectionRun, template: str = "cot") -> str:
    """What the judge sees for the first judged pair: system prompt, first example, the judged pair."""
    m = [msg["content"] for msg in run.example_messages(template)]
    head = f"{len(m)} messages: 1 system + {len(m) - 2} few-shot turns + 1 per-pair message\n--- system ---\n{m[0]}"
    example = [f"--- first example ---\n{m[1]}\n>>> {m[2]}"] if len(m) > 2 else []
    return "\n".join([head, *example, f"--- the judged pair (last message) ---\n{m[-1]}"])


def unparsed_answers(run: PromptSelectionRun, caption: str, n: int = 10) -> Styler:
    """The first ``n`` answers no template could parse, with the raw text; ``caption``, then how many of how many."""
    every = pd.concat([s.assign(template=[_name(t)] * len(s)) for t, s in run.scores.items()])
    bad = every[every["status"] != "parsed"][["template", "user", "item", "status", "reason", "raw_text"]]
    health = _health(run)
    counted = f"{caption}: {health.unusable} of {health.n}" + (f" (the first {n} shown)" if health.unusable > n else "")
    return captioned(bad.head(n).rename(columns=_UNPARSED_COLUMNS), counted)


def health_notes(run: PromptSelectionRun) -> list[Callout]:
    """The warning shown when no template produced a parsed answer (nothing otherwise)."""
    return [] if run.selected is not None else [unanswerable_warning("which template judges best", _health(run))]


def table1_side_by_side(summary: pd.DataFrame, paper: pd.DataFrame, ours: str = "this run") -> pd.DataFrame:
    """The paper's Table 1 (template, model, mae, accuracy_pct) beside ``summary``'s estimates with their CIs."""
    columns: dict[tuple[str, str], list[str]] = {}
    templates = list(dict.fromkeys(summary["template"]))
    for head, metric, digits, ours_digits in (("MAE", "mae", 3, 2), ("3-class accuracy %", "acc3", 1, 1)):
        printed = paper.pivot(index="template", columns="model", values=_PAPER_COLUMN[metric]).reindex(templates)
        for model in dict.fromkeys(paper["model"]):
            columns[(head, _paper(model))] = [_DASH if pd.isna(v) else f"{v:.{digits}f}" for v in printed[model]]
        rows = js.measure_by(summary, metric, "template")
        columns[(head, f"{ours} (95 % CI)")] = [
            _metric_cell(r, metric, ours_digits) if r["n"] else NO_PARSED for _, r in rows.iterrows()
        ]
    columns[("", "parsed / judged")] = _parsed_of_judged(summary)
    return pd.DataFrame(columns, index=pd.Index([_name(t) for t in templates], name="template"))


def table1(run: PromptSelectionRun, caption: str) -> Styler:
    """Table 1: this run's MAE and 3-class accuracy per template, beside the paper's two models; ``caption``, then
    what the numbers are against when the run selected on people's labels."""
    paper = paper_table("serendipity_table1")
    if run.reference is not None:
        caption += f" This run's numbers are against {_people(run)}, not the data's g."
    return captioned(table1_side_by_side(run.summary, paper).reset_index(), caption, nowrap_intervals=True)


def table1_notes(run: PromptSelectionRun) -> list[Callout]:
    """The judge caveat, and on the stand-in, that CoT and LtM are shown the rule that made g."""
    rule = Callout(admonition("admonition", T("notes.rule"), T("notes.rule_title"), ("note",)))
    return [c for c in (judge_caveat(run.judge_name), rule if run.examples_show_rule else None) if c is not None]


def baselines_table(run: PromptSelectionRun, caption: str) -> Styler:
    """The constant predictors' MAE, 3-class accuracy and weighted kappa with their CIs."""
    mae, acc3, kappa = (js.measure_by(run.baselines, m, "predictor") for m in ("mae", "acc3", "kappa_qw"))
    table = _frame(_BASELINES_COLUMNS, list(mae.index), [_metric_cell(r) for _, r in mae.iterrows()],
                   [_metric_cell(r, "acc3", 1) for _, r in acc3.iterrows()],
                   [estimate_cell(v) for v in kappa["value"]])  # fmt: skip
    return captioned(table, caption, nowrap_intervals=True)


def agreement_table(run: PromptSelectionRun, caption: str) -> Styler:
    """Per template: parsed answers, quadratic weighted kappa with its CI, the mean score and the levels used;
    ``caption``, then the reference when the run selected on people's labels."""
    unparsed, kappa, mean = (run.measure(m) for m in ("unparsed_rate", "kappa_qw", "mean_pred"))
    table = _frame(_AGREEMENT_COLUMNS, [_name(t) for t in unparsed.index], _parsed_of_judged(run.summary),
                   [estimate_cell(v, digits=0, scale=100.0) for v in unparsed["value"]],
                   [_metric_cell(r, "kappa_qw", 2) for _, r in kappa.iterrows()],
                   [estimate_cell(v, digits=2) for v in mean["value"]],
                   [", ".join(map(str, run.levels_used(str(t)))) or _DASH for t in unparsed.index])  # fmt: skip
    against = f" (g: {_people(run)})" if run.reference is not None else ""
    return captioned(table, caption + against, nowrap_intervals=True)


def cost_table(run: PromptSelectionRun, caption: str) -> Styler:
    """Per template: calls, tokens, cost and time."""
    shown = [c for c in _COST_COLUMNS if c in run.usage]
    table = run.usage[shown].rename(columns=_COST_COLUMNS).reset_index(names="template")
    return captioned(table.assign(template=table["template"].map(_name)), caption, 2)


def tests_table(run: PromptSelectionRun, caption: str) -> Styler:
    """The selected template against each other one on the same pairs: paired MAE difference and McNemar's test
    (``caption``), or one row saying no template was selected."""
    if run.selected is None:
        none = pd.DataFrame({"comparison": [f"none: no template selected ({NO_PARSED})"]})
        return captioned(none, "Template tests", nowrap_intervals=True)
    rows = [[f"{_name(r['selected'])} vs {_name(r['other'])}", int(r["n both parsed"]),
             *([estimate_cell(r["MAE difference"], r["low"], r["high"]),
                int(r["only selected right"]), int(r["only other right"]), f"{r['McNemar p']:.3f}",
                f"{r['Holm-adjusted p']:.3f}"]
               if pd.notna(r.get("McNemar p")) else [_DASH] * 5)]  # fewer than two pairs: not tested
            for r in run.template_tests.to_dict("records")]  # fmt: skip
    frame = pd.DataFrame(rows, columns=_TESTS_COLUMNS if rows else None)
    return captioned(frame, caption, nowrap_intervals=True)


def logprob_table(run: PromptSelectionRun, caption: str) -> Styler:
    """Per template: MAE of the argmax and of the expected score on the pairs with logprobs."""
    parsed, expected = run.measure("mae"), run.measure("mae_expected")
    counts = [m["n"].astype(int).to_numpy() for m in (parsed, expected)]
    cells = [[estimate_cell(v) for v in run.measure(m)["value"]]
             for m in ("mae_argmax_same", "mae_expected", "mae_expected_gain")]  # fmt: skip
    return captioned(_frame(_LOGPROB_COLUMNS, [_name(t) for t in parsed.index], *counts, *cells), caption)


def logprob_lines(run: PromptSelectionRun) -> list[str]:
    """Whether the expected score lowers the MAE, per template, in words."""
    expected, argmax, gain = (run.measure(m)["value"] for m in ("mae_expected", "mae_argmax_same", "mae_expected_gain"))
    n = run.measure("mae_expected")["n"]
    if (n == 0).all():
        return [T("logprob.none")]
    return [T("logprob.line", t=t, lowers=gain[t] < 0, argmax=f"{argmax[t]:.3f}", expected=f"{expected[t]:.3f}",
              n=int(n[t]))
            for t in n.index if n[t]]  # fmt: skip


def forest_rows(run: PromptSelectionRun, metric: str = "mae") -> pd.DataFrame:
    """Per template, this run's ``"mae"`` or ``"acc3"`` (%) with its CI and each paper model's point."""
    if metric not in ("mae", "acc3"):
        raise ValueError(f"metric is 'mae' or 'acc3', not {metric!r}")
    s, paper = run.measure(metric), paper_table("serendipity_table1")
    ours = _SCALE[metric] * s[["value", "low", "high"]].astype(float)
    ours = ours.assign(source="this run (95 % CI)").reset_index(names="template")
    paper = paper[paper["template"].isin(s.index)]
    theirs = pd.DataFrame({"template": paper["template"], "value": paper[_PAPER_COLUMN[metric]].astype(float),
                           "source": [_paper(m) for m in paper["model"]]})  # fmt: skip
    order = {t: k for k, t in enumerate(s.index)}  # the run's template order, this run before the paper
    rows = pd.concat([ours, theirs], ignore_index=True).sort_values("template", key=lambda c: c.map(order),
                                                                    kind="stable")  # fmt: skip
    return rows.assign(template=rows["template"].map(_name)).reset_index(drop=True)


def template_forest(run: PromptSelectionRun, metric: str = "mae") -> Figure:
    """:func:`forest_rows` as a forest plot, with the best constant predictor as the reference line."""
    _, level, value = run.best_constant(metric)
    xlabel = {"mae": "MAE against g (lower is better)", "acc3": "3-class accuracy % (higher is better)"}[metric]
    fig = forest_plot(forest_rows(run, metric), label="template", group="source", xlabel=xlabel,
                      reference=value * _SCALE[metric], reference_label=f"best constant predictor: always {level}",
                      width=8.0)  # fmt: skip
    fig.axes[0].set_title(_title(run), fontsize=8, loc="left")
    return done(fig)


def confusion_figure(run: PromptSelectionRun) -> Figure:
    """One confusion matrix (g against the predicted score, unparsed answers last) per template, two per row."""
    mae, acc3 = (run.measure(m)["value"] for m in ("mae", "acc3"))
    heads = [f"{_name(t)}: " + (f"MAE {mae[t]:.2f}, accuracy {100 * acc3[t]:.0f} %" if pd.notna(mae[t])
                                 else "nothing parsed")
             for t in run.confusions]  # fmt: skip
    panels = dict(zip(heads, run.confusions.values(), strict=True))
    return count_grid(panels, "judge's score", "g (ground truth)", _title(run))


def distribution_figure(run: PromptSelectionRun) -> Figure:
    """The share of each predicted score per template, beside the distribution of g (colour and hatch per series)."""
    dist, scores = run.distribution, list(dict.fromkeys(run.distribution["score"]))
    shares = dist.pivot(index="score", columns="source", values="share").loc[scores]
    series = {_name(s): shares[s].to_list() for s in dict.fromkeys(dist["source"])}
    fig, ax = plt.subplots(figsize=(8.0, 3.8))
    grouped_bars(ax, scores, series, colours=palette(len(series)), edgecolor="0.2")
    ax.set(xlabel="score", ylabel="share of judged pairs")
    ax.set_title(_title(run), fontsize=8, loc="left")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return done(fig)


def selection_lines(run: PromptSelectionRun, path: object = None) -> list[str]:
    """The selected template, where it was written, and whether the choice is statistically clear."""
    shown = shown_path(str(path)) if isinstance(path, str | PathLike) else path  # never the machine's absolute path
    where, n, choice = f" -> {shown}" if path is not None else "", len(run.eval_pairs), run.paper_choice
    if run.selected is None:
        return [T("selection.none", health=health_sentence(_health(run)), where=where), T("selection.none_then")]
    cell = _metric_cell(run.measure("mae").loc[run.selected])
    lines = [T("selection.selected", t=run.selected, cell=cell, where=where)]
    lines += [f"selected on {_people(run)} ({run.reference.source})"] if run.reference is not None else []
    lines += [T("selection.overlap", others=run.overlapping, n=n)] if run.overlapping else []
    return [*lines, T("selection.paper", t=choice.template, model=choice.model, mae=f"{choice.mae:.3f}")]


def verdict_lines(run: PromptSelectionRun) -> list[str]:
    """Each template against the best constant predictor on the pairs it parsed (paired MAE difference, its CI)."""
    name, _, value = run.best_constant()
    head = T("verdict.head", judge=run.judge_name, data=run.data_label, n=len(run.eval_pairs), name=name,
             mae=f"{value:.3f}")  # fmt: skip
    kappa, unparsed = (run.measure(m)["value"] for m in ("kappa_qw", "unparsed_rate"))
    return [head] + [
        T("verdict.template", t=t, cell=_metric_cell(r), relation=T(_RELATION[side(_diff(run, t), 0)]),
          diff=estimate_cell(_diff(run, t)), kappa=estimate_cell(kappa[t]), unparsed=f"{100 * unparsed[t]:.0f}",
          used=run.levels_used(str(t))) if r["n"] else T("verdict.nothing", t=t)
        for t, r in run.measure("mae").iterrows()
    ]  # fmt: skip


def _ranking_item(run: PromptSelectionRun, sel: str, cell: str) -> str:
    diffs = [Estimate.of(r.get("MAE difference"), r.get("low"), r.get("high"), _name(r["other"]))
             for r in run.template_tests.to_dict("records")]  # fmt: skip
    by = sides(diffs, 0.0)  # below 0: the selected template's MAE is lower
    together = [d.name for d in diffs if d not in by["below"]]
    key = "takeaways.only" if not diffs else "takeaways.not_first" if together else "takeaways.first"
    return T(key, t=sel, cell=cell, together=", ".join(together),
             beats=", ".join(d.name for d in by["below"]), untested=bool(by["none"]),
             them="it" if len(together) == 1 else "them")  # fmt: skip


def takeaways_items(run: PromptSelectionRun) -> list[str]:
    """What the CIs allow of the ranking, the constant floor, chance agreement, the paper's MAE and the sample."""
    health = _health(run)
    if run.selected is None:
        return [T("takeaways.none", health=health_sentence(health)), T("takeaways.none_then")]
    mae, k = (run.measure(m).loc[run.selected] for m in ("mae", "kappa_qw"))
    choice, (_, level, value) = run.paper_choice, run.best_constant()
    sel, diff = _name(run.selected), _diff(run, run.selected)
    kappa = Estimate.of(k["value"], round(k["low"], 2), round(k["high"], 2))  # a bound shown as 0.00 is 0
    theirs = run.measure("mae").reindex([choice.template]).iloc[0]  # NaN when this run left the paper's choice out
    paper = side(Estimate.of_row(theirs), choice.mae) if run.data.is_real else "standin"
    beside_paper = T(_BESIDE_PAPER[paper], t=_name(choice.template), mae=f"{choice.mae:.3f}", model=choice.model,
                     judge=run.judge_name, cell=_metric_cell(theirs, "mae", 2))  # fmt: skip
    people: list[str] = []
    if run.reference is not None:  # not the data's g: the paper's Table 1 is set beside it in other words
        people = [f"Selected on people's labels, not the data's g: {_people(run)} ({run.reference.source})."]
        beside_paper = _paper_beside_people(run, theirs)
    return [
        *people,
        *([T("takeaways.unusable", health=health_sentence(health))] if health.flagged else []),
        _ranking_item(run, sel, _metric_cell(mae, "mae", 2)),
        T(_VERSUS[side(diff, 0)], t=sel, constant=T("takeaways.constant", level=level, mae=f"{value:.2f}"),
          diff=estimate_cell(diff, digits=2)),
        T(_KAPPA[side(kappa, 0)], t=sel, cell=_metric_cell(k, "kappa_qw", 2)),
        beside_paper,
        sample_sentence(run),
    ]  # fmt: skip


def _paper_beside_people(run: PromptSelectionRun, theirs: pd.Series) -> str:
    """Why a run selected on people's labels cannot be set beside the paper's Table 1, with its number beside."""
    choice = run.paper_choice
    return (
        f"The reference here is {_people(run)}, not the paper's Serendipity-2018 g: other people, other pairs, so this "
        f"run neither confirms nor refutes the paper's Table 1 ({_name(choice.template)} best, MAE {choice.mae:.3f} "
        f"with {choice.model}); its {_name(choice.template)} MAE here: {_metric_cell(theirs, 'mae', 2)}."
    )


def sample_sentence(run: PromptSelectionRun) -> str:
    """The judged pairs and the mean width of the MAE CIs, in words (the takeaways and section 8 say it)."""
    n, width = len(run.eval_pairs), run.mae_ci_width
    return T("takeaways.sample_none", n=n) if pd.isna(width) else T("takeaways.sample", n=n, width=f"{width:.2f}")


def judge_saw_note(run: PromptSelectionRun) -> Callout:
    """What the judge saw: every template's prompts, the labelled pairs' domain words and the item fields."""
    return judge_saw([serendipity_use(run.config.templates, run.data.items)], run.data.domain)
