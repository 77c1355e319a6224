"""What chapter 1 shows about a prompt-selection run: Table 1 beside the paper, the figures, the caveats, and the
verdicts and takeaways its CIs allow. The words are ``text/prompt_selection.yaml``, but for what a run selected on
people's labels says of them (:func:`reference_lines`, below); every number comes from
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
from recjudge_utils.paper_tables import paper_table
from recjudge_utils.paths import shown_path
from recjudge_utils.reporting.answer_health import NO_PARSED, health_sentence, unanswerable_warning
from recjudge_utils.reporting.callouts import Callout, admonition, judge_caveat, stand_in_note
from recjudge_utils.reporting.cells import estimate_cell
from recjudge_utils.reporting.claims import Estimate, side, sides
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
_NAMES: dict[str, str] = T.raw("names")  # as the paper names them
_DASH = "—"
#: per metric: its interval's columns in a summary row, the scale it is shown at, the paper's column
_CI = {"mae": ("mae_lo", "mae_hi", 1, "mae"), "acc3": ("acc3_wilson_lo", "acc3_wilson_hi", 100, "accuracy_pct"),
       "kappa_qw": ("kappa_lo", "kappa_hi", 1, "")}  # fmt: skip


def _name(template: object) -> str:
    return _NAMES.get(str(template), str(template))


def _paper(model: str) -> str:
    return T("paper", model=model.split("-Instruct")[0])  # a header or legend names it short; a caption in full


def _frame(key: str, *columns: Sequence[Any]) -> pd.DataFrame:
    return pd.DataFrame(dict(zip(T.raw(f"columns.{key}"), columns, strict=True)))  # headers: columns.<key>


def _metric_cell(r: pd.Series, metric: str = "mae", digits: int = 3) -> str:
    """A metric of a summary row with its interval: its bound columns and scale (percent) are :data:`_CI`'s."""
    lo, hi, scale, _ = _CI[metric]
    return Estimate.of_row(r, metric, lo, hi).cell(digits, scale)


def _diff(run: PromptSelectionRun, template: object) -> Estimate:  # MAE minus the best constant predictor's
    return Estimate.of(*run.versus_constant.loc[template, ["diff", "diff_lo", "diff_hi"]])


def _health(run: PromptSelectionRun) -> AnswerHealth:
    return AnswerHealth.of_frames(*run.scores.values())


def _title(run: PromptSelectionRun) -> str:
    title = T("run_title", judge=run.judge_name, data=run.data_label, n=len(run.judged))
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
    return [*T("data.lines", data=run.data_label, real=run.data.is_real, source=run.data.source).split("\n"), g]


def data_notes(run: PromptSelectionRun) -> list[Callout]:
    """The stand-in note when the run judged the MovieLens proxy instead of Serendipity-2018."""
    return [] if run.data.is_real else [stand_in_note(run.data_label, T("data.note_paper"), T("data.note_detail"))]


def g_table(run: PromptSelectionRun) -> Styler:
    """The data's ground-truth distribution beside the paper's Serendipity-2018 one."""
    frame = run.g_counts.reset_index().rename(columns=T.raw("columns.g"))
    return captioned(frame, T("captions.g", data=run.data_label))


def sample_size_lines(run: PromptSelectionRun) -> list[str]:
    """The number of judged pairs beside the paper's, and where the difference comes from."""
    n, pool, pairs = len(run.judged), run.n_pool, len(run.data.pairs)
    judged = T("data.all_judged") if n == pool else T("data.sample_judged", n_pairs=run.config.n_pairs)
    return T("data.sample_size", n=f"{n:,}", paper_n=f"{run.g_counts.loc['total', 'paper_pairs']:,}",
             data=run.data_label, pairs=f"{pairs:,}", excluded=f"{pairs - pool:,}", pool=f"{pool:,}",
             users=run.n_example_users, examples=len(run.examples), judged=judged).split("\n")  # fmt: skip


def examples_table(run: PromptSelectionRun) -> Styler:
    """The few-shot examples with their levels and where the step scores come from."""
    table = run.examples[["user", "item", "g", "relevance", "unexpectedness", "aux_source", "candidate_text"]]
    return captioned(table.rename(columns=T.raw("columns.examples")), T("captions.examples", n=len(table)))


