"""What chapter 4 shows about a SAER run: Tables 1-3 beside the paper's, figures, agreement, time and cost, notes,
takeaways and the kappa exercise. The words are ``text/saer.yaml``; every number (the paper's Wilson intervals too)
comes from :class:`~recjudge_utils.experiments.saer.SaerRun` (or :mod:`~recjudge_utils.experiments.kappa_exercise`)."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from pandas.io.formats.style import Styler

from recjudge_utils.answer_formats.saer_fields import CATEGORIES
from recjudge_utils.data import Dataset
from recjudge_utils.experiments import saer as ex
from recjudge_utils.experiments.kappa_exercise import KappaByHand
from recjudge_utils.experiments.saer import ALGORITHMS, ORDER_OUTCOMES, SaerRun
from recjudge_utils.judge.records import AnswerHealth
from recjudge_utils.paper_tables import paper_table
from recjudge_utils.protocols.adversarial import OUTCOMES
from recjudge_utils.protocols.context.saer import substitutions
from recjudge_utils.protocols.saer import VERSION_NAMES
from recjudge_utils.reporting.answer_health import health_sentence, unanswerable_warning
from recjudge_utils.reporting.callouts import Callout, admonition, exercise, stand_in_note
from recjudge_utils.reporting.cells import estimate_cell
from recjudge_utils.reporting.claims import Estimate, apart, leader, side
from recjudge_utils.reporting.figures import done, forest_plot, palette, stacked_bars, whisker
from recjudge_utils.reporting.judge_saw import JudgeUse, judge_saw_lines, saer_use
from recjudge_utils.reporting.tables import captioned, text_table
from recjudge_utils.reporting.text import chapter_text

__all__ = [
    "agreement_table", "consistency_table", "context_note", "copied_table", "customers_table", "data_notes",
    "example_lists", "flagged_summary", "health_notes", "kappa_exercise", "plot_detection", "plot_forest",
    "plot_label_shares", "plot_position", "run_notes", "substitutions_table", "table1", "table2", "table3",
    "takeaways_items", "time_cost", "unparsed_summary",
]  # fmt: skip

T = chapter_text("saer")
#: one hatch per segment or series, so figures read in grey scale
_HATCHES = ("..", "//", "xx", "\\\\", "++")


def _share(row: Any, stem: str, name: str = "") -> Estimate:
    """One outcome's share from a run frame's row: ``<stem>_%``, ``_lo``, ``_hi``."""
    return Estimate.of_row(row, f"{stem}_%", f"{stem}_lo", f"{stem}_hi", name)


def _paper(run: SaerRun, measure: str) -> Estimate:
    return Estimate.of_row(run.paper.loc[measure])


def _of(count: Any, n: Any, cell: str | None = None) -> str:
    """``3 of 9``, or ``3 of 9: 33.3 [12.1, 64.6]`` with a cell."""
    return T("labels.count", count=int(count), n=int(n)) + (f": {cell}" if cell is not None else "")


def _titles(run: SaerRun) -> dict[str, Any]:
    """What every run table's caption names: the run's title and its data."""
    return {"title": run.title_suffix, "data": run.data_label}


def _note(title: str, lines: list[str]) -> Callout:
    return Callout(admonition("admonition", "\n".join(f"- {line}" for line in lines), title=title, classes=("note",)))


def _version_label(version: str) -> str:
    return T("version", name=VERSION_NAMES[version], version=version)


def data_notes(dataset: Dataset) -> list[Callout]:
    """The stand-in note when the data is not SAER's own, Amazon Beauty (nothing otherwise)."""
    if ex.is_paper_data(dataset):
        return []
    return [stand_in_note(dataset.display_label, T("stand_in.paper_data"), T("stand_in.detail"))]


def substitutions_table(dataset: Dataset) -> Styler:
    """SAER's context fields and what this run uses instead (named substitutes)."""
    rows = list(substitutions(dataset.domain).items())
    return text_table(T, "captions.substitutions", "columns.substitutions", rows, data=dataset.display_label)


