"""What chapter 2 shows about a re-evaluation run: the split in words, tuning, Table 3 beside the paper (an accuracy
and a serendipity table, each with its forest plot), the accuracy vs serendipity figure, the paper's observations
checked on this run's numbers (CIs taken into account) and the chapter's takeaways.

Tables are for people (headers in words, an estimate and its CI in one cell, no index); sentences are MyST
Markdown the notebook displays. The machine-readable numbers stay in ``ReevaluationRun.results()``."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from pandas.io.formats.style import Styler

from recjudge_utils.data import SerendipityPairs
from recjudge_utils.experiments.reevaluation import SERENDIPITY_METRICS, ReevaluationRun
from recjudge_utils.judge.backends.sim import SIM_PREFIX
from recjudge_utils.metrics.correlation import SPEARMAN_Z_VARIANCE, spearman_ci
from recjudge_utils.metrics.serendipity_at_k import METRIC_LABELS, METRICS
from recjudge_utils.recommenders import DISPLAY_NAMES
from recjudge_utils.reporting.answer_health import NO_PARSED, AnswerHealth, unanswerable_warning
from recjudge_utils.reporting.callouts import Callout, stand_in_note
from recjudge_utils.reporting.display import SMALL_MODEL_MARKERS, captioned, error_bars, estimate_cell
from recjudge_utils.reporting.figures import MARKERS, palette
from recjudge_utils.reporting.paper import paper_table

__all__ = [
    "ACCURACY",
    "PAPER_AVG_RANGE",
    "PAPER_DATASET",
    "SERENDIPITY",
    "accuracy_serendipity_figure",
    "checks_markdown",
    "data_note",
    "examples_note",
    "judgment_text",
    "observations",
    "paper_dataset",
    "paper_table3",
    "random_test_lines",
    "random_tests",
    "spearman_ci",
    "split_text",
    "table2",
    "table3",
    "table3_figure",
    "table3_frame",
    "takeaways_items",
    "tuning_table",
    "uaum_lines",
    "unparsed_judgments",
]

PAPER_DATASET = {"ml-1m": "ML-1M", "goodreads": "Goodreads", "amazon-beauty": "Beauty"}
#: Table 3's two halves, each narrow enough for the text column
ACCURACY: tuple[str, ...] = ("p_acc", "n_acc")
SERENDIPITY: tuple[str, ...] = ("p_ser", "n_ser", "avg")
#: how the paper's judge is named beside its numbers
PAPER_JUDGE = "judge GPT-4o-mini with the CoT prompt, three-fold averages, 100 TPE trials per RS per fold"


def paper_dataset(dataset: str) -> str:
    """The paper's dataset nearest to ours: the same one, or ML-1M (MovieLens) for any other."""
    return PAPER_DATASET.get(dataset, "ML-1M")


def paper_table3(dataset: str | None = None) -> pd.DataFrame:
    """The paper's Table 3 (percent except avg), optionally one dataset's rows."""
    table = paper_table("serendipity_table3")
    return table if dataset is None else table.loc[table["dataset"] == dataset].reset_index(drop=True)


def _label(metric: str, top_k: int) -> str:
    """``Precision_ser@20``: the metric's label at this run's list length."""
    return METRIC_LABELS[metric].removesuffix("@k") + f"@{top_k}"


def _name(rs: object) -> str:
    return DISPLAY_NAMES.get(str(rs), str(rs))


def _spaced(styler: Styler) -> Styler:
    """Room between the columns, so that an interval's bracket never touches the next column's number."""
    return styler.set_table_styles(
        [{"selector": "th", "props": "padding: 0.2em 0.8em;"}, {"selector": "td", "props": "padding: 0.2em 0.8em;"}],
        overwrite=False,
    )


def data_note(dataset: str, dataset_label: str) -> Callout | None:
    """The stand-in note when the re-evaluated data is none of the paper's three datasets (None when it is one)."""
    if dataset in PAPER_DATASET:
        return None
    nearest = paper_dataset(dataset)
    return stand_in_note(
        dataset_label,
        f"the paper's {nearest} {{cite:p}}`tokutake2025serendipity`",
        f"The paper column of Table 3 and the reference markers of the figures are the paper's {nearest} values.",
    )


