"""What chapter 4 shows about a SAER run: Tables 1-3 with the paper's numbers in the same table, figures of the label
shares, position consistency and adversarial detection, a forest plot of the headline intervals, agreement between
labelers, time and cost, and the sentences (notes, takeaways, an exercise's solution) computed from the run.

Display tables are for people: headers in words, an estimate and its 95 % interval in one cell, no index. The
machine-readable numbers stay in the run's frames (and ``results.json``), untouched by anything here.

The paper's intervals in the figures are 95 % Wilson intervals computed here from its printed percentage and its
sample size (200 lists per algorithm, 200 comparisons, 100 adversarial pairs); the paper prints none.
"""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from recjudge_utils.answer_formats.saer_fields import CATEGORIES
from recjudge_utils.experiments.saer import ALGORITHMS, PAPER_CALLS, SaerRun
from recjudge_utils.metrics.agreement import POINTWISE_LABELS, weighted_kappa
from recjudge_utils.metrics.intervals import wilson
from recjudge_utils.metrics.pairwise import TIE
from recjudge_utils.protocols.adversarial import OUTCOMES
from recjudge_utils.protocols.context.saer import SUBSTITUTIONS
from recjudge_utils.protocols.saer import VERSION_NAMES, few_shot_answers, load_template
from recjudge_utils.reporting.answer_health import AnswerHealth, unanswerable_warning
from recjudge_utils.reporting.callouts import Callout, admonition, exercise
from recjudge_utils.reporting.display import estimate_cell
from recjudge_utils.reporting.figures import forest_plot, palette
from recjudge_utils.reporting.paper import paper_table

__all__ = [
    "PAPER_ADVERSARIAL_PAIRS",
    "PAPER_LISTS",
    "agreement_table",
    "consistency_table",
    "context_note",
    "copied_from_examples",
    "customers_table",
    "example_lists",
    "flagged_summary",
    "headline",
    "kappa_exercise",
    "observations",
    "paper_interval",
    "plot_detection",
    "plot_forest",
    "plot_label_shares",
    "plot_position",
    "run_notes",
    "substitutions_table",
    "table1",
    "table2",
    "table3",
    "takeaways_items",
    "time_cost",
    "unparsed_summary",
]

#: the paper's sample sizes (saer_table1.csv / saer_table3.csv source lines): lists per algorithm, adversarial pairs
PAPER_LISTS = 200
PAPER_ADVERSARIAL_PAIRS = 100
#: the paper's judge, for legends and headers
PAPER_JUDGE = "Claude 4.5 Sonnet"

#: one hatch per segment or series, so figures read in grey scale
_HATCHES = ("..", "//", "xx", "\\\\", "++")
_CI = "95 % CI"


def _cell(value: object, low: object = None, high: object = None) -> str:
    return estimate_cell(value, low, high, digits=1)


def paper_interval(pct: float, n: int) -> tuple[float, float]:
    """The 95 % Wilson interval (in percent) of a share the paper prints as ``pct`` % of ``n`` cases."""
    lo, hi = wilson(round(pct * n / 100), n)
    return 100 * lo, 100 * hi


def _paper_position() -> tuple[int, int]:
    """The paper's position consistency as (consistent comparisons, comparisons), from its 88.0 % of the 200
    adjudicated comparisons: 176 of 200."""
    pct = paper_table("saer_metrics").set_index("metric").loc["pairwise_position_consistency", "value"]
    n = int(paper_table("saer_table2").set_index("scope").loc["SAER Adjudicated", "n"])
    return round(float(pct) * n / 100), n


def _version_label(version: str) -> str:
    return f"{VERSION_NAMES[version]} prompt ({version})"


# ----------------------------------------------------------------------------------------------- data and context
def substitutions_table(domain: str) -> pd.DataFrame:
    """SAER's context fields and what this run uses instead (named substitutes)."""
    return pd.DataFrame([{"SAER context field": k, "Used here": v} for k, v in SUBSTITUTIONS[domain].items()])


def customers_table(run: SaerRun) -> pd.DataFrame:
    """The sampled customers: id, number of interactions and engagement stratum."""
    c = run.panel.customers
    return pd.DataFrame(
        {"Customer": c["user"], "Interactions": c["n_interactions"], "Engagement (tertile)": c["engagement"]}
    )


def _context_lines(run: SaerRun) -> list[str]:
    cfg, panel = run.config, run.panel
    ctxs = list(panel.contexts.values())
    liked, disliked = sum(c.n_liked for c in ctxs), sum(c.n_disliked for c in ctxs)
    shown_liked, shown_disliked = sum(len(c.history) for c in ctxs), sum(len(c.disliked) for c in ctxs)
    counts = (
        f"shown: {shown_liked} of {liked} liked and {shown_disliked} of {disliked} disliked items in the windows of "
        f"the {len(ctxs)} customers"
    )
    if cfg.max_history is None:
        lines = [
            f"Context: every item of each customer's {cfg.window_days}-day window (`max_history=None`), as the paper "
            f"compiles six months of purchase history; {counts}."
        ]
    else:
        lines = [
            f"Context: the {cfg.max_history} newest liked and the {cfg.max_history} newest disliked items of each "
            f"customer's {cfg.window_days}-day window (`max_history={cfg.max_history}`: a cut for a small judge's "
            f"context that the paper does not make; `--scale paper` shows the whole window); {counts}."
        ]
    if panel.heldout:
        lines.append(
            f"Held-out future: each customer's last {panel.heldout} interactions are held out of the context and of "
            "both recommenders' training, and the simulated judge's truth is read from them (a simulated-judge run "
            "only; the paper has no such split)."
        )
    else:
        lines.append(
            "Nothing held out: the judge reads each customer's history up to their last interaction and both "
            "recommenders train on every purchase (3-5 stars) up to it (an LLM judge needs no truth)."
        )
    return lines