def customers_table(run: SaerRun) -> Styler:
    """The sampled customers: id, number of interactions and engagement stratum."""
    customers = run.panel.customers[["user", "n_interactions", "engagement"]].to_numpy().tolist()
    return text_table(T, "captions.customers", "columns.customers", customers, **_titles(run))


def context_note(run: SaerRun) -> Callout:
    """What this run showed the judge of each customer (the window and any cut) and whether a future was held out."""
    cfg, panel = run.config, run.panel
    counts = T("context.counts", customers=len(panel.contexts), **panel.shown)
    if cfg.max_history is None:
        lines = [T("context.whole", days=cfg.window_days, counts=counts)]
    else:
        lines = [T("context.cut", n=cfg.max_history, days=cfg.window_days, counts=counts)]
    lines.append(T("context.heldout", n=panel.heldout) if panel.heldout else T("context.nothing_held"))
    lines.extend(judge_saw_lines([_saer_use(run)], panel.words))
    return _note(T("context.title"), lines)


def _saer_use(run: SaerRun) -> JudgeUse:
    """The SAER prompts this run sent (pointwise: the main version, every version under the ablation; pairwise:
    every version, the adversarial test's) and the fields of its item lines."""
    cfg, panel = run.config, run.panel
    pointwise = cfg.prompt_versions if cfg.pointwise_ablation else (cfg.main_version,)
    dataset = panel.dataset
    items = dataset.items if dataset is not None else pd.DataFrame({"title": [], "genres": []})
    return saer_use(panel.domain, {"pointwise": pointwise, "pairwise": cfg.prompt_versions}, items, dataset)


def example_lists(run: SaerRun, user: int | None = None) -> Styler:
    """Side-by-side top-k lists of the two algorithms for one customer (first sampled by default)."""
    user = run.panel.users[0] if user is None else int(user)
    lists = {a.capitalize(): [run.panel.catalogue.line(i) for i in run.panel.lists[a][user]] for a in ALGORITHMS}
    frame = pd.DataFrame({"Rank": range(1, len(lists[ALGORITHMS[0].capitalize()]) + 1), **lists})
    return captioned(frame, T("captions.example_lists", k=run.config.top_k, user=user, data=run.data_label))


def table1(run: SaerRun) -> Styler:
    """Table 1: our share of parsed lists per label (95 % Wilson interval) beside the paper's judge and humans."""
    paper = paper_table("saer_table1").set_index(["algorithm", "category"])
    lists = {alg: T("labels.lists", algorithm=alg, n=int(r["n_parsed"]), unparsed=int(r["n_unparsed"]))
             for alg, r in run.labels.groupby("algorithm").first().iterrows()}  # fmt: skip
    rows = [
        (lists[r.algorithm], r.category, estimate_cell(r.pct, r.low, r.high, digits=1),
         *paper.loc[(r.algorithm, r.category), ["saer_pct", "human_a_pct", "human_b_pct"]])
        for r in run.labels.itertuples(index=False)
    ]  # fmt: skip
    return text_table(T, "captions.table1", "columns.table1", rows, **_titles(run))


def flagged_summary(run: SaerRun) -> Styler:
    """Per algorithm: how many items the judge flagged per parsed list, and the most-flagged titles."""
    title = run.panel.catalogue.title
    rows = [
        (r.algorithm, r.n_parsed, r.flagged_mean, r.flagged_pct,
         "; ".join(T("labels.flagged_item", title=title(i), count=c) for i, c in r.most) or "-")
        for r in run.flagged.rename(columns={"flagged_%": "flagged_pct"}).itertuples(index=False)
    ]  # fmt: skip
    return text_table(
        T, "captions.flagged", "columns.flagged", rows, precision=2, version=run.config.main_version, **_titles(run)
    )