def examples_note(examples: SerendipityPairs) -> Callout | None:
    """The stand-in note when the judge's few-shot examples come from a stand-in of Serendipity-2018 (else None)."""
    if examples.is_real:
        return None
    return stand_in_note(
        examples.display_label,
        "the Serendipity-2018 pairs {cite:p}`kotkov2018serendipity` the paper draws its few-shot examples from",
        "Only the judge's ten examples come from it; the recommenders are trained and judged on the data above.",
    )


def table2(ours: pd.DataFrame) -> Styler:
    """Dataset statistics (ours, from ``dataset_statistics``) beside the paper's Table 2, one row per dataset."""
    paper_t2 = paper_table("serendipity_table2").assign(source="paper")
    frame = pd.concat([ours.assign(source="this run"), paper_t2], ignore_index=True)
    frame = frame.rename(
        columns={
            "source": "Source",
            "dataset": "Dataset",
            "users": "Users",
            "items": "Items",
            "interactions": "Positive interactions",
            "categories": "Categories",
        }
    )[["Source", "Dataset", "Users", "Items", "Positive interactions", "Categories"]]
    return _spaced(
        captioned(frame, "Table 2. Dataset statistics after keeping ratings of 4 or more: this run and the paper")
    )


def _day(ts: int) -> str:
    return pd.to_datetime(ts, unit="s").date().isoformat()


def split_text(run: ReevaluationRun) -> str:
    """The temporal split of every fold in words (sizes, periods, what the unseen-entity rules removed)."""
    paragraphs = []
    for f in run.folds:
        rep, span = f.report, f.time_range
        judged = len(f.judged_users)
        who = (
            f" (user{'s' if judged > 1 else ''} {', '.join(str(int(u)) for u in f.judged_users)})"
            if 0 < judged <= 10
            else ""
        )
        paragraphs.append(
            f"**Fold {f.fold}** trains on {len(f.train):,} positives of {f.train['user'].nunique():,} users "
            f"from {_day(span[0])} to {_day(span[1])}, tunes on the next slice ({len(f.valid):,} positives) "
            f"and tests on the one after it, {_day(span[2])} to {_day(span[3])}. Of its {rep.rows:,} test positives, "
            f"{rep.rows_unseen_user:,} belong to {rep.users_unseen:,} users with no training history and "
            f"{rep.rows_unseen_item_only:,} more to items never seen in training; both are dropped, which leaves "
            f"{len(f.test):,} test positives of {len(f.eval_users):,} evaluation users, {judged:,} of them "
            f"judged{who}."
        )
    return "\n\n".join(paragraphs)


def _params_text(params: dict[str, object]) -> str:
    if not params:
        return "defaults"
    return ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in params.items())


def tuning_table(run: ReevaluationRun) -> pd.DataFrame:
    """One row per fold and RS: TPE trials (the study's target, and those run by this run: 0 when the model was
    loaded or tuning workers completed the study), best validation Recall@10, seconds, chosen hyperparameters."""
    rows = []
    for f, fitted in zip(run.folds, run.fitted, strict=True):
        for name, fit in fitted.items():
            if fit.tuning is None:
                continue
            rows.append(
                {
                    "Fold": f.fold,
                    "Recommender": _name(name),
                    "TPE trials": fit.tuning.n_trials,
                    "Run here": 0 if fit.loaded else fit.tuning.trials_run,
                    "Loaded": fit.loaded,
                    "Validation Recall@10": fit.tuning.value,
                    "Seconds": f"{fit.tuning.seconds + fit.tuning.refit_seconds:.1f}",
                    "Chosen hyperparameters": _params_text(fit.tuning.params),
                }
            )
    return pd.DataFrame(rows)