def context_note(run: SaerRun) -> Callout:
    """A note saying what this run showed the judge of each customer (the window and any cut) and whether a future
    was held out, counted from the run's contexts."""
    body = "\n".join(f"- {line}" for line in _context_lines(run))
    return Callout(admonition("admonition", body, title="What the judge saw", classes=("note",)))


def example_lists(run: SaerRun, user: int | None = None) -> pd.DataFrame:
    """Side-by-side top-k lists of the two algorithms for one customer (first sampled by default)."""
    user = run.panel.users[0] if user is None else int(user)
    a, b = ALGORITHMS
    lists, catalogue = run.panel.lists, run.panel.catalogue
    return pd.DataFrame(
        {
            "Rank": range(1, len(lists[a][user]) + 1),
            a.capitalize(): [catalogue.line(i) for i in lists[a][user]],
            b.capitalize(): [catalogue.line(i) for i in lists[b][user]],
        }
    )


# ----------------------------------------------------------------------------------------------- Table 1
def _lists_label(run: SaerRun, algorithm: str) -> str:
    sub = run.labels.loc[run.labels["algorithm"] == algorithm].iloc[0]
    unparsed = int(sub["n_unparsed"])
    return f"{algorithm} ({int(sub['n_parsed'])} lists" + (f", {unparsed} unparsed)" if unparsed else ")")


def table1(run: SaerRun) -> pd.DataFrame:
    """Table 1: per algorithm and label, our share of parsed lists with its 95 % Wilson interval beside the paper's
    SAER judge and its two human annotators."""
    paper = paper_table("saer_table1").set_index(["algorithm", "category"])
    rows = []
    for r in run.labels.itertuples(index=False):
        ref = paper.loc[(r.algorithm, r.category)]
        rows.append(
            {
                "Algorithm (judged lists)": _lists_label(run, str(r.algorithm)),
                "Label": r.category,
                f"Ours, % [{_CI}]": _cell(r.pct, r.low, r.high),
                "Paper: SAER %": ref["saer_pct"],
                "Paper: human A %": ref["human_a_pct"],
                "Paper: human B %": ref["human_b_pct"],
            }
        )
    return pd.DataFrame(rows)


def flagged_summary(run: SaerRun, version: str | None = None, top: int = 3) -> pd.DataFrame:
    """Per algorithm: how many items the judge flagged per parsed list, and the most-flagged titles."""
    version = version or run.config.main_version
    pw = run.pointwise.loc[(run.pointwise["prompt_version"] == version) & (run.pointwise["status"] == "parsed")]
    rows = []
    for alg in ALGORITHMS:
        sub = pw.loc[pw["algorithm"] == alg]
        counts: dict[int, int] = {}
        for u, flagged in zip(sub["user"], sub["flagged"], strict=True):
            for k in flagged:
                item = run.panel.lists[alg][int(u)][k - 1]
                counts[item] = counts.get(item, 0) + 1
        most = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        rows.append(
            {
                "Algorithm": alg,
                "Parsed lists": len(sub),
                "Flagged items per list (mean)": float(sub["n_flagged"].mean()) if len(sub) else float("nan"),
                "Lists with a flag %": 100 * float((sub["n_flagged"] > 0).mean()) if len(sub) else float("nan"),
                "Most flagged items": "; ".join(f"{run.panel.catalogue.title(i)} (×{c})" for i, c in most) or "-",
            }
        )
    return pd.DataFrame(rows)


def _whisker(ax: Axes, x: float, y: float, low: float, high: float, horizontal: bool = True) -> None:
    """A black 95 % interval whisker around ``x`` at height ``y`` (a bound on the wrong side of the estimate by a
    rounding error is drawn with zero length); nothing for a missing estimate."""
    if np.isnan(x):
        return
    err = [[max(x - low, 0.0)], [max(high - x, 0.0)]]
    options: dict[str, Any] = {"fmt": "none", "ecolor": "black", "elinewidth": 1.2, "capsize": 4}
    if horizontal:
        ax.errorbar(x, y, xerr=err, **options)
    else:
        ax.errorbar(y, x, yerr=err, **options)


def _stacked(
    ax: Axes, y: float, shares: Sequence[float], styles: Sequence[tuple[Any, str]], labels: Sequence[str] = ()
) -> None:
    """One horizontal 100 % bar of ``shares`` (percent), segment k in colour and hatch ``styles[k]``; segments of
    8 % or more carry their value."""
    left = 0.0
    for k, share in enumerate(shares):
        colour, hatch = styles[k]
        label = labels[k] if labels else None
        ax.barh(y, share, left=left, color=colour, hatch=hatch, edgecolor="0.25", height=0.62, label=label)
        if share >= 8:
            box = {"boxstyle": "round,pad=0.15", "facecolor": "white", "alpha": 0.8, "lw": 0}
            ax.text(left + share / 2, y, f"{share:.0f}", ha="center", va="center", fontsize=8, bbox=box)
        left += share