def plot_label_shares(run: SaerRun) -> Figure:
    """Label shares per algorithm, ours above the paper's judge and humans; our whiskers: the Good share's interval
    after Good, 100 minus the Poor share's after Partial."""
    paper = paper_table("saer_table1").set_index(["algorithm", "category"])
    styles = list(zip(palette(len(CATEGORIES)), _HATCHES, strict=False))
    sources = dict(zip(("saer_pct", "human_a_pct", "human_b_pct"), T.raw("figures.sources"), strict=True))
    fig, axes = plt.subplots(len(ALGORITHMS), 1, figsize=(7.2, 4.8), sharex=True)
    for ax, alg in zip(axes, ALGORITHMS, strict=True):
        ours = run.labels.loc[run.labels["algorithm"] == alg].set_index("category").loc[list(CATEGORIES)]
        n_parsed = int(ours["n_parsed"].iloc[0])
        if n_parsed:
            stacked_bars(ax, [0], [ours["pct"].astype(float).tolist()], styles, height=0.62, annotate_from=8)
            good, poor = ours.iloc[0], ours.iloc[-1]
            whisker(ax, float(good["pct"]), 0, float(good["low"]), float(good["high"]))
            whisker(ax, 100 - float(poor["pct"]), 0, 100 - float(poor["high"]), 100 - float(poor["low"]))
        shares = [[float(paper.loc[(alg, c), col]) for c in CATEGORIES] for col in sources]
        stacked_bars(ax, [1, 2, 3], shares, styles, height=0.62, annotate_from=8)
        ax.set_yticks(range(4), [T("figures.ours_lists", n=n_parsed), *sources.values()], fontsize=8)
        ax.invert_yaxis()
        ax.set_title(alg, fontsize=9, loc="left")
        ax.set_xlim(0, 100)
    axes[-1].set_xlabel(T("figures.labels_x"))
    handles = [Patch(facecolor=c, hatch=h, edgecolor="0.25", label=cat)
               for (c, h), cat in zip(styles, CATEGORIES, strict=True)]  # fmt: skip
    fig.legend(handles=handles, loc="lower center", ncol=len(CATEGORIES), fontsize=8, frameon=False)
    return done(fig, rect=(0, 0.06, 1, 1))


def table2(run: SaerRun) -> Styler:
    """Table 2: wins and ties of raw calls and adjudicated pairs (Wilson intervals) beside the paper's rows."""
    paper = paper_table("saer_table2").set_index("scope")
    keys = ("cooccurrence_win", "embedding_win", "tie")
    rows: list[tuple[Any, ...]] = []

    def theirs(verdicts: str, ref: Any) -> tuple[Any, ...]:
        return (verdicts, T("paper"), str(int(ref["n"])), *(estimate_cell(ref[f"{k}_pct"], digits=1) for k in keys))

    for (_, r), verdicts, scope in zip(run.verdicts.iterrows(), T.raw("labels.verdicts"),
                                       ("SAER Raw", "SAER Adjudicated"), strict=True):  # fmt: skip
        rows.append((verdicts, T("ours"), _of(r["n_parsed"], r["n_parsed"] + r["n_unparsed"]),
                     *(_share(r, k).cell(1) for k in keys)))  # fmt: skip
        rows.append(theirs(verdicts, paper.loc[scope]))
    rows.append(theirs(T("labels.human_merged"), paper.loc["Human Merged"]))
    return text_table(T, "captions.table2", "columns.table2", rows, **_titles(run))


def consistency_table(run: SaerRun) -> Styler:
    """Position consistency, answers naming Set 1 and unparsed pairwise answers, ours beside the paper's."""
    cons, first, raw = run.position.loc["position consistency"], run.position.loc["named Set 1"], run.verdicts.iloc[0]
    ours = [_of(r["count"], r["n"], estimate_cell(r["pct"], r["low"], r["high"], digits=1)) for r in (cons, first)]
    paper = run.paper.loc["position consistency"]
    rows = [
        (T("consistency.consistent"), ours[0], _of(paper["count"], paper["n"], f"{paper['value']:.1f}")),
        (T("consistency.first"), ours[1], T("not_reported")),
        (T("consistency.unparsed"), _of(raw["n_unparsed"], raw["n_parsed"] + raw["n_unparsed"]), T("not_reported")),
    ]
    return text_table(T, "captions.consistency", "columns.consistency", rows, **_titles(run))


