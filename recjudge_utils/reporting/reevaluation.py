"""What notebook 2 shows about a re-evaluation run: folds, tuning, Table 3 beside the paper, the accuracy vs
serendipity figure, and the paper's observations checked on this run's numbers (CIs taken into account)."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from scipy import stats

from recjudge_utils.experiments.reevaluation import SERENDIPITY_METRICS, ReevaluationRun
from recjudge_utils.metrics.serendipity_at_k import METRIC_LABELS, METRICS
from recjudge_utils.recommenders import DISPLAY_NAMES
from recjudge_utils.reporting.display import error_bars
from recjudge_utils.reporting.paper import paper_table

__all__ = [
    "PAPER_AVG_RANGE",
    "PAPER_DATASET",
    "accuracy_serendipity_figure",
    "fold_table",
    "judgment_lines",
    "observations",
    "random_test_lines",
    "random_tests",
    "spearman_ci",
    "table2",
    "table3",
    "table3_beside_paper",
    "tuning_table",
    "uaum_lines",
    "unparsed_judgments",
]

PAPER_DATASET = {"ml-1m": "ML-1M", "goodreads": "Goodreads", "amazon-beauty": "Beauty"}


def paper_table3(dataset: str | None = None) -> pd.DataFrame:
    """The paper's Table 3 (percent except avg), optionally one dataset's rows."""
    table = paper_table("serendipity_table3")
    return table if dataset is None else table.loc[table["dataset"] == dataset].reset_index(drop=True)


def table2(ours: pd.DataFrame) -> pd.DataFrame:
    """Dataset statistics (ours, from ``dataset_statistics``) beside the paper's Table 2."""
    paper_t2 = paper_table("serendipity_table2").assign(source="paper Table 2")
    cols = ["source", "dataset", "users", "items", "interactions", "categories"]
    return pd.concat([ours.assign(source="ours (ratings >= 4)"), paper_t2], ignore_index=True)[cols]


def fold_table(run: ReevaluationRun) -> pd.DataFrame:
    """One row per fold: sizes, unseen-entity counts and the train / test periods."""

    def day(ts: int) -> str:
        return pd.to_datetime(ts, unit="s").date().isoformat()

    table = pd.DataFrame([f.summary() for f in run.folds])
    table["train period"] = [f"{day(f.time_range[0])} .. {day(f.time_range[1])}" for f in run.folds]
    table["test period"] = [f"{day(f.time_range[2])} .. {day(f.time_range[3])}" for f in run.folds]
    return table


def tuning_table(run: ReevaluationRun) -> pd.DataFrame:
    """One row per fold and RS: trials (the study's target, and those run by this run: 0 when the model was loaded or
    tuning workers completed the study), best validation Recall@10, seconds, chosen parameters."""
    rows = []
    for f, fitted in zip(run.folds, run.fitted, strict=True):
        for name, fit in fitted.items():
            if fit.tuning is None:
                continue
            rows.append(
                {
                    "fold": f.fold,
                    "rs": DISPLAY_NAMES.get(name, name),
                    "trials": fit.tuning.n_trials,
                    "run here": 0 if fit.loaded else fit.tuning.trials_run,
                    "loaded": fit.loaded,
                    "valid Recall@10": fit.tuning.value,
                    "tune s": round(fit.tuning.seconds, 1),
                    "refit s": round(fit.tuning.refit_seconds, 1),
                    "params": fit.tuning.params,
                }
            )
    return pd.DataFrame(rows)


def judgment_lines(run: ReevaluationRun) -> list[str]:
    """How many list slots and distinct pairs were judged, with status and score counts."""
    top_k = run.config.top_k
    n_slots = int(run.per_user["judged"].sum()) * top_k
    n_pairs = len(run.judgments)
    lines = [
        f"judged list slots: {n_slots}; distinct (user, item) pairs judged: {n_pairs} "
        f"({n_slots - n_pairs} judgments saved by judging each pair once)"
    ]
    if n_pairs:
        lines.append(f"status: {run.judgments['status'].value_counts().to_dict()}")
        lines.append(f"score distribution: {run.judgments['score'].value_counts(dropna=False).sort_index().to_dict()}")
        bad = int((run.judgments["status"] != "parsed").sum())
        lines.append(f"{bad} unparsed/error judgments (shown, never imputed)")
    return lines