def plot_label_shares(run: SaerRun) -> Figure:
    """Stacked bars of the Good / Partial / Poor shares per algorithm: ours above the paper's SAER judge and its two
    human annotators. Our bar carries 95 % Wilson whiskers at its two boundaries: after Good, the Good share's
    interval; after Partial (where 100 % - Poor lies), 100 minus the Poor share's interval."""
    paper = paper_table("saer_table1").set_index(["algorithm", "category"])
    styles = list(zip(palette(len(CATEGORIES)), _HATCHES, strict=False))
    sources = {
        "saer_pct": f"paper: SAER ({PAPER_JUDGE})",
        "human_a_pct": "paper: human A",
        "human_b_pct": "paper: human B",
    }
    fig, axes = plt.subplots(len(ALGORITHMS), 1, figsize=(7.2, 4.8), sharex=True)
    for ax, alg in zip(axes, ALGORITHMS, strict=True):
        ours = run.labels.loc[run.labels["algorithm"] == alg].set_index("category").loc[list(CATEGORIES)]
        n_parsed = int(ours["n_parsed"].iloc[0])
        names = [f"ours ({n_parsed} lists)", *sources.values()]
        if n_parsed:
            _stacked(ax, 0, ours["pct"].astype(float).tolist(), styles)
            good, poor = ours.iloc[0], ours.iloc[-1]
            _whisker(ax, float(good["pct"]), 0, float(good["low"]), float(good["high"]))
            _whisker(ax, 100 - float(poor["pct"]), 0, 100 - float(poor["high"]), 100 - float(poor["low"]))
        for y, col in enumerate(sources, start=1):
            _stacked(ax, y, [float(paper.loc[(alg, c), col]) for c in CATEGORIES], styles)
        ax.set_yticks(range(len(names)), names, fontsize=8)
        ax.invert_yaxis()
        ax.set_title(alg, fontsize=9, loc="left")
        ax.set_xlim(0, 100)
    axes[-1].set_xlabel("% of judged lists (whiskers: our 95 % Wilson intervals)")
    handles = [
        Patch(facecolor=c, hatch=h, edgecolor="0.25", label=cat) for (c, h), cat in zip(styles, CATEGORIES, strict=True)
    ]
    fig.legend(handles=handles, loc="lower center", ncol=len(CATEGORIES), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    plt.close(fig)
    return fig


# ----------------------------------------------------------------------------------------------- Table 2
def table2(run: SaerRun) -> pd.DataFrame:
    """Table 2: pairwise wins and ties (percent of parsed verdicts, 95 % Wilson intervals), raw calls and
    adjudicated pairs, with the paper's rows (and its merged human labels) in the same table."""
    paper = paper_table("saer_table2").set_index("scope")
    heads = {"cooccurrence_win": "Co-occurrence wins %", "embedding_win": "Embedding wins %", "tie": "Ties %"}
    rows = []
    for (_, r), verdicts, paper_scope in zip(
        run.verdicts.iterrows(), ("raw calls", "adjudicated pairs"), ("SAER Raw", "SAER Adjudicated"), strict=True
    ):
        n_all = int(r["n_parsed"]) + int(r["n_unparsed"])
        ours: dict[str, Any] = {"Verdicts": verdicts, "Source": "ours", "Judged": f"{int(r['n_parsed'])} of {n_all}"}
        for key, head in heads.items():
            ours[head] = _cell(r[f"{key}_%"], r[f"{key}_lo"], r[f"{key}_hi"])
        ref = paper.loc[paper_scope]
        theirs: dict[str, Any] = {"Verdicts": verdicts, "Source": "paper", "Judged": str(int(ref["n"]))}
        for key, head in heads.items():
            theirs[head] = _cell(ref[f"{key}_pct"])
        rows += [ours, theirs]
    human = paper.loc["Human Merged"]
    rows.append(
        {
            "Verdicts": "human labels, merged",
            "Source": "paper",
            "Judged": str(int(human["n"])),
            **{head: _cell(human[f"{key}_pct"]) for key, head in heads.items()},
        }
    )
    return pd.DataFrame(rows)


def consistency_table(run: SaerRun) -> pd.DataFrame:
    """Position consistency, the share of answers naming the first-shown list and the unparsed pairwise answers,
    ours beside the paper's."""
    cons, first = run.position.loc["position consistency"], run.position.loc["named Set 1"]
    count, n = _paper_position()
    n_unparsed = int((run.pairwise["status"] != "parsed").sum())
    return pd.DataFrame(
        [
            {
                "Measure": "position consistency (both orders agree), %",
                "Ours": f"{int(cons['count'])} of {int(cons['n'])}: " + _cell(cons["pct"], cons["low"], cons["high"]),
                "Paper": f"{count} of {n}: {100 * count / n:.1f}",
            },
            {
                "Measure": "answers naming the first-shown list (Set 1), %",
                "Ours": f"{int(first['count'])} of {int(first['n'])}: "
                + _cell(first["pct"], first["low"], first["high"]),
                "Paper": "not reported",
            },
            {
                "Measure": "unparsed pairwise answers",
                "Ours": f"{n_unparsed} of {len(run.pairwise)}",
                "Paper": "not reported",
            },
        ]
    )


def _order_outcomes(run: SaerRun) -> dict[str, int]:
    """Customers by what their two presentation orders said (both orders parsed), and the unjudged ones."""
    a, b = ALGORITHMS
    adj = run.adjudicated
    out = {"same winner": 0, "tie in both orders": 0, "first-shown list won both times": 0, "other disagreement": 0}
    unjudged = 0
    for wa, wb in zip(adj[f"winner_{a}_first"], adj[f"winner_{b}_first"], strict=True):
        if wa is None or wb is None or pd.isna(wa) or pd.isna(wb):
            unjudged += 1
        elif wa == wb:
            out["tie in both orders" if wa == TIE else "same winner"] += 1
        elif (wa, wb) == (a, b):
            out["first-shown list won both times"] += 1
        else:
            out["other disagreement"] += 1
    return {**out, "unjudged": unjudged}


def plot_position(run: SaerRun) -> Figure:
    """A stacked bar of what the two presentation orders said per customer (consistent: the same winner, or a tie in
    both; inconsistent: the first-shown list won both times, or another disagreement) above the paper's 176 of 200
    consistent comparisons, each with a 95 % Wilson whisker at the consistency boundary."""
    outcomes = _order_outcomes(run)
    unjudged = outcomes.pop("unjudged")
    judged = sum(outcomes.values())
    colours = palette(len(outcomes) + 1)
    styles = list(zip(colours, _HATCHES, strict=False))
    count, n = _paper_position()
    paper_pct = 100 * count / n
    fig, ax = plt.subplots(figsize=(7.2, 2.8))
    if judged:
        shares = [100 * v / judged for v in outcomes.values()]
        _stacked(ax, 0, shares, styles, [f"{k} ({v})" for k, v in outcomes.items()])
        cons = run.position.loc["position consistency"]
        _whisker(ax, float(cons["pct"]), 0, float(cons["low"]), float(cons["high"]))
    paper_labels = [f"paper: consistent ({count}; winner or tie not reported)", f"paper: inconsistent ({n - count})"]
    _stacked(ax, 1, [paper_pct, 100 - paper_pct], [(colours[-1], "oo"), ("white", "--")], paper_labels)
    _whisker(ax, paper_pct, 1, *paper_interval(paper_pct, n))
    more = f", {unjudged} unjudged" if unjudged else ""
    ax.set_yticks([0, 1], [f"ours ({judged} customers{more})", f"paper ({n} comparisons)"], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of comparisons with both orders parsed (whiskers: 95 % Wilson interval of consistency)")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.32), ncol=2, frameon=False)
    fig.tight_layout()
    plt.close(fig)
    return fig


# ----------------------------------------------------------------------------------------------- Table 3
def table3(run: SaerRun) -> pd.DataFrame:
    """Table 3: adversarial outcomes per prompt version (percent of parsed answers, 95 % Wilson intervals) and the
    share naming Set 1, with the paper's row under each of ours and its two human annotators at the end."""
    paper = paper_table("saer_table3")
    paper_v = paper.dropna(subset=["prompt_version"]).set_index("prompt_version")
    heads = {"correct": "Correct %", "wrong": "Wrong %", "tie": "Ties %"}
    rows = []
    for _, r in run.detection.iterrows():
        version = str(r["prompt_version"])
        n_all = int(r["n_parsed"]) + int(r["n_unparsed"])
        ours: dict[str, Any] = {
            "Evaluator": _version_label(version),
            "Source": "ours",
            "Judged pairs": f"{int(r['n_parsed'])} of {n_all}",
        }
        for outcome in OUTCOMES:
            ours[heads[outcome]] = _cell(r[f"{outcome}_%"], r[f"{outcome}_lo"], r[f"{outcome}_hi"])
        ours["Named Set 1 %"] = _cell(r["chose_Set_1_%"])
        ref = paper_v.loc[version]
        theirs = {
            "Evaluator": _version_label(version),
            "Source": "paper",
            "Judged pairs": str(PAPER_ADVERSARIAL_PAIRS),
            **{heads[o]: _cell(ref[f"{o}_pct"]) for o in OUTCOMES},
            "Named Set 1 %": "not reported",
        }
        rows += [ours, theirs]
    for ev in paper.loc[paper["prompt_version"].isna()].itertuples(index=False):
        rows.append(
            {
                "Evaluator": ev.evaluator,
                "Source": "paper",
                "Judged pairs": str(PAPER_ADVERSARIAL_PAIRS),
                **{heads[o]: _cell(getattr(ev, f"{o}_pct")) for o in OUTCOMES},
                "Named Set 1 %": "not reported",
            }
        )
    return pd.DataFrame(rows)


def _genuine_first_pct(run: SaerRun) -> float:
    """The share of adversarial pairs (main prompt version) that showed the genuine list first: what a judge that
    always names Set 1 scores."""
    adv = run.adversarial.loc[run.adversarial["prompt_version"] == run.config.main_version]
    return 100 * float((adv["genuine_position"] == 1).mean()) if len(adv) else float("nan")


def plot_detection(run: SaerRun) -> Figure:
    """Bars of adversarial detection (genuine list picked, % of parsed answers) per prompt version, ours with 95 %
    Wilson intervals beside the paper's (its intervals computed from its 100 pairs), then the paper's two human
    annotators, and a line at the score of a judge that always names Set 1."""
    paper = paper_table("saer_table3")
    paper_v = paper.dropna(subset=["prompt_version"]).set_index("prompt_version")
    humans = paper.loc[paper["prompt_version"].isna()]
    det = run.detection.set_index("prompt_version")
    versions = list(run.config.prompt_versions)
    labels = [f"{VERSION_NAMES[v]}\n({v})" for v in versions]
    labels += [str(h).replace(" Annotator ", "\n") for h in humans["evaluator"]]
    (ours_colour, paper_colour), width = palette(2), 0.38
    fig, ax = plt.subplots(figsize=(7.2, 3.4))
    for k, v in enumerate(versions):
        pct, low, high = _shares(det.loc[v], "correct")
        label = "ours (95 % Wilson interval)" if k == 0 else None
        ax.bar(
            k - width / 2,
            np.nan_to_num(pct),
            width,
            color=ours_colour,
            hatch=_HATCHES[1],
            edgecolor="0.25",
            label=label,
        )
        _whisker(ax, pct, k - width / 2, low, high, horizontal=False)
    paper_pct = [*paper_v.loc[versions, "correct_pct"].astype(float), *humans["correct_pct"].astype(float)]
    paper_x = [k + width / 2 for k in range(len(versions))] + list(range(len(versions), len(labels)))
    for k, (x, pct) in enumerate(zip(paper_x, paper_pct, strict=True)):
        label = f"paper ({PAPER_JUDGE}; humans), interval from its {PAPER_ADVERSARIAL_PAIRS} pairs" if k == 0 else None
        ax.bar(x, pct, width, color=paper_colour, hatch=_HATCHES[0], edgecolor="0.25", label=label)
        _whisker(ax, pct, x, *paper_interval(pct, PAPER_ADVERSARIAL_PAIRS), horizontal=False)
    first = _genuine_first_pct(run)
    if not np.isnan(first):
        ax.axhline(
            first, color="0.3", linestyle="--", linewidth=1, label=f"a judge always naming Set 1 ({first:.0f} %)"
        )
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ax.set_ylim(0, 105)
    ax.set_ylabel("genuine list picked (%)")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.24), ncol=2, frameon=False)
    fig.tight_layout()
    plt.close(fig)
    return fig