def plot_position(run: SaerRun) -> Figure:
    """What the two orders said per customer (:data:`ORDER_OUTCOMES`) above the paper's consistent comparisons,
    each with a Wilson whisker at the consistency boundary."""
    orders = run.orders.loc[list(ORDER_OUTCOMES)]
    judged, unjudged = int(orders["count"].sum()), int(run.orders.loc["unjudged", "count"])
    colours = palette(len(orders) + 1)
    paper = run.paper.loc["position consistency"]
    count, n = int(paper["count"]), int(paper["n"])
    fig, ax = plt.subplots(figsize=(7.2, 2.8))
    if judged:
        labels = [f"{k} ({v})" for k, v in orders["count"].items()]
        stacked_bars(ax, [0], [orders["pct"].tolist()], list(zip(colours[:-1], _HATCHES, strict=False)), labels,
                     height=0.62, annotate_from=8)  # fmt: skip
        cons = run.position.loc["position consistency"]
        whisker(ax, float(cons["pct"]), 0, float(cons["low"]), float(cons["high"]))
    paper_labels = [T("figures.paper_consistent", n=count), T("figures.paper_inconsistent", n=n - count)]
    stacked_bars(ax, [1], [[paper["value"], 100 - paper["value"]]], [(colours[-1], "oo"), ("white", "--")],
                 paper_labels, height=0.62, annotate_from=8)  # fmt: skip
    whisker(ax, paper["value"], 1, paper["low"], paper["high"])
    ticks = [T("figures.ours_customers", n=judged, unjudged=unjudged), T("figures.paper_comparisons", n=n)]
    ax.set_yticks([0, 1], ticks, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel(T("figures.position_x"))
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.32), ncol=2, frameon=False)
    return done(fig)


def table3(run: SaerRun) -> Styler:
    """Table 3: adversarial outcomes per prompt version (Wilson intervals), the paper's row under each of ours and
    its two human annotators at the end."""
    paper = paper_table("saer_table3")
    paper_v, rows = paper.dropna(subset=["prompt_version"]).set_index("prompt_version"), []

    def theirs(label: str, key: str, ref: Any) -> tuple[Any, ...]:
        pairs = str(int(run.paper.loc[f"adversarial correct, {key}", "n"]))
        shares = (estimate_cell(ref[f"{o}_pct"], digits=1) for o in OUTCOMES)
        return (label, T("paper"), pairs, *shares, T("not_reported"))

    for _, r in run.detection.iterrows():
        version = _version_label(str(r["prompt_version"]))
        judged = _of(r["n_parsed"], r["n_parsed"] + r["n_unparsed"])
        shares = (_share(r, o).cell(1) for o in OUTCOMES)
        rows.append((version, T("ours"), judged, *shares, estimate_cell(r["chose_Set_1_%"], digits=1)))
        rows.append(theirs(version, r["prompt_version"], paper_v.loc[r["prompt_version"]]))
    rows += [theirs(h["evaluator"], h["evaluator"], h) for _, h in paper.loc[paper["prompt_version"].isna()].iterrows()]
    return text_table(T, "captions.table3", "columns.table3", rows, **_titles(run))


