"""What chapter 4 shows about a SAER run: Tables 1-3 beside the paper's, figures, agreement, time and cost, notes,
takeaways and the kappa exercise. Captions are the notebook's (each table function takes one); headers, row labels,
fixed rows, figure text and the exercise are written here; ``text/saer.yaml`` holds only the stand-in note, the
paper's agreement rows and the notes and sentences the run's state and intervals choose between. Every number (the
paper's Wilson intervals too) comes from :class:`~recjudge_utils.experiments.saer.SaerRun` (or
:mod:`~recjudge_utils.experiments.kappa_exercise`)."""

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
from recjudge_utils.metrics.estimate import Estimate
from recjudge_utils.paper_tables import paper_table
from recjudge_utils.protocols.adversarial import OUTCOMES
from recjudge_utils.protocols.context.saer import substitutions
from recjudge_utils.protocols.saer import VERSION_NAMES
from recjudge_utils.reporting.answer_health import health_sentence, unanswerable_warning
from recjudge_utils.reporting.callouts import Callout, admonition, exercise, stand_in_note
from recjudge_utils.reporting.cells import estimate_cell
from recjudge_utils.reporting.claims import apart, leader, side, with_name
from recjudge_utils.reporting.figures import done, forest_plot, palette, stacked_bars, whisker
from recjudge_utils.reporting.judge_saw import JudgeUse, judge_saw_lines, saer_use
from recjudge_utils.reporting.tables import captioned, rows_table
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
_PAPER_JUDGE = "Claude 4.5 Sonnet"
_NOT_REPORTED = "not reported"
#: what the warning says the run could not tell when no answer could be read
_HEALTH_QUESTION = "how the two recommenders' lists compare, or whether the judge spots a decoy"
#: the words for where the detection share's interval lies against a coin flip's 50 % (a Wilson interval: never none)
_DETECTION_SIDE = {"above": "takeaways.detection_side.above", "below": "takeaways.detection_side.below",
                   "contains": "takeaways.detection_side.contains"}  # fmt: skip


def _shares(frame: pd.DataFrame) -> pd.DataFrame:
    """A long share frame's rows of one group (a scope, a prompt version) indexed by measure."""
    return frame.set_index("measure")


def _share(shares: pd.DataFrame, measure: str, name: str = "") -> Estimate:
    """One measure's share from :func:`_shares` rows."""
    return Estimate.of_row(shares.loc[measure], name=name)


def _version(run: SaerRun, version: str) -> pd.DataFrame:
    """Table 3's rows of one prompt version (:func:`_shares`)."""
    return _shares(run.detection.loc[run.detection["prompt_version"] == version])


def _paper(run: SaerRun, measure: str) -> Estimate:
    return Estimate.of_row(run.paper.loc[measure])


def _of(count: Any, n: Any, cell: str | None = None) -> str:
    """``3 of 9``, or ``3 of 9: 33.3 [12.1, 64.6]`` with a cell."""
    return f"{int(count)} of {int(n)}" + (f": {cell}" if cell is not None else "")


def _left_out(count: Any, what: str) -> str:
    """``, 3 unparsed`` to follow a count in a label, or nothing when none was left out."""
    return f", {int(count)} {what}" if int(count) else ""


def _note(title: str, lines: list[str]) -> Callout:
    return Callout(admonition("admonition", "\n".join(f"- {line}" for line in lines), title=title, classes=("note",)))


def _version_label(version: str) -> str:
    return f"{VERSION_NAMES[version]} prompt ({version})"


def data_notes(dataset: Dataset) -> list[Callout]:
    """The stand-in note when the data is not SAER's own, Amazon Beauty (nothing otherwise)."""
    if ex.is_paper_data(dataset):
        return []
    return [stand_in_note(dataset.display_label, T("stand_in.paper_data"), T("stand_in.detail"))]


def substitutions_table(dataset: Dataset, caption: str) -> Styler:
    """SAER's context fields and what this run uses instead (named substitutes)."""
    rows = list(substitutions(dataset.domain).items())
    return rows_table(caption, ["SAER context field", "Used here"], rows)


def customers_table(run: SaerRun, caption: str) -> Styler:
    """The sampled customers: id, number of interactions and engagement stratum."""
    customers = run.sample.customers[["user", "n_interactions", "engagement"]].to_numpy().tolist()
    return rows_table(caption, ["Customer", "Interactions", "Engagement (tertile)"], customers)