# ----------------------------------------------------------------------------------------------- headline CIs
def headline(run: SaerRun) -> pd.DataFrame:
    """The chapter's headline shares, one row per (measure, source): value, low, high in percent. Ours carry the
    run's 95 % Wilson intervals; the paper's are Wilson intervals from its printed share and sample size."""
    rows: list[dict[str, Any]] = []

    def add(label: str, ours: Sequence[float], paper_pct: float, n: int) -> None:
        rows.append({"measure": label, "source": "ours", "value": ours[0], "low": ours[1], "high": ours[2]})
        lo, hi = paper_interval(paper_pct, n)
        rows.append({"measure": label, "source": "paper", "value": paper_pct, "low": lo, "high": hi})

    t1 = paper_table("saer_table1").set_index(["algorithm", "category"])
    for alg in ALGORITHMS:
        r = run.labels.loc[(run.labels["algorithm"] == alg) & (run.labels["category"] == CATEGORIES[0])].iloc[0]
        add(
            f"Good Match, {alg}",
            (r["pct"], r["low"], r["high"]),
            float(t1.loc[(alg, CATEGORIES[0]), "saer_pct"]),
            PAPER_LISTS,
        )
    t2 = paper_table("saer_table2").set_index("scope").loc["SAER Adjudicated"]
    adj = run.verdicts.iloc[1]
    for key, what in (("cooccurrence_win", "co-occurrence wins"), ("embedding_win", "embedding wins"), ("tie", "ties")):
        add(
            f"adjudicated {what}",
            (adj[f"{key}_%"], adj[f"{key}_lo"], adj[f"{key}_hi"]),
            float(t2[f"{key}_pct"]),
            int(t2["n"]),
        )
    cons = run.position.loc["position consistency"]
    count, n = _paper_position()
    add("position consistency", (cons["pct"], cons["low"], cons["high"]), 100 * count / n, n)
    t3 = paper_table("saer_table3").dropna(subset=["prompt_version"]).set_index("prompt_version")
    for _, r in run.detection.iterrows():
        version = str(r["prompt_version"])
        add(
            f"adversarial correct, {version}",
            (r["correct_%"], r["correct_lo"], r["correct_hi"]),
            float(t3.loc[version, "correct_pct"]),
            PAPER_ADVERSARIAL_PAIRS,
        )
    frame = pd.DataFrame(rows)
    frame[["value", "low", "high"]] = frame[["value", "low", "high"]].astype(float)
    return frame