def judgment_text(run: ReevaluationRun) -> str:
    """How many list slots and distinct pairs were judged, how many answers parsed, and the scores given."""
    n_slots = int(run.per_user["judged"].sum()) * run.config.top_k
    n_pairs = len(run.judgments)
    if not n_pairs:
        return "No list was judged in this run (no judged user)."
    bad = int((run.judgments["status"] != "parsed").sum())
    scores = pd.to_numeric(run.judgments["score"], errors="coerce").dropna().astype(int)
    counts = scores.value_counts().reindex(range(1, 6), fill_value=0)
    given = ", ".join(f"{level}: {n:,}" for level, n in counts.items())
    return (
        f"The judged users' lists hold {n_slots:,} slots; {n_pairs:,} distinct (user, item) pairs were judged, "
        f"{n_slots - n_pairs:,} judgments fewer because a pair several recommenders recommend is judged once. "
        f"{n_pairs - bad:,} answers parsed and {bad:,} did not ({{term}}`unparseable answers <unparseable answer>`: "
        f"shown below, never imputed). Scores given, by level: {given}."
    )


def unparsed_judgments(run: ReevaluationRun, n: int = 10) -> Styler | None:
    """The first ``n`` judgments that were not parsed, with the judge's raw answer (None when every answer parsed)."""
    if not len(run.judgments):
        return None
    bad = run.judgments[run.judgments["status"] != "parsed"].head(n)
    if bad.empty:
        return None
    frame = pd.DataFrame(
        {
            "Fold": bad["fold"],
            "User": bad["user"],
            "Item": bad["item"],
            "Why it did not parse": bad.get("reason", pd.Series("", index=bad.index)).fillna("").str.slice(0, 120),
            "The judge's answer": bad.get("raw_text", pd.Series("", index=bad.index)).fillna("").str.slice(0, 200),
        }
    )
    title = f"Unparsed answers (the first {len(frame)} of {int((run.judgments['status'] != 'parsed').sum())})"
    return _spaced(captioned(frame, title).format(escape="html", na_rep="-"))


def _paper_cell(value: float, metric: str) -> str:
    """A paper's Table 3 number as printed there: three significant digits (trailing zeros kept), Avg.Score three
    decimals."""
    return f"{value:.3f}" if metric == "avg" else f"{value:#.3g}"


def table3_frame(
    summary: pd.DataFrame, metrics: Sequence[str], paper_dataset: str = "ML-1M", top_k: int = 20
) -> pd.DataFrame:
    """Table 3's ``metrics`` for this run (estimate [95 % CI], ``estimate_cell``) beside the paper's value of the same
    RS (``-`` where the paper has no such RS): columns (metric, ``this run`` | ``paper``), one row per RS."""
    paper = paper_table3(paper_dataset).set_index("rs")
    columns: dict[tuple[str, str], list[str]] = {("Recommender", ""): [_name(r) for r in summary["rs"]]}
    for m in metrics:
        head = _label(m, top_k) + ("" if m == "avg" else " (%)")
        columns[(head, "this run")] = [
            NO_PARSED
            if m in SERENDIPITY_METRICS and pd.isna(r[m]) and r["users_judged"]
            else estimate_cell(r[m], r[f"{m}_lo"], r[f"{m}_hi"], digits=2)
            for _, r in summary.iterrows()
        ]
        columns[(head, f"paper ({paper_dataset})")] = [
            _paper_cell(paper.loc[_name(r), m], m) if _name(r) in paper.index else "-" for r in summary["rs"]
        ]
    if any(m in SERENDIPITY_METRICS for m in metrics):
        columns[("Unparsed answers", "")] = [f"{int(n):,}" for n in summary["unparsed"]]
    return pd.DataFrame(columns)


def _plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def table3(run: ReevaluationRun, dataset: str, metrics: Sequence[str]) -> Styler:
    """One half of Table 3 (``ACCURACY`` or ``SERENDIPITY``) beside the paper's rows for the nearest dataset, with a
    caption saying over how many users (and, for serendipity, which judge), and what a cell without brackets means."""
    k, cfg, s = run.config.top_k, run.config, run.summary
    nearest = paper_dataset(dataset)
    serendipity = any(m in SERENDIPITY_METRICS for m in metrics)
    users = int(s["users_judged" if serendipity else "users_acc"].min()) if len(s) else 0
    setup = f"{run.data_label}, {_plural(cfg.folds, 'fold')}, {_plural(cfg.n_trials, 'TPE trial')}"
    if serendipity:
        head = f"Table 3b. Serendipity@{k} of each recommender as judge {run.judge_name} scores it"
        setup += f", {_plural(users, 'judged user-list')}"
    else:
        head = f"Table 3a. Accuracy@{k} of each recommender"
        setup += f", {_plural(users, 'evaluation user-list')}"
    caption = (
        f"{head}: this run ({setup}) beside the paper's {nearest} rows ({PAPER_JUDGE}). "
        "This run: mean over folds [95 % bootstrap CI over users]"
    )
    if any(s[f"{m}_lo"].isna().any() and s[m].notna().any() for m in metrics):
        caption += "; a number without brackets has no CI (a bootstrap over one user has no width)"
    caption += "; - : the paper has no such recommender."
    return _spaced(captioned(table3_frame(s, metrics, nearest, k), caption))