def context_note(run: SaerRun) -> Callout:
    """What this run showed the judge of each customer (the window and any cut) and whether a future was held out."""
    cfg, sample, shown = run.config, run.sample, run.sample.shown
    counts = (f"shown: {shown['shown_liked']} of {shown['liked']} liked and {shown['shown_disliked']} of "
              f"{shown['disliked']} disliked items in the windows of the {len(sample.contexts)} customers")  # fmt: skip
    if cfg.max_history is None:
        lines = [T("context.whole", days=cfg.window_days, counts=counts)]
    else:
        lines = [T("context.cut", n=cfg.max_history, days=cfg.window_days, counts=counts)]
    lines.append(T("context.heldout", n=sample.heldout) if sample.heldout else T("context.nothing_held"))
    lines.extend(judge_saw_lines([_saer_use(run)], sample.words))
    return _note("What the judge saw", lines)


def _saer_use(run: SaerRun) -> JudgeUse:
    """The SAER prompts this run sent (pointwise: the main version, every version under the ablation; pairwise:
    every version, the adversarial test's) and the fields of its item lines."""
    cfg, sample = run.config, run.sample
    pointwise = cfg.prompt_versions if cfg.pointwise_ablation else (cfg.main_version,)
    dataset = sample.dataset
    items = dataset.items if dataset is not None else pd.DataFrame({"title": [], "genres": []})
    return saer_use(sample.domain, {"pointwise": pointwise, "pairwise": cfg.prompt_versions}, items, dataset)


def example_lists(run: SaerRun, caption: str, user: int | None = None) -> Styler:
    """Side-by-side top-k lists of the two algorithms for one customer (first sampled by default)."""
    user = run.sample.users[0] if user is None else int(user)
    lists = {a.capitalize(): [run.sample.catalogue.line(i) for i in run.sample.lists[a][user]] for a in ALGORITHMS}
    frame = pd.DataFrame({"Rank": range(1, len(lists[ALGORITHMS[0].capitalize()]) + 1), **lists})
    return captioned(frame, caption)


def table1(run: SaerRun, caption: str) -> Styler:
    """Table 1: our share of parsed lists per label (95 % Wilson interval) beside the paper's judge and humans."""
    paper = paper_table("saer_table1").set_index(["algorithm", "category"])
    lists = {alg: f"{alg} ({int(r['n_parsed'])} lists{_left_out(r['n_unparsed'], 'unparsed')})"
             for alg, r in run.labels.groupby("algorithm").first().iterrows()}  # fmt: skip
    rows = [
        (lists[r.algorithm], r.category, estimate_cell(r.pct, r.low, r.high, digits=1),
         *paper.loc[(r.algorithm, r.category), ["saer_pct", "human_a_pct", "human_b_pct"]])
        for r in run.labels.itertuples(index=False)
    ]  # fmt: skip
    columns = ["Algorithm (judged lists)", "Label", "Ours, % [95 % CI]", "Paper: SAER %", "Paper: human A %",
               "Paper: human B %"]  # fmt: skip
    return rows_table(caption, columns, rows)


def flagged_summary(run: SaerRun, caption: str) -> Styler:
    """Per algorithm: how many items the judge flagged per parsed list, and the most-flagged titles."""
    title = run.sample.catalogue.title
    rows = [
        (r.algorithm, r.n_parsed, r.flagged_mean, r.flagged_pct,
         "; ".join(f"{title(i)} (×{c})" for i, c in r.most) or "-")
        for r in run.flagged.rename(columns={"flagged_%": "flagged_pct"}).itertuples(index=False)
    ]  # fmt: skip
    columns = [
        "Algorithm",
        "Parsed lists",
        "Flagged items per list (mean)",
        "Lists with a flag %",
        "Most flagged items",
    ]
    return rows_table(caption, columns, rows, precision=2)


def plot_label_shares(run: SaerRun) -> Figure:
    """Label shares per algorithm, ours above the paper's judge and humans; our whiskers: the Good share's interval
    after Good, 100 minus the Poor share's after Partial."""
    paper = paper_table("saer_table1").set_index(["algorithm", "category"])
    styles = list(zip(palette(len(CATEGORIES)), _HATCHES, strict=False))
    sources = {"saer_pct": f"paper: SAER ({_PAPER_JUDGE})", "human_a_pct": "paper: human A",
               "human_b_pct": "paper: human B"}  # fmt: skip
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
        ax.set_yticks(range(4), [f"ours ({n_parsed} lists)", *sources.values()], fontsize=8)
        ax.invert_yaxis()
        ax.set_title(alg, fontsize=9, loc="left")
        ax.set_xlim(0, 100)
    axes[-1].set_xlabel("% of judged lists (whiskers: our 95 % Wilson intervals)")
    handles = [Patch(facecolor=c, hatch=h, edgecolor="0.25", label=cat)
               for (c, h), cat in zip(styles, CATEGORIES, strict=True)]  # fmt: skip
    fig.legend(handles=handles, loc="lower center", ncol=len(CATEGORIES), fontsize=8, frameon=False)
    return done(fig, rect=(0, 0.06, 1, 1))