def plot_forest(run: SaerRun) -> Figure:
    """A forest plot of :func:`headline`: ours and the paper's estimate of each headline share with its 95 %
    interval."""
    return forest_plot(headline(run), label="measure", group="source", xlabel="% (95 % Wilson interval)", width=7.2)


# ----------------------------------------------------------------------------------------------- agreement
def agreement_table(run: SaerRun) -> pd.DataFrame:
    """Raw agreement and quadratic weighted kappa (95 % bootstrap intervals) between every pair of labelers in the
    run, followed by the paper's human-human and SAER-human rows (labelers this run does not have)."""
    ag = run.agreements
    raw, kappa = f"Raw agreement, % [{_CI}]", f"Weighted κ [{_CI}]"
    rows = [
        {
            "Task": task,
            "Source": "ours",
            "Labelers": f"{a} vs {b}".replace("order: ", ""),
            "Cases": str(int(n)),
            raw: _cell(pct, pct_lo, pct_hi),
            kappa: estimate_cell(k, k_lo, k_hi, digits=2),
        }
        for task, a, b, n, pct, pct_lo, pct_hi, k, k_lo, k_hi in zip(
            *(
                ag[c]
                for c in (
                    "task",
                    "labeler_a",
                    "labeler_b",
                    "n_both_parsed",
                    "raw_agreement_%",
                    "raw_lo",
                    "raw_hi",
                    "kappa_w",
                    "kappa_lo",
                    "kappa_hi",
                )
            ),
            strict=True,
        )
    ]
    metrics = paper_table("saer_metrics").set_index("metric")["value"]
    comparisons = str(_paper_position()[1])
    for task, stem, labelers, cases in (
        ("pointwise", "pointwise_human_human", "human A vs human B", "not stated"),
        ("pointwise", "pointwise_saer_human_strict", "SAER vs humans (strict adjudication)", "not stated"),
        ("pairwise", "pairwise_human_human", "human A vs human B", comparisons),
        ("pairwise", "pairwise_saer_human_merged", "SAER vs humans (merged)", comparisons),
    ):
        rows.append(
            {
                "Task": task,
                "Source": "paper",
                "Labelers": labelers,
                "Cases": cases,
                raw: _cell(metrics[f"{stem}_agree"]),
                kappa: estimate_cell(metrics[f"{stem}_kappa_w"], digits=2),
            }
        )
    return pd.DataFrame(rows)