def plot_detection(run: SaerRun) -> Figure:
    """Adversarial detection per prompt version, ours beside the paper's (Wilson whiskers), the paper's humans, and
    a line at what a judge always naming Set 1 scores."""
    humans = paper_table("saer_table3").loc[lambda t: t["prompt_version"].isna(), "evaluator"].tolist()
    det, versions, width = run.detection.set_index("prompt_version"), list(run.config.prompt_versions), 0.38
    labels = [f"{VERSION_NAMES[v]}\n({v})" for v in versions] + [h.replace(" Annotator ", "\n") for h in humans]
    bars = [(k - width / 2, _share(det.loc[v], "correct"), 0) for k, v in enumerate(versions)]
    bars += [(k + width / 2 if k < len(versions) else k, _paper(run, f"adversarial correct, {key}"), 1)
             for k, key in enumerate((*versions, *humans))]  # fmt: skip
    pairs = int(run.paper.loc[f"adversarial correct, {versions[0]}", "n"])
    legend = [T("figures.detection_ours"), T("figures.detection_paper", n=pairs)]
    fig, ax = plt.subplots(figsize=(7.2, 3.4))
    for i, (x, e, src) in enumerate(bars):  # ours first, then the paper's: one legend entry each
        ax.bar(x, np.nan_to_num(e.value), width, color=palette(2)[src], hatch=_HATCHES[1 - src], edgecolor="0.25",
               label=legend[src] if i in (0, len(versions)) else None)  # fmt: skip
        whisker(ax, e.value, x, e.low, e.high, horizontal=False)
    first = float(det.loc[run.config.main_version, "genuine_first_%"])
    if not np.isnan(first):
        ax.axhline(first, color="0.3", linestyle="--", linewidth=1, label=T("figures.always_first", pct=f"{first:.0f}"))
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ax.set_ylim(0, 105)
    ax.set_ylabel(T("figures.detection_y"))
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.24), ncol=2, frameon=False)
    return done(fig)


def plot_forest(run: SaerRun) -> Figure:
    """A forest plot of :meth:`SaerRun.headline`: ours and the paper's headline shares with their intervals."""
    return forest_plot(run.headline(), label="measure", group="source", xlabel=T("figures.forest_x"), width=7.2)


def agreement_table(run: SaerRun) -> Styler:
    """Raw agreement and weighted kappa (bootstrap intervals) between this run's labelers, then the paper's rows."""
    rows = [
        (r.task, T("ours"), f"{r.labeler_a} vs {r.labeler_b}".replace("order: ", ""), str(int(r.n_both_parsed)),
         estimate_cell(r.raw, r.raw_lo, r.raw_hi, digits=1), estimate_cell(r.kappa_w, r.kappa_lo, r.kappa_hi, digits=2))
        for r in run.agreements.rename(columns={"raw_agreement_%": "raw"}).itertuples(index=False)
    ]  # fmt: skip
    metrics = paper_table("saer_metrics").set_index("metric")["value"]
    comparisons = str(int(run.paper.loc["position consistency", "n"]))
    rows += [
        (task, T("paper"), labelers, cases or comparisons, estimate_cell(metrics[f"{stem}_agree"], digits=1),
         estimate_cell(metrics[f"{stem}_kappa_w"], digits=2))
        for task, stem, labelers, cases in T.raw("agreement_paper")
    ]  # fmt: skip
    return text_table(T, "captions.agreement", "columns.agreement", rows, **_titles(run))


def kappa_exercise(k: KappaByHand) -> Callout:
    """The weighted-kappa exercise with :func:`~recjudge_utils.experiments.kappa_exercise.kappa_by_hand`'s worked
    solution."""
    solution = T(
        "kappa.solution", codes_a=k.codes_a, codes_b=k.codes_b, costs=k.costs, observed=f"{k.observed:.2f}",
        shares_a=np.round(k.shares_a, 2).tolist(), shares_b=np.round(k.shares_b, 2).tolist(),
        expected=f"{k.expected:.2f}", kappa=f"{k.kappa:.3f}", package=f"{k.package:.3f}", changes=k.n_changes,
        where=k.where + 1, to=k.to, worst=f"{k.worst:.3f}", before=k.steps_before, after=k.steps_after,
        before_cost=k.steps_before**2, after_cost=k.steps_after**2,
    )  # fmt: skip
    return exercise(T("kappa.title"), T("kappa.body", a=k.a, b=k.b, task=T("kappa.task")), solution)