def unparsed_judgments(run: ReevaluationRun, n: int = 10) -> pd.DataFrame:
    """The first ``n`` judgments that were not parsed, with the judge's raw answer."""
    if not len(run.judgments):
        return run.judgments
    bad = run.judgments[run.judgments["status"] != "parsed"]
    return bad[[c for c in ["fold", "user", "item", "status", "reason", "raw_text"] if c in bad]].head(n)


def table3_beside_paper(summary: pd.DataFrame, paper_dataset: str = "ML-1M", digits: int = 3) -> pd.DataFrame:
    """Our metrics (mean [lo, hi]) next to the paper's Table 3 row of the same RS (NaN where the paper has none)."""
    paper = paper_table3(paper_dataset).set_index("rs")
    rows = []
    for _, r in summary.iterrows():
        name = DISPLAY_NAMES.get(str(r["rs"]), str(r["rs"]))
        row: dict[str, Any] = {"RS": name}
        for m in METRICS:
            if pd.isna(r[m]):
                row[f"{m} ours"] = "n/a"
            elif pd.isna(r[f"{m}_lo"]):
                row[f"{m} ours"] = f"{r[m]:.{digits}g} [no CI: 1 user]"
            else:
                row[f"{m} ours"] = f"{r[m]:.{digits}g} [{r[f'{m}_lo']:.{digits}g}, {r[f'{m}_hi']:.{digits}g}]"
            row[f"{m} paper"] = paper.loc[name, m] if name in paper.index else "-"
        row["unparsed"] = r["unparsed"]
        rows.append(row)
    return pd.DataFrame(rows).set_index("RS")


def table3(run: ReevaluationRun, dataset: str) -> pd.DataFrame:
    """Table 3 for this run beside the paper's rows for ``dataset`` (our dataset name; ML-1M by default)."""
    return table3_beside_paper(run.summary, paper_dataset=PAPER_DATASET.get(dataset, "ML-1M"))


def accuracy_serendipity_figure(run: ReevaluationRun) -> Figure:
    """Precision and NDCG, accuracy against serendipity, one point per RS with its CIs."""
    top_k = run.config.top_k
    plot = run.summary.assign(RS=[DISPLAY_NAMES.get(r, r) for r in run.summary["rs"]])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, (x, y) in zip(axes, [("p_acc", "p_ser"), ("n_acc", "n_ser")], strict=True):
        sns.scatterplot(data=plot, x=x, y=y, hue="RS", s=90, ax=ax, legend=(ax is axes[1]))
        ax.errorbar(
            plot[x],
            plot[y],
            xerr=error_bars(plot[x], plot[f"{x}_lo"], plot[f"{x}_hi"]),
            yerr=error_bars(plot[y], plot[f"{y}_lo"], plot[f"{y}_hi"]),
            fmt="none",
            ecolor="grey",
            alpha=0.4,
        )
        for _, r in plot.iterrows():
            ax.annotate(r["RS"], (r[x], r[y]), fontsize=8, xytext=(4, 3), textcoords="offset points")
        ax.set_xlabel(METRIC_LABELS[x].replace("k", str(top_k)) + " (%)")
        ax.set_ylabel(METRIC_LABELS[y].replace("k", str(top_k)) + " (%)")
    if axes[1].get_legend():
        sns.move_legend(axes[1], "upper left", bbox_to_anchor=(1, 1))
    fig.suptitle(
        f"Accuracy vs serendipity per RS - {run.data_label} - judge {run.judge_name} ({run.config.template})",
        fontsize=10,
    )
    fig.tight_layout()
    plt.close(fig)
    return fig


#: every Avg.Score@20 of the paper's Table 3 (each RS and dataset) lies in 2.131-2.387: this range, rounded
PAPER_AVG_RANGE = (2.1, 2.4)
#: Fieller, Hartley & Pearson (1957): the variance of Fisher's z of a Spearman correlation is about 1.06 / (n - 3)
_SPEARMAN_Z_VARIANCE = 1.06


def _has_ci(row: pd.Series, m: str) -> bool:
    return bool(pd.notna(row[f"{m}_lo"]) and pd.notna(row[f"{m}_hi"]))