def judging_lines(run: PromptSelectionRun) -> list[str]:
    """Examples, judged pairs and, per template, calls, cache hits, statuses, time and prompt versions."""
    lines = T("judging.head", examples=len(run.examples), users=run.n_example_users, n=len(run.judged),
              judged_users=run.n_judged_users, pool=run.n_pool, judged_g=run.judged_g).split("\n")  # fmt: skip
    return lines + [
        T("judging.template", t=f"{t:5s}", pairs=j["pairs"], calls=j["calls"], hits=j["cache_hits"],
          status=j["status"], wall=f"{run.timings[f'judge {t}']:.1f}", versions=j["versions"])
        for t, j in run.judging.iterrows()
    ]  # fmt: skip


def example_prompt(run: PromptSelectionRun, template: str = "cot") -> str:
    """What the judge sees for the first judged pair: system prompt, first example, the judged pair."""
    m = [msg["content"] for msg in run.example_messages(template)]
    example = [T("judging.prompt_example", user=m[1], assistant=m[2])] if len(m) > 2 else []
    return "\n".join([T("judging.prompt", n=len(m), turns=len(m) - 2, system=m[0]), *example,
                      T("judging.prompt_pair", pair=m[-1])])  # fmt: skip


def unparsed_answers(run: PromptSelectionRun, n: int = 10) -> Styler:
    """The first ``n`` answers no template could parse, with the raw text."""
    every = pd.concat([s.assign(template=[_name(t)] * len(s)) for t, s in run.scores.items()])
    bad = every[every["status"] != "parsed"][["template", "user", "item", "status", "reason", "raw_text"]]
    caption = T("captions.unparsed", bad=_health(run).unusable, n=_health(run).n, shown=n)
    return captioned(bad.head(n).rename(columns=T.raw("columns.unparsed")), caption)


def health_notes(run: PromptSelectionRun) -> list[Callout]:
    """The warning shown when no template produced a parsed answer (nothing otherwise)."""
    return [] if run.selected is not None else [unanswerable_warning(T("notes.question"), _health(run))]


def table1_side_by_side(summary: pd.DataFrame, paper: pd.DataFrame, ours: str = T("this_run")) -> pd.DataFrame:
    """The paper's Table 1 (template, model, mae, accuracy_pct) beside ``summary``'s estimates with their CIs."""
    (mae, acc, parsed), columns = T.raw("columns.table1"), {}
    for head, metric, digits, ours_digits in ((mae, "mae", 3, 2), (acc, "acc3", 1, 1)):
        printed = paper.pivot(index="template", columns="model", values=_CI[metric][3]).reindex(summary.index)
        for model in dict.fromkeys(paper["model"]):
            columns[(head, _paper(model))] = [_DASH if pd.isna(v) else f"{v:.{digits}f}" for v in printed[model]]
        ours_cells = [
            _metric_cell(r, metric, ours_digits) if r["n_parsed"] else NO_PARSED for _, r in summary.iterrows()
        ]
        columns[(head, T("ci_header", ours=ours))] = ours_cells
    columns[("", parsed)] = [f"{int(r.n_parsed)} / {int(r.n)}" for r in summary.itertuples()]
    return pd.DataFrame(columns, index=pd.Index([_name(t) for t in summary.index], name="template"))


def table1(run: PromptSelectionRun) -> Styler:
    """Table 1: this run's MAE and 3-class accuracy per template, beside the paper's two models."""
    cfg, paper = run.config, paper_table("serendipity_table1")
    caption = T("captions.table1", judge=run.judge_name, data=run.data_label, n=len(run.judged),
                shots=cfg.n_shots, history=cfg.n_history, models=" and ".join(dict.fromkeys(paper["model"])),
                paper_n=f"{run.g_counts.loc['total', 'paper_pairs']:,}")  # fmt: skip
    if run.reference is not None:
        caption += f" This run's numbers are against {_people(run)}, not the data's g."
    return captioned(table1_side_by_side(run.summary, paper).reset_index(), caption, nowrap_intervals=True)