def time_cost(run: SaerRun) -> Styler:
    """Calls, tokens, time and cost of this run, extrapolated to the paper's run size, beside the paper's."""
    c, unpriced, nr = run.cost, T("time.unpriced"), T("not_reported")
    cost = unpriced if c.cost_usd is None else f"${c.cost_usd:.4f}"
    extrapolated = "n/a"
    if not np.isnan(c.per_call_s):
        extrapolated = f"{c.paper_minutes:.1f} min, " + (unpriced if np.isnan(c.paper_usd) else f"${c.paper_usd:.2f}")
    calls = T("time.calls_ours", calls=c.calls, fresh=c.fresh, cached=c.calls - c.fresh)
    rows = [
        (T("time.calls"), calls, str(ex.PAPER_CALLS)),
        (T("time.tokens"), f"{c.prompt_tokens} / {c.completion_tokens}", nr),
        (T("time.judging"), f"{c.judge_s / 60:.2f} min", T("time.judging_paper")),
        (T("time.whole"), f"{c.total_s / 60:.2f} min", nr),
        (T("time.cost"), cost, T("time.cost_paper")),
        (T("time.latency"), T("time.all_cached") if np.isnan(c.per_call_s) else f"{c.per_call_s:.2f} s", nr),
        (T("time.extrapolated", calls=ex.PAPER_CALLS), extrapolated, T("time.extrapolated_paper")),
    ]
    return text_table(T, "captions.time_cost", "columns.time_cost", rows, **_titles(run))


def unparsed_summary(run: SaerRun) -> Styler:
    """Unparsed answers per task and prompt version, with the most common reason and one raw answer."""
    rows = [
        (r.task, r.prompt_version, r.calls, r.unparsed, r.errors, "-" if pd.isna(r.reason) else r.reason,
         "-" if pd.isna(r.raw) else r.raw[:160].replace("\n", " "))
        for r in run.answers.itertuples(index=False)
    ]  # fmt: skip
    return text_table(T, "captions.unparsed", "columns.unparsed", rows, **_titles(run))


def copied_table(run: SaerRun) -> Styler:
    """Per task and prompt version: parsed answers repeating a few-shot answer verbatim (:attr:`SaerRun.copied`)."""
    columns = [*T.raw("columns.copied"), T("columns.copied_last", n=ex.COPY_MIN_CHARS)]
    return text_table(T, "captions.copied", columns, run.copied.to_numpy().tolist(), **_titles(run))


def _observations(run: SaerRun) -> list[str]:
    out = []
    first, cons = run.position.loc["named Set 1"], run.position.loc["position consistency"]
    if first["n"]:
        out.append(T("notes.set_1", pct=f"{first['pct']:.0f}", n=int(first["n"])))
    if cons["n"]:
        out.append(T("notes.orders", count=int(cons["count"]), n=int(cons["n"]), other=int(cons["n"] - cons["count"])))
        if both_tie := int(run.orders.loc[ORDER_OUTCOMES[1], "count"]):
            out.append(T("notes.both_tie", n=both_tie))
    det = run.detection.set_index("prompt_version")
    for version in run.config.prompt_versions:
        if det.loc[version, "n_parsed"]:
            correct, shown_first = det.loc[version, ["correct_%", "genuine_first_parsed_%"]]
            out.append(T("notes.adversarial", version=version, correct=f"{correct:.0f}", first=f"{shown_first:.0f}"))
    if run.top_label:
        pw = run.answers.set_index(["task", "prompt_version"]).loc[("pointwise", run.config.main_version)]
        bad = int(pw["unparsed"] + pw["errors"])
        label, count = run.top_label
        out.append(T("notes.pointwise", version=run.config.main_version, count=count, parsed=int(pw["calls"]) - bad,
                     label=label, bad=bad, calls=int(pw["calls"])))  # fmt: skip
    return out