def _best(summary: pd.DataFrame, m: str) -> tuple[str, bool, str]:
    """Best RS on metric m, whether its CI lies above the CI of every other RS, and that verdict in words."""
    ranked = summary.dropna(subset=[m]).sort_values(m, ascending=False)
    if ranked.empty:
        return "n/a", False, "(no RS has a value)"
    top, others = ranked.iloc[0], ranked.iloc[1:]
    name = DISPLAY_NAMES.get(str(top["rs"]), str(top["rs"]))
    if others.empty:
        return name, False, "(the only RS with a value: nothing to compare)"
    if not _has_ci(top, m) or not all(_has_ci(r, m) for _, r in others.iterrows()):
        n = int(summary["users_judged" if m in SERENDIPITY_METRICS else "users_acc"].min())
        return name, False, f"(no CI with {n} user(s): whether the win is clear cannot be told)"
    overlapping = [
        DISPLAY_NAMES.get(str(r["rs"]), str(r["rs"])) for _, r in others.iterrows() if r[f"{m}_hi"] >= top[f"{m}_lo"]
    ]
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


def spearman_ci(x: pd.Series, y: pd.Series, ci: float = 0.95) -> tuple[float, float, float, int]:
    """Spearman's rho of ``x`` and ``y`` with its Fisher-z interval (variance 1.06 / (n - 3), Fieller et al. 1957)
    and n; the bounds are NaN when n < 4, |rho| = 1 or rho is undefined (a constant column)."""
    n = len(x)
    rho = float(stats.spearmanr(x, y).statistic) if n >= 2 else float("nan")
    if n < 4 or not np.isfinite(rho) or abs(rho) >= 1:
        return rho, float("nan"), float("nan"), n
    half = stats.norm.ppf(0.5 + ci / 2) * np.sqrt(_SPEARMAN_Z_VARIANCE / (n - 3))
    z = np.arctanh(rho)
    return rho, float(np.tanh(z - half)), float(np.tanh(z + half)), n


def _spearman_line(ser: pd.DataFrame) -> str:
    """The rank correlation of Precision_acc and Precision_ser across RSs, with its interval when it has one."""
    rho, lo, hi, n = spearman_ci(ser["p_acc"], ser["p_ser"])
    head = f"Spearman correlation across the {n} RSs between Precision_acc and Precision_ser"
    if not np.isfinite(rho):
        return f"{head}: undefined (one of the two is the same for every RS)"
    if np.isnan(lo):
        why = "n < 4" if n < 4 else "|rho| = 1"
        return f"{head}: {rho:.2f} (descriptive of these {n} RSs; no interval: {why})"
    return (
        f"{head}: {rho:.2f}, 95% CI [{lo:.2f}, {hi:.2f}] (Fisher z with variance 1.06/(n-3), n = {n} RSs; it treats "
        "the RSs as the sample and leaves out the uncertainty of each RS's own means)"
    )


def observations(summary: pd.DataFrame, judgments: pd.DataFrame | None = None) -> list[str]:
    """Plain-language checks of the paper's observations on this run's numbers (CIs taken into account)."""
    lines: list[str] = []
    name = {r: DISPLAY_NAMES.get(r, r) for r in summary["rs"]}
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
            above = [
                name[r["rs"]]
                for _, r in ser.iterrows()
                if r["rs"] != "random" and _has_ci(r, "p_ser") and r["p_ser_lo"] > rnd["p_ser_hi"]
            ]
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


def random_tests(run: ReevaluationRun) -> pd.DataFrame:
    """The run's paired tests of each RS against Random on P_ser (Holm-adjusted), RSs by their display names."""
    return run.random_tests.assign(rs=[DISPLAY_NAMES.get(r, r) for r in run.random_tests["rs"]])


def random_test_lines(run: ReevaluationRun) -> list[str]:
    """The paired tests against Random in one sentence."""
    label = METRIC_LABELS["p_ser"]  # the metric the experiment tests
    tests = random_tests(run)
    if tests.empty:
        return ["no Random baseline in this run"]
    tested = tests.dropna(subset=["Holm-adjusted p"])
    if tested.empty:
        return [f"paired tests against Random on {label}: too few judged users (or no variation) to test"]
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