def table2(run: SaerRun, caption: str) -> Styler:
    """Table 2: wins and ties of raw calls and adjudicated pairs (Wilson intervals) beside the paper's rows."""
    paper = paper_table("saer_table2").set_index("scope")
    keys = ("cooccurrence_win", "embedding_win", "tie")
    rows: list[tuple[Any, ...]] = []

    def theirs(verdicts: str, ref: Any) -> tuple[Any, ...]:
        return (verdicts, "paper", str(int(ref["n"])), *(estimate_cell(ref[f"{k}_pct"], digits=1) for k in keys))

    for (_, part), verdicts, scope in zip(run.verdicts.groupby("scope", sort=False), ("raw calls", "adjudicated pairs"),
                                          ("SAER Raw", "SAER Adjudicated"), strict=True):  # fmt: skip
        r = _shares(part)
        rows.append((verdicts, "ours", _of(r["n"].iloc[0], r["n"].iloc[0] + r["n_unparsed"].iloc[0]),
                     *(estimate_cell(_share(r, k), digits=1) for k in keys)))  # fmt: skip
        rows.append(theirs(verdicts, paper.loc[scope]))
    rows.append(theirs("human labels, merged", paper.loc["Human Merged"]))
    columns = ["Verdicts", "Source", "Judged", "Co-occurrence wins %", "Embedding wins %", "Ties %"]
    return rows_table(caption, columns, rows)