def table1_notes(run: PromptSelectionRun) -> list[Callout]:
    """The judge caveat, and on the stand-in, that CoT and LtM are shown the rule that made g."""
    rule = Callout(admonition("admonition", T("notes.rule"), T("notes.rule_title"), ("note",)))
    return [c for c in (judge_caveat(run.judge_name), rule if run.examples_show_rule else None) if c is not None]


def baselines_table(run: PromptSelectionRun) -> Styler:
    """The constant predictors' MAE, 3-class accuracy and weighted kappa with their CIs."""
    b = run.baselines.astype(float)
    rows = [r for _, r in b.iterrows()]
    table = _frame("baselines", list(b.index), [_metric_cell(r) for r in rows],
                   [_metric_cell(r, "acc3", 1) for r in rows], [estimate_cell(v) for v in b["kappa_qw"]])  # fmt: skip
    return captioned(table, T("captions.baselines", n=len(run.eval_pairs)), nowrap_intervals=True)


def agreement_table(run: PromptSelectionRun) -> Styler:
    """Per template: parsed answers, quadratic weighted kappa with its CI, the mean score and the levels used."""
    s = run.summary
    table = _frame("agreement", [_name(t) for t in s.index],
                   [f"{int(r.n_parsed)} / {int(r.n)}" for r in s.itertuples()],
                   [estimate_cell(v, digits=0, scale=100.0) for v in s["unparsed_rate"]],
                   [_metric_cell(r, "kappa_qw", 2) for _, r in s.iterrows()],
                   [estimate_cell(v, digits=2) for v in s["mean_pred"]],
                   [", ".join(map(str, run.levels_used(str(t)))) or _DASH for t in s.index])  # fmt: skip
    against = f" (g: {_people(run)})" if run.reference is not None else ""
    return captioned(table, T("captions.agreement", mean_g=f"{run.mean_g:.2f}") + against, nowrap_intervals=True)


def cost_table(run: PromptSelectionRun) -> Styler:
    """Per template: calls, tokens, cost and time."""
    heads = T.raw("columns.cost")
    table = run.summary[[c for c in heads if c in run.summary]].rename(columns=heads).reset_index(names="template")
    return captioned(table.assign(template=table["template"].map(_name)), T("captions.cost", judge=run.judge_name), 2)


def tests_table(run: PromptSelectionRun) -> Styler:
    """The selected template against each other one on the same pairs: paired MAE difference and McNemar's test."""
    if run.selected is None:
        none = pd.DataFrame({"comparison": [T("captions.tests_none_row", why=NO_PARSED)]})
        return captioned(none, T("captions.tests_none"), nowrap_intervals=True)
    rows = [[f"{_name(r['selected'])} vs {_name(r['other'])}", int(r["n both parsed"]),
             *([estimate_cell(r["MAE difference"], r["MAE diff low"], r["MAE diff high"]),
                int(r["only selected right"]), int(r["only other right"]), f"{r['McNemar p']:.3f}",
                f"{r['Holm-adjusted p']:.3f}"]
               if pd.notna(r.get("McNemar p")) else [_DASH] * 5)]  # fewer than two pairs: not tested
            for r in run.template_tests.to_dict("records")]  # fmt: skip
    frame = pd.DataFrame(rows, columns=T.raw("columns.tests") if rows else None)
    return captioned(frame, T("captions.tests"), nowrap_intervals=True)


def logprob_table(run: PromptSelectionRun) -> Styler:
    """Per template: MAE of the argmax and of the expected score on the pairs with logprobs."""
    s = run.summary
    counts = [s[c].astype(int).to_numpy() for c in ("n_parsed", "n_expected")]
    cells = [[estimate_cell(v) for v in s[c]] for c in ("mae_argmax_same", "mae_expected", "mae_expected_gain")]
    return captioned(_frame("logprob", [_name(t) for t in s.index], *counts, *cells), T("captions.logprob"))