def kappa_exercise() -> Callout:
    """The weighted-kappa exercise: two short label lists, and a solution whose arithmetic (observed and
    chance-expected weighted disagreement) is computed here and checked against
    :func:`~recjudge_utils.metrics.agreement.weighted_kappa`."""
    a = ["Good Match", "Partial Match", "Partial Match", "Poor Match", "Partial Match"]
    b = ["Good Match", "Partial Match", "Poor Match", "Poor Match", "Good Match"]
    order = list(POINTWISE_LABELS)
    x, y = np.array([order.index(v) for v in a]), np.array([order.index(v) for v in b])
    k = len(order)
    weights = (np.arange(k)[:, None] - np.arange(k)[None, :]) ** 2
    observed = float(np.mean((x - y) ** 2))
    pa, pb = np.bincount(x, minlength=k) / len(x), np.bincount(y, minlength=k) / len(y)
    expected = float(pa @ weights @ pb)
    by_hand = 1 - observed / expected
    package = weighted_kappa(a, b, POINTWISE_LABELS)
    changes = [
        (weighted_kappa(a, [*b[:i], label, *b[i + 1 :]], POINTWISE_LABELS), i, label)
        for i in range(len(b))
        for label in order
        if label != b[i]
    ]
    worst, where, to = min(changes)
    steps = abs(order.index(to) - order.index(a[where]))
    before = abs(order.index(b[where]) - order.index(a[where]))
    body = (
        "Two annotators labelled five lists:\n\n"
        f"```python\na = {a}\nb = {b}\n```\n\n"
        "Compute Cohen's quadratic {term}`weighted kappa` {cite:p}`cohen1968weighted` by hand on the scale "
        "Poor < Partial < Good (codes 0, 1, 2; a disagreement of $d$ steps costs $d^2$): the mean observed cost, the "
        "cost expected by chance from each annotator's own label shares, and $\\kappa_w = 1 - "
        "\\text{observed} / \\text{expected}$. Then check it with\n\n"
        "```python\nfrom recjudge_utils.metrics.agreement import POINTWISE_LABELS, weighted_kappa\n"
        "weighted_kappa(a, b, POINTWISE_LABELS)\n```\n\n"
        "Which single change to `b` lowers kappa the most?"
    )
    solution = (
        f"Codes: a = {x.tolist()}, b = {y.tolist()}. Observed cost: the squared differences "
        f"{((x - y) ** 2).tolist()} average {observed:.2f}. Label shares (Poor, Partial, Good): a "
        f"{np.round(pa, 2).tolist()}, b {np.round(pb, 2).tolist()}; the chance-expected cost "
        f"$\\sum_{{ij}} p_a(i)\\, p_b(j)\\,(i-j)^2$ is {expected:.2f}. So $\\kappa_w = 1 - {observed:.2f} / "
        f"{expected:.2f} = {by_hand:.3f}$, and `weighted_kappa` returns {package:.3f}. Of the {len(changes)} single "
        f"changes to `b`, setting list {where + 1} to {to} lowers kappa most, to {worst:.3f}: it turns a "
        f"{before}-step difference into a {steps}-step one (cost {before**2} → {steps**2}): a disagreement two steps "
        "apart costs four times one a step apart. Kappa is undefined (NaN) when both "
        "annotators give every list one and the same label: chance then explains all the agreement."
    )
    return exercise("weighted kappa by hand", body, solution)


# ----------------------------------------------------------------------------------------------- time, cost, answers
def time_cost(run: SaerRun) -> pd.DataFrame:
    """Judge calls, tokens, wall time and cost of this run, an extrapolation to the paper's run size, and the
    paper's 30 minutes / $28 (Claude 4.5 Sonnet on Bedrock)."""
    frames = [run.pointwise, run.pairwise, run.adversarial]
    allr = pd.concat([f[["latency_s", "cache_hit", "prompt_tokens", "completion_tokens", "cost_usd"]] for f in frames])
    n_calls = len(allr)
    fresh = allr.loc[~allr["cache_hit"]]
    judge_s = sum(run.timings.get(f"judge {task}", 0.0) for task in ("pointwise", "pairwise", "adversarial"))
    per_call = float(fresh["latency_s"].mean()) if len(fresh) else float("nan")
    cost_per_call = float(fresh["cost_usd"].mean()) if len(fresh) else float("nan")
    priced = bool(allr["cost_usd"].notna().any())
    rows = [
        (
            "judgments in this run",
            f"{n_calls} ({len(fresh)} fresh, {n_calls - len(fresh)} from cache)",
            f"{PAPER_CALLS}",
        ),
        (
            "prompt / completion tokens",
            f"{int(allr['prompt_tokens'].sum())} / {int(allr['completion_tokens'].sum())}",
            "not reported",
        ),
        ("judging wall time (this run)", f"{judge_s / 60:.2f} min", "about 30 min"),
        ("whole run incl. data and recommenders", f"{sum(run.timings.values()) / 60:.2f} min", "not reported"),
        ("cost (this run)", f"${allr['cost_usd'].sum():.4f}" if priced else _UNPRICED, "about $28"),
        (
            "mean latency per fresh call",
            f"{per_call:.2f} s" if not np.isnan(per_call) else "n/a (all cached)",
            "not reported",
        ),
        (
            f"extrapolated to {PAPER_CALLS} calls (our inference of the paper's run size), sequential",
            f"{PAPER_CALLS * per_call / 60:.1f} min, "
            + (f"${PAPER_CALLS * cost_per_call:.2f}" if not np.isnan(cost_per_call) else _UNPRICED)
            if not np.isnan(per_call)
            else "n/a",
            "about 30 min, $28",
        ),
    ]
    return pd.DataFrame(rows, columns=["Quantity", "Ours", f"Paper ({PAPER_JUDGE})"])


_UNPRICED = "unknown (no price for this model)"