def consistency_table(run: SaerRun, caption: str) -> Styler:
    """Position consistency, answers naming Set 1 and unparsed pairwise answers, ours beside the paper's."""
    cons, first, raw = run.position.loc["position consistency"], run.position.loc["named Set 1"], run.verdicts.iloc[0]
    ours = [_of(r["count"], r["n"], estimate_cell(r["pct"], r["low"], r["high"], digits=1)) for r in (cons, first)]
    paper = run.paper.loc["position consistency"]
    rows = [
        (
            "position consistency (both orders agree), %",
            ours[0],
            _of(paper["count"], paper["n"], f"{paper['value']:.1f}"),
        ),
        ("answers naming the first-shown list (Set 1), %", ours[1], _NOT_REPORTED),
        ("unparsed pairwise answers", _of(raw["n_unparsed"], raw["n"] + raw["n_unparsed"]), _NOT_REPORTED),
    ]
    return rows_table(caption, ["Measure", "Ours", "Paper"], rows)


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
    paper_labels = [f"paper: consistent ({count}; winner or tie not reported)", f"paper: inconsistent ({n - count})"]
    stacked_bars(ax, [1], [[paper["value"], 100 - paper["value"]]], [(colours[-1], "oo"), ("white", "--")],
                 paper_labels, height=0.62, annotate_from=8)  # fmt: skip
    whisker(ax, paper["value"], 1, paper["low"], paper["high"])
    ticks = [f"ours ({judged} customers{_left_out(unjudged, 'unjudged')})", f"paper ({n} comparisons)"]
    ax.set_yticks([0, 1], ticks, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of comparisons with both orders parsed (whiskers: 95 % Wilson interval of consistency)")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.32), ncol=2, frameon=False)
    return done(fig)


def table3(run: SaerRun, caption: str) -> Styler:
    """Table 3: adversarial outcomes per prompt version (Wilson intervals), the paper's row under each of ours and
    its two human annotators at the end."""
    paper = paper_table("saer_table3")
    paper_v, rows = paper.dropna(subset=["prompt_version"]).set_index("prompt_version"), []

    def theirs(label: str, key: str, ref: Any) -> tuple[Any, ...]:
        pairs = str(int(run.paper.loc[f"adversarial correct, {key}", "n"]))
        shares = (estimate_cell(ref[f"{o}_pct"], digits=1) for o in OUTCOMES)
        return (label, "paper", pairs, *shares, _NOT_REPORTED)

    for key, part in run.detection.groupby("prompt_version", sort=False):
        r, version = _shares(part), _version_label(str(key))
        judged = _of(r.loc["correct", "n"], r.loc["correct", "n"] + r.loc["correct", "n_unparsed"])
        shares = (estimate_cell(_share(r, o), digits=1) for o in OUTCOMES)
        rows.append((version, "ours", judged, *shares, estimate_cell(r.loc["chose_Set_1", "value"], digits=1)))
        rows.append(theirs(version, key, paper_v.loc[key]))
    rows += [theirs(h["evaluator"], h["evaluator"], h) for _, h in paper.loc[paper["prompt_version"].isna()].iterrows()]
    columns = ["Evaluator", "Source", "Judged pairs", "Correct %", "Wrong %", "Ties %", "Named Set 1 %"]
    return rows_table(caption, columns, rows)


def plot_detection(run: SaerRun) -> Figure:
    """Adversarial detection per prompt version, ours beside the paper's (Wilson whiskers), the paper's humans, and
    a line at what a judge always naming Set 1 scores."""
    humans = paper_table("saer_table3").loc[lambda t: t["prompt_version"].isna(), "evaluator"].tolist()
    versions, width = list(run.config.prompt_versions), 0.38
    labels = [f"{VERSION_NAMES[v]}\n({v})" for v in versions] + [h.replace(" Annotator ", "\n") for h in humans]
    bars = [(k - width / 2, _share(_version(run, v), "correct"), 0) for k, v in enumerate(versions)]
    bars += [(k + width / 2 if k < len(versions) else k, _paper(run, f"adversarial correct, {key}"), 1)
             for k, key in enumerate((*versions, *humans))]  # fmt: skip
    pairs = int(run.paper.loc[f"adversarial correct, {versions[0]}", "n"])
    legend = ["ours (95 % Wilson interval)", f"paper ({_PAPER_JUDGE}; humans), interval from its {pairs} pairs"]
    fig, ax = plt.subplots(figsize=(7.2, 3.4))
    for i, (x, e, src) in enumerate(bars):  # ours first, then the paper's: one legend entry each
        ax.bar(x, np.nan_to_num(e.value), width, color=palette(2)[src], hatch=_HATCHES[1 - src], edgecolor="0.25",
               label=legend[src] if i in (0, len(versions)) else None)  # fmt: skip
        whisker(ax, e.value, x, e.low, e.high, horizontal=False)
    first = float(_version(run, run.config.main_version).loc["genuine_first", "value"])
    if not np.isnan(first):
        ax.axhline(
            first, color="0.3", linestyle="--", linewidth=1, label=f"a judge always naming Set 1 ({first:.0f} %)"
        )
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ax.set_ylim(0, 105)
    ax.set_ylabel("genuine list picked (%)")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.24), ncol=2, frameon=False)
    return done(fig)


def plot_forest(run: SaerRun) -> Figure:
    """A forest plot of :meth:`SaerRun.headline`: ours and the paper's headline shares with their intervals."""
    return forest_plot(run.headline(), label="measure", group="source", xlabel="% (95 % Wilson interval)", width=7.2)


def agreement_table(run: SaerRun, caption: str) -> Styler:
    """Raw agreement and weighted kappa (bootstrap intervals) between this run's labelers, then the paper's rows."""
    rows = [
        (task, "ours", f"{a} vs {b}".replace("order: ", ""), str(int(pair["n"].iloc[0])),
         estimate_cell(_share(_shares(pair), "raw_agreement"), digits=1),
         estimate_cell(_share(_shares(pair), "kappa_w"), digits=2))
        for (task, a, b), pair in run.agreements.groupby(["task", "labeler_a", "labeler_b"], sort=False)
    ]  # fmt: skip
    metrics = paper_table("saer_metrics").set_index("metric")["value"]
    comparisons = str(int(run.paper.loc["position consistency", "n"]))
    rows += [
        (task, "paper", labelers, cases or comparisons, estimate_cell(metrics[f"{stem}_agree"], digits=1),
         estimate_cell(metrics[f"{stem}_kappa_w"], digits=2))
        for task, stem, labelers, cases in T.raw("agreement_paper")
    ]  # fmt: skip
    columns = ["Task", "Source", "Labelers", "Cases", "Raw agreement, % [95 % CI]", "Weighted κ [95 % CI]"]
    return rows_table(caption, columns, rows)