def run_notes(run: SaerRun) -> Callout:
    """What this run's answers show, computed from its numbers, as a note (a note saying no answer parsed, else)."""
    return _note(T("notes.title"), _observations(run) or [T("notes.nothing")])


def _two_shares(what: str, ours: list[Estimate], paper: list[Estimate]) -> str:
    """Two shares compared by their intervals: one ranks above the other only where the intervals do not overlap."""
    lead = leader(ours)
    verdict = T("takeaways.overlap")
    if lead and lead.clear:
        verdict = T("takeaways.apart", high=lead.top.name, low=lead.others[0].name)
    return T("takeaways.two_shares", what=what, a=ours[0].named(1), b=ours[1].named(1), verdict=verdict,
             paper_a=f"{paper[0].value:.1f}", paper_b=f"{paper[1].value:.1f}")  # fmt: skip


def health_notes(run: SaerRun) -> list[Callout]:
    """The warning shown when no label, verdict or adversarial answer could be read (nothing otherwise)."""
    health = AnswerHealth.of_frames(run.pointwise, run.pairwise, run.adversarial)
    return [unanswerable_warning(T("health_question"), health)] if health.n and health.nothing_usable else []


def takeaways_items(run: SaerRun) -> list[str]:
    """The key takeaways: a rank only where two intervals do not overlap, a difference from a reference only where the
    interval excludes it; measures with nothing parsed left out, and more than a fifth unreadable said first."""
    health = AnswerHealth.of_frames(run.pointwise, run.pairwise, run.adversarial)
    if health.nothing_usable:
        return [T("takeaways.nothing", health=health_sentence(health))]
    out = [T("takeaways.flagged", health=health_sentence(health))] if health.flagged else []
    good = run.labels.loc[run.labels["category"] == CATEGORIES[0]].set_index("algorithm")
    shares = [Estimate.of_row(r, "pct", "low", "high", alg) for alg, r in good.loc[list(ALGORITHMS)].iterrows()]
    if all(s.known for s in shares):
        out.append(_two_shares(T("takeaways.good"), shares, [_paper(run, f"Good Match, {a}") for a in ALGORITHMS]))
    if (adj := run.verdicts.iloc[1])["n_parsed"]:
        wins = [_share(adj, k, alg) for k, alg in zip(("cooccurrence_win", "embedding_win"), ALGORITHMS, strict=True)]
        out.append(_two_shares(T("takeaways.wins"), wins, [_paper(run, f"adjudicated {a} wins") for a in ALGORITHMS]))
    if (cons := run.position.loc["position consistency"])["n"]:
        ours, paper = Estimate.of_row(cons, "pct", "low", "high"), _paper(run, "position consistency")
        p = run.paper.loc["position consistency"]
        where = ("below" if ours.value < paper.value else "above") if apart(ours, paper) else "overlap"
        verdict = T(f"takeaways.consistency_{where}", judge=T("paper_judge"))
        out.append(T("takeaways.consistency", ours=ours.cell(1), count=int(p["count"]), n=int(p["n"]),
                     paper=paper.cell(1), verdict=verdict))  # fmt: skip
    det, main = run.detection.set_index("prompt_version"), run.config.main_version
    if det.loc[main, "n_parsed"]:  # against a coin flip, then against the first other prompt with answers
        share = _share(det.loc[main], "correct")
        verdict = T(f"takeaways.detection_side.{side(share, 50.0)}")
        out.append(T("takeaways.detection", prompt=_version_label(main), share=share.cell(1), verdict=verdict))
        if others := [v for v in run.config.prompt_versions if v != main and det.loc[v, "n_parsed"]]:
            versions = (main, others[0])
            shares = [_share(det.loc[v], "correct", T("takeaways.prompt", version=v)) for v in versions]
            paper_shares = [_paper(run, f"adversarial correct, {v}") for v in versions]
            out.append(_two_shares(T("takeaways.prompts"), shares, paper_shares))
    return out