def table3_figure(run: ReevaluationRun, dataset: str, metrics: Sequence[str]) -> Figure:
    """A forest plot per metric: each RS's estimate with its 95 % CI (filled circles) and the paper's Table 3 value
    for the nearest dataset (hollow diamonds, no interval: the paper reports none)."""
    k = run.config.top_k
    nearest = paper_dataset(dataset)
    paper = paper_table3(nearest).set_index("rs")
    names = [_name(r) for r in run.summary["rs"]]
    y = np.arange(len(names), dtype=float)
    ours, theirs = palette(2)
    fig, axes = plt.subplots(
        1, len(metrics), figsize=(1.6 + 2.7 * len(metrics), 1.2 + 0.32 * len(names)), sharey=True, squeeze=False
    )
    for ax, m in zip(axes[0], metrics, strict=True):
        s = run.summary
        value = s[m].astype(float)
        ax.errorbar(
            value, y - 0.12, xerr=error_bars(value, s[f"{m}_lo"], s[f"{m}_hi"]), fmt=MARKERS[0], color=ours,
            capsize=3, label="this run (95 % CI)",
        )  # fmt: skip
        reference = [float(paper.loc[n, m]) if n in paper.index else np.nan for n in names]
        ax.plot(
            reference, y + 0.12, linestyle="none", marker=MARKERS[2], markerfacecolor="none", markeredgecolor=theirs,
            markeredgewidth=1.5, markersize=7, label=f"paper, {nearest}",
        )  # fmt: skip
        ax.set_xlabel(_label(m, k) + ("" if m == "avg" else " (%)"))
        ax.grid(axis="x", alpha=0.3)
    axes[0][0].set_yticks(y, names)
    axes[0][0].invert_yaxis()
    by_label = dict(zip(*reversed(axes[0][0].get_legend_handles_labels()), strict=True))
    order = ["this run (95 % CI)", f"paper, {nearest}"]
    fig.legend([by_label[x] for x in order], order, loc="upper center", ncol=2, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    plt.close(fig)
    return fig


def accuracy_serendipity_figure(run: ReevaluationRun) -> Figure:
    """Precision and NDCG, accuracy against serendipity, one point per RS (colour and marker) with its CIs."""
    top_k = run.config.top_k
    plot = run.summary.assign(RS=[_name(r) for r in run.summary["rs"]])
    n = len(plot)
    markers = [MARKERS[i % len(MARKERS)] for i in range(n)]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for ax, (x, y) in zip(axes, [("p_acc", "p_ser"), ("n_acc", "n_ser")], strict=True):
        ax.errorbar(
            plot[x],
            plot[y],
            xerr=error_bars(plot[x], plot[f"{x}_lo"], plot[f"{x}_hi"]),
            yerr=error_bars(plot[y], plot[f"{y}_lo"], plot[f"{y}_hi"]),
            fmt="none",
            ecolor="grey",
            alpha=0.4,
        )
        sns.scatterplot(
            data=plot, x=x, y=y, hue="RS", style="RS", markers=markers, palette=palette(n), s=80, ax=ax,
            legend=(ax is axes[1]),
        )  # fmt: skip
        for _, r in plot.iterrows():
            ax.annotate(r["RS"], (r[x], r[y]), fontsize=8, xytext=(4, 3), textcoords="offset points")
        ax.set_xlabel(_label(x, top_k) + " (%)")
        ax.set_ylabel(_label(y, top_k) + " (%)")
    if axes[1].get_legend():
        sns.move_legend(axes[1], "upper left", bbox_to_anchor=(1, 1), title=None, fontsize=8)
    fig.suptitle(f"{run.data_label}; judge {run.judge_name} ({run.config.template})", fontsize=9)
    fig.tight_layout()
    plt.close(fig)
    return fig


#: every Avg.Score@20 of the paper's Table 3 (each RS and dataset) lies in 2.131-2.387: this range, rounded
PAPER_AVG_RANGE = (2.1, 2.4)


def _has_ci(row: pd.Series, m: str) -> bool:
    return bool(pd.notna(row[f"{m}_lo"]) and pd.notna(row[f"{m}_hi"]))


def _users(summary: pd.DataFrame, m: str) -> int:
    """The fewest users any RS's value of ``m`` rests on (judged users for the serendipity metrics)."""
    return int(summary["users_judged" if m in SERENDIPITY_METRICS else "users_acc"].min())


def _overlapping(summary: pd.DataFrame, m: str) -> tuple[pd.Series | None, list[str] | None]:
    """The best RS on ``m`` and the RSs whose CI reaches its lower bound (None: no CI to compare, or no RS)."""
    ranked = summary.dropna(subset=[m]).sort_values(m, ascending=False)
    if ranked.empty:
        return None, None
    top, others = ranked.iloc[0], ranked.iloc[1:]
    if others.empty or not _has_ci(top, m) or not all(_has_ci(r, m) for _, r in others.iterrows()):
        return top, None
    return top, [_name(r["rs"]) for _, r in others.iterrows() if r[f"{m}_hi"] >= top[f"{m}_lo"]]


def _best(summary: pd.DataFrame, m: str) -> tuple[str, bool, str]:
    """Best RS on metric m, whether its CI lies above the CI of every other RS, and that verdict in words."""
    top, overlapping = _overlapping(summary, m)
    if top is None:
        why = NO_PARSED if m in SERENDIPITY_METRICS and summary["users_judged"].any() else "no RS has a value"
        return "none", False, f"({why})"
    name = _name(top["rs"])
    if len(summary.dropna(subset=[m])) == 1:
        return name, False, "(the only RS with a value: nothing to compare)"
    if overlapping is None:
        return name, False, f"(no CI with {_users(summary, m)} user(s): whether the win is clear cannot be told)"
    if not overlapping:
        return name, True, "(its CI is above every other RS's CI)"
    return name, False, f"(its CI overlaps that of {', '.join(overlapping)}: not a clear win)"


def _avg_range_line(avg: pd.DataFrame) -> str:
    """How many RSs' Avg.Score lies inside the paper's range: the point estimates (descriptive) and their CIs."""
    lo_r, hi_r = PAPER_AVG_RANGE
    n = len(avg)
    inside = int(avg["avg"].between(lo_r, hi_r).sum())
    line = (
        f"Avg.Score ranges {avg['avg'].min():.2f}-{avg['avg'].max():.2f}; {inside} of {n} RSs' point estimates inside "
        f"the paper's {lo_r}-{hi_r} (a descriptive count over these {n} RSs)"
    )
    with_ci = avg.dropna(subset=["avg_lo", "avg_hi"])
    if with_ci.empty:
        return line + f"; no RS has a CI (with {int(avg['users_judged'].min())} judged user(s)), so no count by CI"
    ci_inside = int(((with_ci["avg_lo"] >= lo_r) & (with_ci["avg_hi"] <= hi_r)).sum())
    ci_outside = int(((with_ci["avg_hi"] < lo_r) | (with_ci["avg_lo"] > hi_r)).sum())
    return line + (
        f"; by their 95% CIs: {ci_inside} inside, {ci_outside} outside, {len(with_ci) - ci_inside - ci_outside} "
        "straddle a bound" + (f", {n - len(with_ci)} without a CI" if len(with_ci) < n else "")
    )


def _spearman_line(ser: pd.DataFrame) -> str:
    """The rank correlation of Precision_acc and Precision_ser across RSs, with its interval when it has one
    (:func:`~recjudge_utils.metrics.correlation.spearman_ci`, also importable from here)."""
    rho, lo, hi, n = spearman_ci(ser["p_acc"], ser["p_ser"])
    head = f"Spearman correlation across the {n} RSs between Precision_acc and Precision_ser"
    if not np.isfinite(rho):
        return f"{head}: undefined (one of the two is the same for every RS)"
    if np.isnan(lo):
        why = "n < 4" if n < 4 else "|rho| = 1"
        return f"{head}: {rho:.2f} (descriptive of these {n} RSs; no interval: {why})"
    return (
        f"{head}: {rho:.2f}, 95% CI [{lo:.2f}, {hi:.2f}] (Fisher z with variance {SPEARMAN_Z_VARIANCE:g}/(n-3), "
        f"n = {n} RSs; it treats the RSs as the sample and leaves out the uncertainty of each RS's own means)"
    )


def observations(summary: pd.DataFrame, judgments: pd.DataFrame | None = None) -> list[str]:
    """Plain-language checks of the paper's observations on this run's numbers (CIs taken into account)."""
    lines: list[str] = []
    winners: dict[str, str] = {}
    clear_win: dict[str, bool] = {}
    for m in METRICS:
        best, is_clear, verdict = _best(summary, m)
        winners[m], clear_win[m] = best, is_clear
        lines.append(f"best on {METRIC_LABELS[m]}: {best} {verdict}")
    clear = {m: winners[m] for m in METRICS if clear_win[m]}
    if not clear:
        lines.append(
            "no metric separates its best RS from every other RS (overlapping CIs, or no CI): this run cannot test "
            "the paper's 'no RS is best on every metric'"
        )
    elif len(set(clear.values())) > 1:
        named = ", ".join(f"{METRIC_LABELS[m]}: {w}" for m, w in clear.items())
        lines.append(
            f"no single RS is best on every metric: different RSs are clearly best on different metrics ({named}), "
            "as the paper observes"
        )
    elif len(clear) == len(METRICS):
        lines.append(
            f"one RS ({next(iter(clear.values()))}) is clearly best on every metric: the paper's "
            "'no RS is best on every metric' does NOT hold here"
        )
    else:
        named = ", ".join(f"{METRIC_LABELS[m]}: {w}" for m, w in clear.items())
        lines.append(
            f"clear winners only on some metrics ({named}); the others are undecided: this run cannot test the "
            "paper's 'no RS is best on every metric'"
        )
    avg = summary.dropna(subset=["avg"])
    if len(avg):
        lines.append(_avg_range_line(avg))
    ser = summary.dropna(subset=["p_ser"])
    if "random" in set(ser["rs"]) and len(ser) > 1:
        rnd = ser.loc[ser["rs"] == "random"].iloc[0]
        if not _has_ci(rnd, "p_ser"):
            lines.append(
                f"Random's Precision_ser has no CI (with {int(rnd['users_judged'])} judged user(s)): no RS can be "
                "placed above it by CIs"
            )
        else:
            above = _above_random(ser)
            lines.append(
                "RSs whose Precision_ser CI is above Random's: "
                + (", ".join(above) if above else "none")
                + " (if none, the serendipity metric does not separate any RS from random lists on this sample)"
            )
    if len(ser) >= 3:
        lines.append(_spearman_line(ser))
    if judgments is not None and len(judgments) and "score" in judgments:
        sc = pd.to_numeric(judgments["score"], errors="coerce")
        parsed = sc.dropna()
        if len(parsed):
            top_share = parsed.value_counts(normalize=True).iloc[0]
            top_val = parsed.value_counts().index[0]
            lines.append(
                f"the judge gave {len(parsed)} parsed scores, {100 * top_share:.0f}% of them equal to {top_val:g}; "
                f"share of E >= 4: {100 * (parsed >= 4).mean():.0f}%; unparsed: {int(sc.isna().sum())} of {len(sc)}"
            )
    return lines


def _above_random(ser: pd.DataFrame) -> list[str]:
    """The RSs whose P_ser CI lies wholly above Random's (Random must have a CI)."""
    rnd = ser.loc[ser["rs"] == "random"].iloc[0]
    return [
        _name(r["rs"])
        for _, r in ser.iterrows()
        if r["rs"] != "random" and _has_ci(r, "p_ser") and r["p_ser_lo"] > rnd["p_ser_hi"]
    ]


def random_tests(run: ReevaluationRun) -> pd.DataFrame:
    """The run's paired tests of each RS against Random on P_ser (Holm-adjusted), RSs by their display names."""
    return run.random_tests.assign(rs=[_name(r) for r in run.random_tests["rs"]])


def random_test_lines(run: ReevaluationRun) -> list[str]:
    """The paired tests against Random in one sentence."""
    label = METRIC_LABELS["p_ser"]  # the metric the experiment tests
    tests = random_tests(run)
    if tests.empty:
        if "random" in set(run.summary["rs"]):
            return [f"paired t-tests against Random on {label}: {NO_PARSED} for Random or the others, nothing to test"]
        return ["no Random baseline in this run"]
    tested = tests.dropna(subset=["Holm-adjusted p"])
    if tested.empty:
        return [f"paired t-tests against Random on {label}: too few judged users (or no variation) to test"]
    above = tested[(tested["Holm-adjusted p"] < 0.05) & (tested["mean difference"] > 0)]["rs"].tolist()
    users = int(tested["users"].max())
    return [
        f"paired t-tests against Random on {label} over {users} judged users, "
        f"Holm-adjusted for {len(tested)} comparisons: "
        + (", ".join(above) + " above Random at 5%" if above else "no RS above Random at 5%")
    ]


def uaum_lines(run: ReevaluationRun) -> list[str]:
    """Whether the tuned UAUM degenerated to plain SVD (its top-10 lists nearly those of the same model without
    the unexpectedness term), per fold."""
    lines = []
    for f, fitted in zip(run.folds, run.fitted, strict=True):
        fit = fitted.get("uaum")
        if fit is None or not hasattr(fit.model, "svd_overlap"):
            continue
        overlap = float(fit.model.svd_overlap(10))
        params = fit.tuning.params if fit.tuning is not None else {}
        weight = params.get("lam", getattr(fit.model, "lam", None))
        shown = f"{weight:.3g}" if isinstance(weight, int | float) else "not set"
        verdict = "UAUM degenerated to plain SVD" if overlap >= 0.9 else "UAUM did not degenerate to plain SVD"
        lines.append(
            f"fold {f.fold}: {verdict} (unexpectedness weight {shown}; top-10 overlap with plain SVD {overlap:.2f})"
        )
    return lines


def checks_markdown(run: ReevaluationRun) -> str:
    """The paper's observations checked on this run, the tests against Random and UAUM's check: one bullet each."""
    lines = observations(run.summary, run.judgments) + random_test_lines(run) + uaum_lines(run)
    return "\n".join(f"- {line[:1].upper()}{line[1:]}." for line in lines)


def _lead_takeaway(summary: pd.DataFrame, m: str, top_k: int) -> str | None:
    """Who leads on ``m`` and whether the CIs let this run rank the leader above the others."""
    top, overlapping = _overlapping(summary, m)
    if top is None:
        return None
    unit = "" if m == "avg" else " %"
    head = (
        f"{_name(top['rs'])} has the highest {_label(m, top_k)}, "
        f"{estimate_cell(top[m], top[f'{m}_lo'], top[f'{m}_hi'], digits=2)}{unit}"
    )
    if len(summary.dropna(subset=[m])) == 1:
        return f"{head}, and no other recommender has a value to compare it with."
    if overlapping is None:
        n = _users(summary, m)
        return (
            f"{head}, but with {n} {'judged ' if m in SERENDIPITY_METRICS else ''}user{'s' if n != 1 else ''} per "
            "recommender not every value has a CI: this run cannot rank the recommenders on it."
        )
    if not overlapping:
        return f"{head}; its CI lies above every other recommender's, so on this data and judge it leads."
    if len(overlapping) == 1:
        return f"{head}, but its CI overlaps {overlapping[0]}'s: this run cannot rank the two."
    return f"{head}, but its CI overlaps those of {', '.join(overlapping)}: this run cannot rank them."


def _random_takeaway(summary: pd.DataFrame, top_k: int) -> str | None:
    """Which recommenders clear the random floor on P_ser, by CIs."""
    ser = summary.dropna(subset=["p_ser"])
    if "random" not in set(ser["rs"]) or len(ser) < 2:
        return None
    label = _label("p_ser", top_k)
    rnd = ser.loc[ser["rs"] == "random"].iloc[0]
    if not _has_ci(rnd, "p_ser"):
        return f"Random's {label} has no CI here, so no recommender can be shown to be more serendipitous than chance."
    above = _above_random(ser)
    if not above:
        return (
            f"No recommender's {label} CI lies above Random's: on this sample the judge's serendipity does not "
            "separate any recommender from random lists."
        )
    return (
        f"{', '.join(above)} clear{'s' if len(above) == 1 else ''} the random floor: "
        f"{'its' if len(above) == 1 else 'their'} {label} CI lies above Random's."
    )


def _avg_takeaway(summary: pd.DataFrame, top_k: int) -> str | None:
    """Avg.Score against the paper's 2.1-2.4, by CIs where they exist."""
    avg = summary.dropna(subset=["avg"])
    if avg.empty:
        return None
    lo_r, hi_r = PAPER_AVG_RANGE
    head = (
        f"{_label('avg', top_k)} spans {avg['avg'].min():.2f}-{avg['avg'].max():.2f} here; the paper's GPT-4o-mini "
        f"gives {lo_r}-{hi_r} to every recommender"
    )
    with_ci = avg.dropna(subset=["avg_lo", "avg_hi"])
    if with_ci.empty:
        return f"{head}. Without CIs this run cannot say whether its judge scores higher or lower than the paper's."
    outside = int(((with_ci["avg_hi"] < lo_r) | (with_ci["avg_lo"] > hi_r)).sum())
    return (
        f"{head}; the CIs of {outside} of {len(with_ci)} recommenders lie wholly outside that range, a difference "
        "between the judges (or the data) rather than between recommenders."
        if outside
        else f"{head}; every CI reaches into that range, so this run does not contradict it."
    )


def _judge_takeaway(judge_name: str) -> str | None:
    """What the serendipity columns are worth with a simulated or a very small judge (None for any other)."""
    if judge_name.startswith(SIM_PREFIX):
        return (
            "The serendipity columns are the simulated judge's: its scores follow a rule built from each user's later "
            "ratings and genre distance, so they show the metrics at work, not what an LLM finds serendipitous."
        )
    if any(marker in judge_name for marker in SMALL_MODEL_MARKERS):
        return (
            f"The serendipity columns come from {judge_name}, which judges close to randomly: they are not evidence "
            "about the recommenders' serendipity; rerun with a capable judge profile to test the paper."
        )
    return None


def _health(run: ReevaluationRun) -> AnswerHealth:
    return AnswerHealth.of_frames(run.judgments)


def health_notes(run: ReevaluationRun) -> list[Callout]:
    """The warning shown when the judge returned no usable answer (nothing otherwise): the accuracy half stands,
    the serendipity half cannot be computed."""
    health = _health(run)
    if not health.n or not health.nothing_usable:
        return []
    return [unanswerable_warning("how serendipitous the recommenders are (the accuracy half needs no judge)", health)]


def _health_takeaway(run: ReevaluationRun) -> str | None:
    """What the judge returned, when so little was usable that the serendipity half rests on few answers."""
    health = _health(run)
    if not health.flagged:
        return None
    if health.nothing_usable:
        return f"No serendipity number could be computed: {health.sentence()}"
    return f"The serendipity half rests on the answers that could be read: {health.sentence()}"


def takeaways_items(run: ReevaluationRun) -> list[str]:
    """The chapter's key takeaways from this run: who leads on accuracy and on serendipity and whether the CIs
    allow a ranking, the random floor, Avg.Score against the paper's range, and what the judge's numbers are worth."""
    k = run.config.top_k
    items = [
        _health_takeaway(run),
        _lead_takeaway(run.summary, "p_acc", k),
        _lead_takeaway(run.summary, "p_ser", k),
        _random_takeaway(run.summary, k),
        _avg_takeaway(run.summary, k),
        _judge_takeaway(run.judge_name),
    ]
    return [item for item in items if item]