def kappa_exercise(k: KappaByHand) -> Callout:
    """The weighted-kappa exercise with :func:`~recjudge_utils.experiments.kappa_exercise.kappa_by_hand`'s worked
    solution."""
    body = (
        f"Two annotators labelled five lists:\n\n```python\na = {k.a}\nb = {k.b}\n```\n\n"
        r"Compute Cohen's quadratic {term}`weighted kappa` {cite:p}`cohen1968weighted` by hand on the scale Poor < "
        r"Partial < Good (codes 0, 1, 2; a disagreement of $d$ steps costs $d^2$): the mean observed cost, the cost "
        r"expected by chance from each annotator's own label shares, and "
        r"$\kappa_w = 1 - \text{observed} / \text{expected}$. Then check it with"
        "\n\n```python\nfrom recjudge_utils.metrics.agreement import POINTWISE_LABELS, weighted_kappa\n"
        "weighted_kappa(a, b, POINTWISE_LABELS)\n```\n\nWhich single change to `b` lowers kappa the most?"
    )
    shares_a, shares_b = np.round(k.shares_a, 2).tolist(), np.round(k.shares_b, 2).tolist()
    solution = (
        f"Codes: a = {k.codes_a}, b = {k.codes_b}. Observed cost: the squared differences {k.costs} average "
        f"{k.observed:.2f}. Label shares (Poor, Partial, Good): a {shares_a}, b {shares_b}; the chance-expected cost "
        rf"$\sum_{{ij}} p_a(i)\, p_b(j)\,(i-j)^2$ is {k.expected:.2f}. So "
        rf"$\kappa_w = 1 - {k.observed:.2f} / {k.expected:.2f} = {k.kappa:.3f}$, and `weighted_kappa` returns "
        f"{k.package:.3f}. Of the {k.n_changes} single changes to `b`, setting list {k.where + 1} to {k.to} lowers "
        f"kappa most, to {k.worst:.3f}: it turns a {k.steps_before}-step difference into a {k.steps_after}-step one "
        f"(cost {k.steps_before**2} → {k.steps_after**2}): a disagreement two steps apart costs four times one a step "
        "apart. Kappa is undefined (NaN) when both annotators give every list one and the same label: chance then "
        "explains all the agreement."
    )
    return exercise("weighted kappa by hand", body, solution)


def time_cost(run: SaerRun, caption: str) -> Styler:
    """Calls, tokens, time and cost of this run, extrapolated to the paper's run size, beside the paper's."""
    c, unpriced, nr = run.cost, "unknown (no price for this model)", _NOT_REPORTED
    cost = unpriced if c.cost_usd is None else f"${c.cost_usd:.4f}"
    extrapolated = "n/a"
    if not np.isnan(c.per_call_s):
        minutes, usd = c.minutes_at(ex.PAPER_CALLS), c.usd_at(ex.PAPER_CALLS)
        extrapolated = f"{minutes:.1f} min, " + (unpriced if np.isnan(usd) else f"${usd:.2f}")
    latency = "n/a (all cached)" if np.isnan(c.per_call_s) else f"{c.per_call_s:.2f} s"
    rows = [
        ("judgments in this run", f"{c.calls} ({c.fresh} fresh, {c.calls - c.fresh} from cache)", str(ex.PAPER_CALLS)),
        ("prompt / completion tokens", f"{c.prompt_tokens} / {c.completion_tokens}", nr),
        ("judging wall time (this run)", f"{c.judge_s / 60:.2f} min", "about 30 min"),
        ("whole run incl. data and recommenders", f"{c.total_s / 60:.2f} min", nr),
        ("cost (this run)", cost, "about $28"),
        ("mean latency per fresh call", latency, nr),
        (f"extrapolated to {ex.PAPER_CALLS} calls (our inference of the paper's run size), sequential", extrapolated,
         "about 30 min, $28"),
    ]  # fmt: skip
    return rows_table(caption, ["Quantity", "Ours", f"Paper ({_PAPER_JUDGE})"], rows)


def unparsed_summary(run: SaerRun, caption: str) -> Styler:
    """Unparsed answers per task and prompt version, with the most common reason and one raw answer."""
    rows = [
        (r.task, r.prompt_version, r.calls, r.unparsed, r.errors, "-" if pd.isna(r.reason) else r.reason,
         "-" if pd.isna(r.raw) else r.raw[:160].replace("\n", " "))
        for r in run.answers.itertuples(index=False)
    ]  # fmt: skip
    columns = ["Task", "Prompt", "Calls", "Unparsed", "Errors", "Most common reason",
               "One raw answer (first 160 characters)"]  # fmt: skip
    return rows_table(caption, columns, rows)


