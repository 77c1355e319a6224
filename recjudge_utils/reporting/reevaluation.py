"""What notebook 2 shows about a re-evaluation run: folds, tuning, Table 3 beside the paper, the accuracy vs
serendipity figure, and the paper's observations checked on this run's numbers (CIs taken into account)."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from recjudge_utils.experiments.reevaluation import ReevaluationRun
from recjudge_utils.metrics.serendipity_at_k import METRIC_LABELS, METRICS
from recjudge_utils.recommenders import DISPLAY_NAMES
from recjudge_utils.reporting.display import error_bars
from recjudge_utils.reporting.paper import paper_table

__all__ = [
    "PAPER_DATASET",
    "accuracy_serendipity_figure",
    "fold_table",
    "judgment_lines",
    "observations",
    "random_test_lines",
    "random_tests",
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


def _best(summary: pd.DataFrame, m: str) -> tuple[str, bool]:
    """Best RS on metric m and whether its CI lies above the runner-up's CI."""
    ranked = summary.dropna(subset=[m]).sort_values(m, ascending=False)
    if ranked.empty:
        return "n/a", False
    top = ranked.iloc[0]
    clear = len(ranked) == 1 or bool(top[f"{m}_lo"] > ranked.iloc[1][f"{m}_hi"])
    return DISPLAY_NAMES.get(str(top["rs"]), str(top["rs"])), clear


def observations(summary: pd.DataFrame, judgments: pd.DataFrame | None = None) -> list[str]:
    """Plain-language checks of the paper's observations on this run's numbers (CIs taken into account)."""
    lines: list[str] = []
    name = {r: DISPLAY_NAMES.get(r, r) for r in summary["rs"]}
    winners: dict[str, str] = {}
    clear_win: dict[str, bool] = {}
    for m in METRICS:
        best, is_clear = _best(summary, m)
        winners[m], clear_win[m] = best, is_clear
        lines.append(
            f"best on {METRIC_LABELS[m]}: {best} "
            + (
                "(its CI is above every other RS's CI)"
                if is_clear
                else "(its CI overlaps the runner-up's: not a clear win)"
            )
        )
    clear = {m: winners[m] for m in METRICS if clear_win[m]}
    if not clear:
        lines.append(
            "no metric separates its best RS from the runner-up (overlapping CIs): this run cannot test the "
            "paper's 'no RS is best on every metric'"
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
        inside = avg[(avg["avg"] >= 2.1) & (avg["avg"] <= 2.4)]
        lines.append(
            f"Avg.Score ranges {avg['avg'].min():.2f}-{avg['avg'].max():.2f}; "
            f"{len(inside)} of {len(avg)} RSs inside the paper's 2.1-2.4"
        )
    ser = summary.dropna(subset=["p_ser"])
    if "random" in set(ser["rs"]) and len(ser) > 1:
        rnd = ser.loc[ser["rs"] == "random"].iloc[0]
        above = [name[r["rs"]] for _, r in ser.iterrows() if r["rs"] != "random" and r["p_ser_lo"] > rnd["p_ser_hi"]]
        lines.append(
            "RSs whose Precision_ser CI is above Random's: "
            + (", ".join(above) if above else "none")
            + " (if none, the serendipity metric does not separate any RS from random lists on this sample)"
        )
    if len(ser) >= 3:
        rho = ser[["p_acc", "p_ser"]].corr(method="spearman").iloc[0, 1]
        lines.append(f"Spearman correlation across RSs between Precision_acc and Precision_ser: {rho:.2f}")
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