def _first_raw(bad: pd.DataFrame) -> str:
    raw = bad["raw_text"].dropna().astype(str) if "raw_text" in bad else pd.Series(dtype=str)
    return raw.iloc[0][:160].replace("\n", " ") if len(raw) else "-"


def unparsed_summary(run: SaerRun) -> pd.DataFrame:
    """Unparsed answers per task and prompt version, with the most common reason and one raw answer."""
    rows = []
    for task, frame in (("pointwise", run.pointwise), ("pairwise", run.pairwise), ("adversarial", run.adversarial)):
        for version, sub in frame.groupby("prompt_version", sort=True):
            bad = sub.loc[sub["status"] != "parsed"]
            reasons = bad["reason"].fillna("").str.slice(0, 60).value_counts()
            rows.append(
                {
                    "Task": task,
                    "Prompt": version,
                    "Calls": len(sub),
                    "Unparsed": int((sub["status"] == "unparsed").sum()),
                    "Errors": int((sub["status"] == "error").sum()),
                    "Most common reason": reasons.index[0] if len(reasons) else "-",
                    "One raw answer (first 160 characters)": _first_raw(bad),
                }
            )
    return pd.DataFrame(rows)


def copied_from_examples(run: SaerRun, min_chars: int = 40) -> pd.DataFrame:
    """Per task: parsed answers whose REASONING repeats >= ``min_chars`` characters verbatim from one of the
    prompt's few-shot answers (a sign that a small judge parrots the examples instead of reading the lists)."""
    rows = []
    tasks = (("pointwise", run.pointwise, "pointwise"), ("pairwise", run.pairwise, "pairwise"))
    for task, frame, mode in (*tasks, ("adversarial", run.adversarial, "pairwise")):
        for version, sub in frame.groupby("prompt_version", sort=True):
            shots = few_shot_answers(load_template(run.panel.domain, mode, str(version)))
            parsed = sub.loc[sub["status"] == "parsed", "raw_text"].fillna("").tolist()
            copied = 0
            for text in parsed:
                for shot in shots:
                    m = SequenceMatcher(None, text, shot, autojunk=False).find_longest_match(0, len(text), 0, len(shot))
                    if m.size >= min_chars:
                        copied += 1
                        break
            rows.append(
                {
                    "Task": task,
                    "Prompt": version,
                    "Few-shot answers": len(shots),
                    "Parsed answers": len(parsed),
                    f"Repeating ≥ {min_chars} characters of an example": copied,
                }
            )
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------------------- sentences
def observations(run: SaerRun) -> list[str]:
    """Plain statements computed from this run's frames (for the discussion; nothing hard-coded)."""
    out = []
    pw = run.pairwise.loc[run.pairwise["status"] == "parsed"]
    if len(pw):
        first = 100 * float((pw["verdict"] == "Set 1").mean())
        out.append(
            f"In the main pairwise run the judge named the first-shown list (Set 1) in {first:.0f} % of "
            f"{len(pw)} parsed answers."
        )
    adj = run.adjudicated
    cons = adj["consistent"].dropna()
    if len(cons):
        out.append(
            f"Both presentation orders agreed for {int(cons.sum())} of {len(cons)} customers; the other "
            f"{len(cons) - int(cons.sum())} verdicts depended on position and became ties."
        )
        both_tie = int(((adj["adjudicated"] == TIE) & (adj["consistent"] == True)).sum())  # noqa: E712
        if both_tie:
            out.append(
                f"{both_tie} of the consistent verdicts were 'Tie' in both orders: consistency by always "
                "answering Tie carries no preference."
            )
    for version in run.config.prompt_versions:
        adv = run.adversarial.loc[
            (run.adversarial["prompt_version"] == version) & (run.adversarial["status"] == "parsed")
        ]
        if len(adv):
            correct = 100 * float((adv["outcome"] == "correct").mean())
            shown_first = 100 * float((adv["genuine_position"] == 1).mean())
            out.append(
                f"Adversarial, prompt {version}: {correct:.0f} % correct; the genuine list was shown first in "
                f"{shown_first:.0f} % of these pairs (a judge that always picks Set 1 scores exactly that)."
            )
    p = run.pointwise.loc[(run.pointwise["prompt_version"] == run.config.main_version)]
    parsed = p.loc[p["status"] == "parsed", "category"]
    if len(parsed):
        top = parsed.value_counts()
        out.append(
            f"Pointwise ({run.config.main_version}): {int(top.iloc[0])} of {len(parsed)} parsed labels were "
            f"'{top.index[0]}'; {int((p['status'] != 'parsed').sum())} of {len(p)} answers were unparsed."
        )
    return out


def run_notes(run: SaerRun) -> Callout:
    """:func:`observations` as a note (nothing to show: a note saying no answer parsed)."""
    lines = observations(run) or ["No answer of this run parsed: there is nothing to observe."]
    body = "\n".join(f"- {line}" for line in lines)
    return Callout(admonition("admonition", body, title="What this run's answers show", classes=("note",)))


def _interval(value: float, low: float, high: float) -> str:
    return f"{_cell(value, low, high)} %"


def _against(low: float, high: float, reference: float) -> str:
    """Where an interval lies relative to ``reference``: 'below', 'above' or 'includes'."""
    if high < reference:
        return "below"
    if low > reference:
        return "above"
    return "includes"


def _shares(frame: pd.DataFrame | pd.Series, stem: str) -> tuple[float, float, float]:
    """(estimate, low, high) of one outcome's share from a run frame's ``<stem>_%``, ``_lo`` and ``_hi``."""
    return float(frame[f"{stem}_%"]), float(frame[f"{stem}_lo"]), float(frame[f"{stem}_hi"])