def logprob_lines(run: PromptSelectionRun) -> list[str]:
    """Whether the expected score lowers the MAE, per template, in words."""
    if (run.summary["n_expected"] == 0).all():
        return [T("logprob.none")]
    return [T("logprob.line", t=t, lowers=r["mae_expected_gain"] < 0, argmax=f"{r['mae_argmax_same']:.3f}",
              expected=f"{r['mae_expected']:.3f}", n=int(r["n_expected"]))
            for t, r in run.summary.iterrows() if r["n_expected"]]  # fmt: skip


def forest_rows(run: PromptSelectionRun, metric: str = "mae") -> pd.DataFrame:
    """Per template, this run's ``"mae"`` or ``"acc3"`` (%) with its CI and each paper model's point."""
    if metric not in ("mae", "acc3"):
        raise ValueError(f"metric is 'mae' or 'acc3', not {metric!r}")
    (s, paper), (lo, hi, scale, printed) = (run.summary, paper_table("serendipity_table1")), _CI[metric]
    ours = scale * pd.DataFrame({"value": s[metric], "low": s[lo], "high": s[hi]}).astype(float)
    ours = ours.assign(source=T("ci_header", ours=T("this_run"))).reset_index(names="template")
    paper = paper[paper["template"].isin(s.index)]
    theirs = pd.DataFrame({"template": paper["template"], "value": paper[printed].astype(float),
                           "source": [_paper(m) for m in paper["model"]]})  # fmt: skip
    order = {t: k for k, t in enumerate(s.index)}  # the run's template order, this run before the paper
    rows = pd.concat([ours, theirs], ignore_index=True).sort_values("template", key=lambda c: c.map(order),
                                                                    kind="stable")  # fmt: skip
    return rows.assign(template=rows["template"].map(_name)).reset_index(drop=True)


def template_forest(run: PromptSelectionRun, metric: str = "mae") -> Figure:
    """:func:`forest_rows` as a forest plot, with the best constant predictor as the reference line."""
    _, level, value = run.best_constant(metric)
    fig = forest_plot(forest_rows(run, metric), label="template", group="source", xlabel=T(f"figures.forest_{metric}"),
                      reference=value * _CI[metric][2], reference_label=T("figures.constant", level=level),
                      width=8.0)  # fmt: skip
    fig.axes[0].set_title(_title(run), fontsize=8, loc="left")
    return done(fig)


def confusion_figure(run: PromptSelectionRun) -> Figure:
    """One confusion matrix (g against the predicted score, unparsed answers last) per template, two per row."""
    heads = [T("figures.confusion", name=_name(t), scores=pd.notna(r["mae"]), mae=f"{r['mae']:.2f}",
               acc=f"{100 * r['acc3']:.0f}") for t, r in run.summary.loc[list(run.confusions)].iterrows()]  # fmt: skip
    panels = dict(zip(heads, run.confusions.values(), strict=True))
    return count_grid(panels, T("figures.confusion_x"), T("figures.confusion_y"), _title(run))


def distribution_figure(run: PromptSelectionRun) -> Figure:
    """The share of each predicted score per template, beside the distribution of g (colour and hatch per series)."""
    dist, scores = run.distribution, list(dict.fromkeys(run.distribution["score"]))
    shares = dist.pivot(index="score", columns="source", values="share").loc[scores]
    series = {_name(s): shares[s].to_list() for s in dict.fromkeys(dist["source"])}
    fig, ax = plt.subplots(figsize=(8.0, 3.8))
    grouped_bars(ax, scores, series, colours=palette(len(series)), edgecolor="0.2")
    ax.set(xlabel=T("figures.score"), ylabel=T("figures.share"))
    ax.set_title(_title(run), fontsize=8, loc="left")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return done(fig)