def copied_table(run: SaerRun, caption: str) -> Styler:
    """Per task and prompt version: parsed answers repeating a few-shot answer verbatim (:attr:`SaerRun.copied`)."""
    columns = ["Task", "Prompt", "Few-shot answers", "Parsed answers",
               f"Repeating ≥ {ex.COPY_MIN_CHARS} characters of an example"]  # fmt: skip
    return rows_table(caption, columns, run.copied.to_numpy().tolist())


def _observations(run: SaerRun) -> list[str]:
    out = []
    first, cons = run.position.loc["named Set 1"], run.position.loc["position consistency"]
    if first["n"]:
        out.append(T("notes.set_1", pct=f"{first['pct']:.0f}", n=int(first["n"])))
    if cons["n"]:
        out.append(T("notes.orders", count=int(cons["count"]), n=int(cons["n"]), other=int(cons["n"] - cons["count"])))
        if both_tie := int(run.orders.loc[ORDER_OUTCOMES[1], "count"]):
            out.append(T("notes.both_tie", n=both_tie))
    for version in run.config.prompt_versions:
        if (det := _version(run, version)).loc["correct", "n"]:
            correct, shown_first = det.loc[["correct", "genuine_first_parsed"], "value"]
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
    return _note("What this run's answers show", _observations(run) or [T("notes.nothing")])


def _two_shares(what: str, ours: list[Estimate], paper: list[Estimate]) -> str:
    """Two shares compared by their intervals: one ranks above the other only where the intervals do not overlap."""
    lead = leader(ours)
    verdict = T("takeaways.overlap")
    if lead and lead.clear:
        verdict = T("takeaways.apart", high=lead.top.name, low=lead.others[0].name)
    return T("takeaways.two_shares", what=what, a=with_name(ours[0], 1), b=with_name(ours[1], 1), verdict=verdict,
             paper_a=f"{paper[0].value:.1f}", paper_b=f"{paper[1].value:.1f}")  # fmt: skip


def health_notes(run: SaerRun) -> list[Callout]:
    """The warning shown when no label, verdict or adversarial answer could be read (nothing otherwise)."""
    health = AnswerHealth.of_frames(run.pointwise, run.pairwise, run.adversarial)
    return [unanswerable_warning(_HEALTH_QUESTION, health)] if health.n and health.nothing_usable else []


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
    if (adj := _shares(run.adjudicated_verdicts))["n"].iloc[0]:
        wins = [_share(adj, k, alg) for k, alg in zip(("cooccurrence_win", "embedding_win"), ALGORITHMS, strict=True)]
        out.append(_two_shares(T("takeaways.wins"), wins, [_paper(run, f"adjudicated {a} wins") for a in ALGORITHMS]))
    if (cons := run.position.loc["position consistency"])["n"]:
        ours, paper = Estimate.of_row(cons, "pct", "low", "high"), _paper(run, "position consistency")
        p = run.paper.loc["position consistency"]
        if not apart(ours, paper):
            where = "takeaways.consistency_overlap"
        else:
            where = "takeaways.consistency_below" if ours.value < paper.value else "takeaways.consistency_above"
        verdict = T(where, judge=_PAPER_JUDGE)
        out.append(T("takeaways.consistency", ours=estimate_cell(ours, digits=1), count=int(p["count"]), n=int(p["n"]),
                     paper=estimate_cell(paper, digits=1), verdict=verdict))  # fmt: skip
    main = run.config.main_version
    if _version(run, main).loc["correct", "n"]:  # against a coin flip, then against the first other prompt with answers
        share = _share(_version(run, main), "correct")
        verdict = T(_DETECTION_SIDE[side(share, 50.0)])
        cell = estimate_cell(share, digits=1)
        out.append(T("takeaways.detection", prompt=_version_label(main), share=cell, verdict=verdict))
        if others := [v for v in run.config.prompt_versions if v != main and _version(run, v).loc["correct", "n"]]:
            versions = (main, others[0])
            shares = [_share(_version(run, v), "correct", T("takeaways.prompt", version=v)) for v in versions]
            paper_shares = [_paper(run, f"adversarial correct, {v}") for v in versions]
            out.append(_two_shares(T("takeaways.prompts"), shares, paper_shares))
    return out