def _two_shares(what: str, names: tuple[str, str], a: Sequence[float], b: Sequence[float], paper: str) -> str:
    """A takeaway comparing two shares by their intervals: separated (one ranks above) or overlapping (no rank)."""
    head = f"{what}: {names[0]} {_interval(*a)}, {names[1]} {_interval(*b)}"
    if a[1] > b[2] or b[1] > a[2]:
        hi, lo = (names[0], names[1]) if a[1] > b[2] else (names[1], names[0])
        return f"{head}. The intervals do not overlap: in this run {hi} scores higher than {lo} ({paper})."
    return f"{head}. The intervals overlap: this run cannot rank the two ({paper})."


def _consistency_takeaway(run: SaerRun) -> str | None:
    """Our position consistency against the paper's: a difference only where our interval and the paper's (Wilson,
    from its 176 of 200) do not overlap."""
    cons = run.position.loc["position consistency"]
    if not cons["n"]:
        return None
    count, n = _paper_position()
    paper_pct = 100 * count / n
    p_lo, p_hi = paper_interval(paper_pct, n)
    head = (
        f"Position consistency {_interval(cons['pct'], cons['low'], cons['high'])}, the paper's {count} of {n} = "
        f"{_interval(paper_pct, p_lo, p_hi)} (its interval computed here)"
    )
    if cons["high"] < p_lo:
        verdict = (
            f"The intervals do not overlap: this judge's verdicts depend on the order more often than {PAPER_JUDGE}'s"
        )
    elif cons["low"] > p_hi:
        verdict = (
            f"The intervals do not overlap: this judge's verdicts depend on the order less often than {PAPER_JUDGE}'s"
        )
    else:
        verdict = f"The intervals overlap: this run cannot tell this judge's consistency from {PAPER_JUDGE}'s"
    return f"{head}. {verdict}. Read it with the tie rate: a judge that always answers Tie is perfectly consistent."


def _detection_takeaway(run: SaerRun) -> str | None:
    main = run.config.main_version
    r = run.detection.set_index("prompt_version").loc[main]
    if not r["n_parsed"]:
        return None
    verdict = {
        "above": "the interval lies above 50 %: the judge tells the genuine list from a decoy more often than a coin "
        "flip would",
        "includes": "the interval includes 50 %: this run cannot tell the judge from one that guesses",
        "below": "the interval lies below 50 %: the judge picks the genuine list less often than a coin flip would "
        "(its wrong answers and ties together)",
    }[_against(float(r["correct_lo"]), float(r["correct_hi"]), 50.0)]
    share = _interval(*_shares(r, "correct"))
    return f"Adversarial detection with the {_version_label(main)}: {share} correct; {verdict}."


def _health(run: SaerRun) -> AnswerHealth:
    return AnswerHealth.of_frames(run.pointwise, run.pairwise, run.adversarial)


def health_notes(run: SaerRun) -> list[Callout]:
    """The warning shown when no label, verdict or adversarial answer could be read (nothing otherwise)."""
    health = _health(run)
    if not health.n or not health.nothing_usable:
        return []
    return [unanswerable_warning("how the two recommenders' lists compare, or whether the judge spots a decoy", health)]


def takeaways_items(run: SaerRun) -> list[str]:
    """The chapter's key takeaways, computed from the run: each statement about a number says what its 95 %
    interval allows (a rank only where intervals do not overlap, a difference from a reference only where the
    interval excludes it). Measures with nothing parsed are left out; when more than a fifth of the answers could
    not be read, the first takeaway says so."""
    out: list[str] = []
    health = _health(run)
    if health.nothing_usable:
        return [
            f"No label, verdict or adversarial answer could be read, so nothing can be measured: {health.sentence()}"
        ]
    if health.flagged:
        out.append(f"The numbers below rest on the answers that could be read: {health.sentence()}")
    a, b = ALGORITHMS
    good = run.labels.loc[run.labels["category"] == CATEGORIES[0]].set_index("algorithm")
    shares = [tuple(good.loc[alg, ["pct", "low", "high"]].astype(float)) for alg in ALGORITHMS]
    if not any(np.isnan(s[0]) for s in shares):
        t1 = paper_table("saer_table1").set_index(["algorithm", "category"])["saer_pct"]
        paper = f"the paper: {t1[(a, CATEGORIES[0])]:.1f} % against {t1[(b, CATEGORIES[0])]:.1f} %"
        out.append(_two_shares("Lists labelled Good Match", (a, b), shares[0], shares[1], paper))
    adj = run.verdicts.iloc[1]
    if adj["n_parsed"]:
        t2 = paper_table("saer_table2").set_index("scope").loc["SAER Adjudicated"]
        paper = f"the paper: {t2['cooccurrence_win_pct']:.1f} % against {t2['embedding_win_pct']:.1f} %"
        wins = (_shares(adj, "cooccurrence_win"), _shares(adj, "embedding_win"))
        out.append(_two_shares("Adjudicated pairwise wins", (a, b), wins[0], wins[1], paper))
    out += [t for t in (_consistency_takeaway(run), _detection_takeaway(run)) if t]
    det = run.detection.set_index("prompt_version")
    main = run.config.main_version
    others = [v for v in run.config.prompt_versions if v != main and det.loc[v, "n_parsed"]]
    if det.loc[main, "n_parsed"] and others:
        t3 = paper_table("saer_table3").dropna(subset=["prompt_version"]).set_index("prompt_version")["correct_pct"]
        v = others[0]
        paper = f"the paper: {t3[main]:.1f} % against {t3[v]:.1f} %"
        names = (f"prompt {main}", f"prompt {v}")
        out.append(
            _two_shares(
                "Adversarial detection by prompt version",
                names,
                _shares(det.loc[main], "correct"),
                _shares(det.loc[v], "correct"),
                paper,
            )
        )
    return out