def selection_lines(run: PromptSelectionRun, path: object = None) -> list[str]:
    """The selected template, where it was written, and whether the choice is statistically clear."""
    shown = shown_path(str(path)) if isinstance(path, str | PathLike) else path  # never the machine's absolute path
    where, n, choice = f" -> {shown}" if path is not None else "", len(run.eval_pairs), run.paper_choice
    if run.selected is None:
        return [T("selection.none", health=health_sentence(_health(run)), where=where), T("selection.none_then")]
    lines = [T("selection.selected", t=run.selected, cell=_metric_cell(run.summary.loc[run.selected]), where=where)]
    lines += [f"selected on {_people(run)} ({run.reference.source})"] if run.reference is not None else []
    lines += [T("selection.overlap", others=run.overlapping, n=n)] if run.overlapping else []
    return [*lines, T("selection.paper", t=choice.template, model=choice.model, mae=f"{choice.mae:.3f}")]


def verdict_lines(run: PromptSelectionRun) -> list[str]:
    """Each template against the best constant predictor on the pairs it parsed (paired MAE difference, its CI)."""
    name, _, value = run.best_constant()
    head = T("verdict.head", judge=run.judge_name, data=run.data_label, n=len(run.eval_pairs), name=name,
             mae=f"{value:.3f}")  # fmt: skip
    return [head] + [
        T("verdict.template", t=t, cell=_metric_cell(r), relation=T(f"relation.{side(_diff(run, t), 0)}"),
          diff=_diff(run, t).cell(), kappa=estimate_cell(r["kappa_qw"]), unparsed=f"{100 * r['unparsed_rate']:.0f}",
          used=run.levels_used(str(t))) if r["n_parsed"] else T("verdict.nothing", t=t)
        for t, r in run.summary.iterrows()
    ]  # fmt: skip


def _ranking_item(run: PromptSelectionRun, sel: str, cell: str) -> str:
    diffs = [Estimate.of(r.get("MAE difference"), r.get("MAE diff low"), r.get("MAE diff high"), _name(r["other"]))
             for r in run.template_tests.to_dict("records")]  # fmt: skip
    by = sides(diffs, 0.0)  # below 0: the selected template's MAE is lower
    together = [d.name for d in diffs if d not in by["below"]]
    key = "only" if not diffs else "not_first" if together else "first"
    return T(f"takeaways.{key}", t=sel, cell=cell, together=", ".join(together),
             beats=", ".join(d.name for d in by["below"]), untested=bool(by["none"]),
             them="it" if len(together) == 1 else "them")  # fmt: skip


def takeaways_items(run: PromptSelectionRun) -> list[str]:
    """What the CIs allow of the ranking, the constant floor, chance agreement, the paper's MAE and the sample."""
    health = _health(run)
    if run.selected is None:
        return [T("takeaways.none", health=health_sentence(health)), T("takeaways.none_then")]
    r, choice, (_, level, value) = run.summary.loc[run.selected], run.paper_choice, run.best_constant()
    sel, diff = _name(run.selected), _diff(run, run.selected)
    kappa = Estimate.of(r["kappa_qw"], round(r["kappa_lo"], 2), round(r["kappa_hi"], 2))  # a bound shown as 0.00 is 0
    theirs = run.summary.reindex([choice.template]).iloc[0]  # NaN when this run left the paper's choice out
    paper = side(Estimate.of(*theirs[["mae", "mae_lo", "mae_hi"]]), choice.mae) if run.data.is_real else "standin"
    beside_paper = T(f"takeaways.paper.{paper}", t=_name(choice.template), mae=f"{choice.mae:.3f}", model=choice.model,
                     judge=run.judge_name, cell=_metric_cell(theirs, "mae", 2))  # fmt: skip
    people: list[str] = []
    if run.reference is not None:  # not the data's g: the paper's Table 1 is set beside it in other words
        people = [f"Selected on people's labels, not the data's g: {_people(run)} ({run.reference.source})."]
        beside_paper = _paper_beside_people(run, theirs)
    return [
        *people,
        *([T("takeaways.unusable", health=health_sentence(health))] if health.flagged else []),
        _ranking_item(run, sel, _metric_cell(r, "mae", 2)),
        T(f"takeaways.versus.{side(diff, 0)}", t=sel, constant=T("takeaways.constant", level=level, mae=f"{value:.2f}"),
          diff=diff.cell(2)),
        T(f"takeaways.kappa.{side(kappa, 0)}", t=sel, cell=_metric_cell(r, "kappa_qw", 2)),
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
