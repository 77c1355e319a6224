"""What chapter 2 shows about a re-evaluation run: the split, tuning, Table 3's two halves beside the paper with their
figures, accuracy against serendipity, the paper's observations checked and the takeaways. Captions are the
notebook's (each table function takes one, and Table 3's adds what its cells hold), headers, labels and fixed sentences
are written here, and ``text/reevaluation.yaml`` holds the notes shown only for some runs and the sentences chosen by
the run's intervals; every number comes from :mod:`recjudge_utils.experiments.reevaluation`."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from pandas.io.formats.style import Styler

from recjudge_utils.data import Dataset, SerendipityPairs
from recjudge_utils.experiments import reevaluation as ex
from recjudge_utils.experiments.reevaluation import ReevaluationRun
from recjudge_utils.judge.backends.sim import SIM_PREFIX
from recjudge_utils.judge.records import AnswerHealth
from recjudge_utils.metrics.correlation import SPEARMAN_Z_VARIANCE
from recjudge_utils.metrics.estimate import Estimate
from recjudge_utils.metrics.serendipity_at_k import METRIC_LABELS, METRICS, SERENDIPITY_METRICS, of_measure
from recjudge_utils.paper_tables import paper_table
from recjudge_utils.recommenders import DISPLAY_NAMES
from recjudge_utils.reporting.answer_health import NO_PARSED, health_sentence, unanswerable_warning
from recjudge_utils.reporting.callouts import Callout, small_model, stand_in_note
from recjudge_utils.reporting.cells import estimate_cell
from recjudge_utils.reporting.claims import Leader, leader, plural
from recjudge_utils.reporting.figures import MARKERS, done, error_bars, palette
from recjudge_utils.reporting.judge_saw import judge_saw, serendipity_use
from recjudge_utils.reporting.tables import captioned
from recjudge_utils.reporting.text import chapter_text

__all__ = [
    "ACCURACY", "SERENDIPITY", "accuracy_serendipity_figure", "checks_markdown", "data_note", "examples_note",
    "health_notes", "judge_saw_note",
    "judgment_text", "observations", "paper_table3", "random_test_lines", "random_tests", "split_text",
    "table2", "table3", "table3_figure", "table3_frame", "takeaways_items", "tuning_table", "uaum_lines",
    "unparsed_judgments", "users_sentence",
]  # fmt: skip

T = chapter_text("reevaluation")
_PAPER_DATASET = {"ml-1m": "ML-1M", "goodreads": "Goodreads", "amazon-beauty": "Beauty"}
_PAPER_JUDGE = "judge GPT-4o-mini with the CoT prompt, three-fold averages, 100 TPE trials per RS per fold"
#: Table 2's headers: the statistics frame's columns in words, in the order shown
_TABLE2_COLUMNS = {"source": "Source", "dataset": "Dataset", "users": "Users", "items": "Items",
                   "interactions": "Positive interactions", "categories": "Categories"}  # fmt: skip
#: Table 3's two halves, each narrow enough for the text column
ACCURACY: tuple[str, ...] = ("p_acc", "n_acc")
SERENDIPITY: tuple[str, ...] = ("p_ser", "n_ser", "avg")


def _paper_dataset(dataset: str) -> str:
    """The paper's dataset nearest to ours: the same one, or ML-1M (MovieLens) for any other."""
    return _PAPER_DATASET.get(dataset, "ML-1M")


def paper_table3(dataset: str | None = None) -> pd.DataFrame:
    """The paper's Table 3 (percent except avg), optionally one dataset's rows."""
    table = paper_table("serendipity_table3")
    return table if dataset is None else table.loc[table["dataset"] == dataset].reset_index(drop=True)


def _label(metric: str, top_k: int, unit: bool = False) -> str:
    """``Precision_ser@20`` (with ``unit``: `` (%)`` except for Avg.Score) at this run's list length."""
    return METRIC_LABELS[metric].removesuffix("@k") + f"@{top_k}" + (" (%)" if unit and metric != "avg" else "")


def _name(rs: object) -> str:
    return DISPLAY_NAMES.get(str(rs), str(rs))


def _estimate(row: pd.Series) -> Estimate:
    """One RS's estimate from a row of the run's summary, named as the RS."""
    return Estimate.of_row(row, name=_name(row["rs"]))


def _users(summary: pd.DataFrame, m: str) -> int:
    """The fewest users any RS's value of ``m`` rests on (judged users for the serendipity metrics)."""
    return int(of_measure(summary, m)["n"].min())


def _values(summary: pd.DataFrame, m: str) -> pd.Series:
    """Each RS's value of ``m``, in the summary's order."""
    return of_measure(summary, m)["value"]


#: the words for what the CIs allow of a leader (:func:`_lead`'s states but none): in the checks, in the takeaways
_CHECK = {"alone": "checks.alone", "no_ci": "checks.no_ci", "clear": "checks.clear", "one": "checks.one",
          "many": "checks.many"}  # fmt: skip
_LEAD_TAKEAWAY = {"alone": "takeaways.lead_alone", "no_ci": "takeaways.lead_no_ci", "clear": "takeaways.lead_clear",
                  "one": "takeaways.lead_one", "many": "takeaways.lead_many"}  # fmt: skip


def _lead(summary: pd.DataFrame, m: str) -> tuple[Leader | None, str]:
    """The leader on ``m`` and what the CIs allow: none, alone, no_ci, clear, one (overlaps one) or many."""
    lead = leader([_estimate(r) for _, r in of_measure(summary, m).iterrows()])
    if lead is None or lead.alone or lead.overlapping is None or lead.clear:
        state = "none" if lead is None else "alone" if lead.alone else "no_ci" if lead.overlapping is None else "clear"
        return lead, state
    return lead, "one" if len(lead.overlapping) == 1 else "many"


# ----------------------------------------------------------------------------------------------- data and split
def data_note(dataset: str, dataset_label: str) -> Callout | None:
    """The stand-in note when the re-evaluated data is none of the paper's three datasets (None when it is one)."""
    if dataset in _PAPER_DATASET:
        return None
    nearest = _paper_dataset(dataset)
    return stand_in_note(dataset_label, T("notes.data_paper", nearest=nearest), T("notes.data_detail", nearest=nearest))


def examples_note(examples: SerendipityPairs) -> Callout | None:
    """The stand-in note when the judge's few-shot examples come from a stand-in of Serendipity-2018 (else None)."""
    if examples.is_real:
        return None
    return stand_in_note(examples.display_label, T("notes.examples_paper"), T("notes.examples_detail"))


def table2(ours: pd.DataFrame, caption: str) -> Styler:
    """Dataset statistics (ours, from ``dataset_statistics``) beside the paper's Table 2, one row per dataset."""
    paper_t2 = paper_table("serendipity_table2").assign(source="paper")
    frame = pd.concat([ours.assign(source="this run"), paper_t2], ignore_index=True)
    shown = frame.rename(columns=_TABLE2_COLUMNS)[list(_TABLE2_COLUMNS.values())]
    return captioned(shown, caption, spaced=True)


def split_text(run: ReevaluationRun) -> str:
    """The temporal split of every fold in words (sizes, periods, what the unseen-entity rules removed)."""
    paragraphs = []
    for f in run.folds:
        n, users = len(f.judged_users), ", ".join(str(int(u)) for u in f.judged_users)
        who = f" (user{'s' if n > 1 else ''} {users})" if 0 < n <= 10 else ""
        days = [pd.to_datetime(ts, unit="s").date().isoformat() for ts in f.time_range]
        r = f.report
        paragraphs.append(
            f"**Fold {f.fold}** trains on {len(f.train):,} positives of {f.train['user'].nunique():,} users from "
            f"{days[0]} to {days[1]}, tunes on the next slice ({len(f.valid):,} positives) and tests on the one after "
            f"it, {days[2]} to {days[3]}. Of its {r.rows:,} test positives, {r.rows_unseen_user:,} belong to "
            f"{r.users_unseen:,} users with no training history and {r.rows_unseen_item_only:,} more to items never "
            f"seen in training; both are dropped, which leaves {len(f.test):,} test positives of "
            f"{len(f.eval_users):,} evaluation users, {len(f.judged_users):,} of them judged{who}."
        )
    return "\n\n".join(paragraphs)


def _params_text(params: dict[str, object]) -> str:
    return ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in params.items()) or "defaults"


def tuning_table(run: ReevaluationRun) -> pd.DataFrame:
    """One row per fold and RS: TPE trials (the target, and those run here: 0 when loaded or completed by tuning
    workers), best validation Recall@10, seconds, chosen hyperparameters."""
    rows = [
        {"Fold": f.fold, "Recommender": _name(name), "TPE trials": t.n_trials, "Run here": 0 if fit.loaded else
         t.trials_run, "Loaded": fit.loaded, "Validation Recall@10": t.value, "Seconds":
         f"{t.seconds + t.refit_seconds:.1f}", "Chosen hyperparameters": _params_text(t.params)}
        for f, fitted in zip(run.folds, run.fitted, strict=True)
        for name, fit in fitted.items()
        if (t := fit.tuning) is not None
    ]  # fmt: skip
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------------------- the judge
def judgment_text(run: ReevaluationRun) -> str:
    """How many list slots and distinct pairs were judged, how many answers parsed, and the scores given."""
    n_slots = int(run.per_user["judged"].sum()) * run.config.top_k
    n_pairs = len(run.judgments)
    if not n_pairs:
        return T("judgments.none")
    bad = int((run.judgments["status"] != "parsed").sum())
    given = ", ".join(f"{lv}: {n:,}" for lv, n in ex.score_counts(run.judgments).levels.items())
    return T("judgments.counts", slots=n_slots, pairs=n_pairs, bad=bad, given=given)


def unparsed_judgments(run: ReevaluationRun, caption: str, n: int = 10) -> Styler | None:
    """The first ``n`` judgments that were not parsed, with the judge's raw answer, under ``caption`` and how many
    are shown of how many (None when every answer parsed)."""
    all_bad = run.judgments[run.judgments["status"] != "parsed"] if len(run.judgments) else run.judgments
    if all_bad.empty:
        return None
    bad, empty = all_bad.head(n), pd.Series("", index=all_bad.head(n).index)
    frame = pd.DataFrame({"Fold": bad["fold"], "User": bad["user"], "Item": bad["item"],
                          "Why it did not parse": bad.get("reason", empty).fillna("").str.slice(0, 120),
                          "The judge's answer": bad.get("raw_text", empty).fillna("").str.slice(0, 200)})  # fmt: skip
    counted = f"{caption} (the first {len(frame)} of {len(all_bad)})"
    return captioned(frame, counted, spaced=True, escape=True)


def health_notes(run: ReevaluationRun) -> list[Callout]:
    """The warning when no answer was usable (the accuracy half stands, the serendipity half cannot be computed)."""
    health = AnswerHealth.of_frames(run.judgments)
    if not (health.n and health.nothing_usable):
        return []
    return [unanswerable_warning("how serendipitous the recommenders are (the accuracy half needs no judge)", health)]


# ----------------------------------------------------------------------------------------------- Table 3
def _paper_cell(value: float, metric: str) -> str:
    """A paper's Table 3 number as printed: three significant digits (zeros kept), Avg.Score three decimals."""
    return f"{value:.3f}" if metric == "avg" else f"{value:#.3g}"


def table3_frame(
    summary: pd.DataFrame, metrics: Sequence[str], paper_dataset: str = "ML-1M", top_k: int = 20
) -> pd.DataFrame:
    """Table 3's ``metrics``, this run (estimate [95 % CI]) beside the paper (``-``: no such RS), one row per RS."""
    paper = paper_table3(paper_dataset).set_index("rs")
    systems = summary["rs"].unique()
    columns: dict[tuple[str, str], list[str]] = {("Recommender", ""): [_name(r) for r in systems]}
    for m in metrics:
        head = _label(m, top_k, unit=True)
        columns[(head, "this run")] = [
            NO_PARSED
            if m in SERENDIPITY_METRICS and pd.isna(r["value"]) and r["n"]
            else estimate_cell(_estimate(r), digits=2)
            for _, r in of_measure(summary, m).iterrows()
        ]
        columns[(head, f"paper ({paper_dataset})")] = [
            _paper_cell(paper.loc[_name(r), m], m) if _name(r) in paper.index else "-" for r in systems
        ]  # fmt: skip
    if any(m in SERENDIPITY_METRICS for m in metrics):
        columns[("Unparsed answers", "")] = [f"{int(n):,}" for n in _values(summary, "unparsed")]
    return pd.DataFrame(columns)


def users_sentence(run: ReevaluationRun) -> str:
    """How many user-lists per recommender Table 3's accuracy and serendipity columns rest on."""
    acc, judged = _users(run.summary, "p_acc"), _users(run.summary, "p_ser")
    return (
        f"In this run the accuracy columns rest on {acc:,} user-lists per recommender, the serendipity columns and "
        f"Avg.Score on {judged:,} judged user-lists per recommender."
    )


def table3(run: ReevaluationRun, dataset: str, metrics: Sequence[str], caption: str) -> Styler:
    """One half of Table 3 (``ACCURACY`` or ``SERENDIPITY``) beside the paper's rows for the nearest dataset: its
    ``caption``, then this run's setup, the paper's and what a cell holds."""
    k, cfg, s = run.config.top_k, run.config, run.summary
    serendipity = any(m in SERENDIPITY_METRICS for m in metrics)
    users = _users(s, "p_ser" if serendipity else "p_acc") if len(s) else 0
    setup = f"{run.data_label}, {plural(cfg.folds, 'fold')}, {plural(cfg.n_trials, 'TPE trial')}, "
    setup += plural(users, "judged user-list" if serendipity else "evaluation user-list")
    no_ci = any((rows := of_measure(s, m))["low"].isna().any() and rows["value"].notna().any() for m in metrics)
    without = "; a number without brackets has no CI (a bootstrap over one user has no width)" if no_ci else ""
    described = (
        f"{caption}: this run ({setup}) beside the paper's {_paper_dataset(dataset)} rows ({_PAPER_JUDGE}). This run: "
        f"mean over folds [95 % bootstrap CI over users]{without}; - : the paper has no such recommender."
    )
    return captioned(table3_frame(s, metrics, _paper_dataset(dataset), k), described, spaced=True)


def table3_figure(run: ReevaluationRun, dataset: str, metrics: Sequence[str]) -> Figure:
    """A forest plot per metric: each RS with its 95 % CI, and the paper's value (hollow diamonds, no interval)."""
    k, nearest = run.config.top_k, _paper_dataset(dataset)
    paper = paper_table3(nearest).set_index("rs")
    names = [_name(r) for r in run.summary["rs"].unique()]
    y = np.arange(len(names), dtype=float)
    ours, theirs = palette(2)
    ours_label, paper_label = "this run (95 % CI)", f"paper, {nearest}"
    size = (1.6 + 2.7 * len(metrics), 1.2 + 0.32 * len(names))
    fig, axes = plt.subplots(1, len(metrics), figsize=size, sharey=True, squeeze=False)
    for ax, m in zip(axes[0], metrics, strict=True):
        s = of_measure(run.summary, m)
        value = s["value"].astype(float)
        ax.errorbar(value, y - 0.12, xerr=error_bars(value, s["low"], s["high"]), fmt=MARKERS[0], color=ours,
                    capsize=3, label=ours_label)  # fmt: skip
        reference = [float(paper.loc[n, m]) if n in paper.index else np.nan for n in names]
        ax.plot(reference, y + 0.12, linestyle="none", marker=MARKERS[2], markerfacecolor="none",
                markeredgecolor=theirs, markeredgewidth=1.5, markersize=7, label=paper_label)  # fmt: skip
        ax.set_xlabel(_label(m, k, unit=True))
        ax.grid(axis="x", alpha=0.3)
    axes[0][0].set_yticks(y, names)
    axes[0][0].invert_yaxis()
    by_label = dict(zip(*reversed(axes[0][0].get_legend_handles_labels()), strict=True))
    order = [ours_label, paper_label]
    fig.legend([by_label[x] for x in order], order, loc="upper center", ncol=2, fontsize=8, frameon=False)
    return done(fig, rect=(0, 0, 1, 0.92))


def accuracy_serendipity_figure(run: ReevaluationRun) -> Figure:
    """Precision and NDCG, accuracy against serendipity, one point per RS (colour and marker) with its CIs."""
    top_k = run.config.top_k
    plot = pd.DataFrame({m: _values(run.summary, m) for m in METRICS})
    plot["RS"] = [_name(r) for r in run.summary["rs"].unique()]
    n = len(plot)
    markers = [MARKERS[i % len(MARKERS)] for i in range(n)]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for ax, (x, y) in zip(axes, [("p_acc", "p_ser"), ("n_acc", "n_ser")], strict=True):
        xs, ys = of_measure(run.summary, x), of_measure(run.summary, y)
        ax.errorbar(plot[x], plot[y], xerr=error_bars(plot[x], xs["low"], xs["high"]),
                    yerr=error_bars(plot[y], ys["low"], ys["high"]), fmt="none", ecolor="grey", alpha=0.4)  # fmt: skip
        sns.scatterplot(data=plot, x=x, y=y, hue="RS", style="RS", markers=markers, palette=palette(n), s=80, ax=ax,
                        legend=(ax is axes[1]))  # fmt: skip
        for _, r in plot.iterrows():
            ax.annotate(r["RS"], (r[x], r[y]), fontsize=8, xytext=(4, 3), textcoords="offset points")
        ax.set(xlabel=_label(x, top_k, unit=True), ylabel=_label(y, top_k, unit=True))
    if axes[1].get_legend():
        sns.move_legend(axes[1], "upper left", bbox_to_anchor=(1, 1), title=None, fontsize=8)
    fig.suptitle(f"{run.data_label}; judge {run.judge_name} ({run.config.template})", fontsize=9)
    return done(fig)


# ----------------------------------------------------------------------------------------------- the paper's checks
def _best(summary: pd.DataFrame, m: str) -> tuple[str, bool, str]:
    """Best RS on m, whether its CI lies above the CI of every other RS, and that verdict in words."""
    lead, state = _lead(summary, m)
    if lead is None:
        why = NO_PARSED if m in SERENDIPITY_METRICS and of_measure(summary, m)["n"].any() else T("checks.no_value")
        return "none", False, T("checks.best_none", why=why)
    names = ", ".join(e.name for e in lead.overlapping or ())
    return lead.top.name, state == "clear", T(_CHECK[state], users=_users(summary, m), names=names)


def _winners_line(clear: dict[str, str]) -> str:
    named = ", ".join(f"{METRIC_LABELS[m]}: {w}" for m, w in clear.items())
    if not clear:
        return T("checks.no_clear_metric")
    if len(set(clear.values())) > 1:
        return T("checks.different_winners", named=named)
    if len(clear) == len(METRICS):
        return T("checks.one_winner", name=next(iter(clear.values())))
    return T("checks.some_winners", named=named)


def _avg_range_line(summary: pd.DataFrame) -> str:
    """How many RSs' Avg.Score lies inside the paper's range: the point estimates (descriptive) and their CIs."""
    b, avg = ex.avg_band(summary), _values(summary, "avg").dropna()
    line = T("checks.avg_range", low=f"{avg.min():.2f}", high=f"{avg.max():.2f}", inside=b["points_inside"], n=b["n"],
             paper_low=ex.PAPER_AVG_RANGE[0], paper_high=ex.PAPER_AVG_RANGE[1])  # fmt: skip
    if not b["with_ci"]:
        return line + T("checks.avg_range_no_ci", users=b["users"])
    without = T("checks.avg_range_without", n=b["n"] - b["with_ci"]) if b["with_ci"] < b["n"] else ""
    return line + T("checks.avg_range_ci", inside=b["inside"], outside=b["outside"], straddle=b["straddle"],
                    without=without)  # fmt: skip


def _spearman_line(rho: Estimate) -> str:
    """The rank correlation of Precision_acc and Precision_ser across RSs, with its interval when it has one."""
    head = T("checks.spearman_head", n=rho.n)
    if not np.isfinite(rho.value):
        return T("checks.spearman_undefined", head=head)
    if np.isnan(rho.low):
        why = "n < 4" if (rho.n or 0) < 4 else "|rho| = 1"
        return T("checks.spearman_no_ci", head=head, rho=f"{rho.value:.2f}", n=rho.n, why=why)
    return T("checks.spearman", head=head, rho=f"{rho.value:.2f}", low=f"{rho.low:.2f}", high=f"{rho.high:.2f}",
             variance=f"{SPEARMAN_Z_VARIANCE:g}", n=rho.n)  # fmt: skip


def observations(
    summary: pd.DataFrame, judgments: pd.DataFrame | None = None, rho: Estimate | None = None
) -> list[str]:
    """The paper's observations checked on these numbers by their CIs (``rho``: the run's P_acc-P_ser Spearman)."""
    best = {m: _best(summary, m) for m in METRICS}
    lines = [T("checks.best", metric=METRIC_LABELS[m], best=w, verdict=v) for m, (w, _, v) in best.items()]
    lines.append(_winners_line({m: w for m, (w, clear, _) in best.items() if clear}))
    lines += [_avg_range_line(summary)] if _values(summary, "avg").notna().any() else []
    if (floor := ex.random_floor(summary)) is not None:
        lines.append(T("checks.random_above", names=", ".join(map(_name, floor.above)) or "none") if floor.has_ci
                     else T("checks.random_no_ci", users=floor.users))  # fmt: skip
    lines += [_spearman_line(rho)] if rho is not None and _values(summary, "p_ser").notna().sum() >= 3 else []
    if judgments is not None and len(judgments) and (c := ex.score_counts(judgments)).n:
        lines.append(T("checks.scores", n=c.n, top_share=f"{c.top_share:.0f}", top=f"{c.top:g}",
                       high_share=f"{c.high_share:.0f}", unparsed=c.total - c.n, total=c.total))  # fmt: skip
    return lines


def random_tests(run: ReevaluationRun) -> pd.DataFrame:
    """The run's paired tests of each RS against Random on P_ser (Holm-adjusted), RSs by their display names."""
    return run.random_tests.assign(rs=[_name(r) for r in run.random_tests["rs"]])


def random_test_lines(run: ReevaluationRun) -> list[str]:
    """The paired tests against Random in one sentence."""
    label = METRIC_LABELS["p_ser"]  # the metric the experiment tests
    tests = random_tests(run)
    if tests.empty:
        if "random" in set(run.summary["rs"]):
            return [T("checks.tests_nothing", metric=label, no_parsed=NO_PARSED)]
        return [T("checks.tests_no_random")]
    tested = tests.dropna(subset=["Holm-adjusted p"])
    if tested.empty:
        return [T("checks.tests_too_few", metric=label)]
    above = tested[(tested["Holm-adjusted p"] < 0.05) & (tested["mean difference"] > 0)]["rs"].tolist()
    verdict = T("checks.tests_above", names=", ".join(above)) if above else T("checks.tests_none_above")
    return [T("checks.tests", metric=label, users=int(tested["users"].max()), n=len(tested), verdict=verdict)]


def uaum_lines(run: ReevaluationRun) -> list[str]:
    """Per fold, whether the tuned UAUM degenerated to plain SVD (nearly the same top-10 lists)."""
    checks = run.uaum_checks if run.uaum_checks is not None else pd.DataFrame(columns=["fold", "weight", "overlap"])
    return [
        T("checks.uaum", fold=r.fold, weight="not set" if np.isnan(r.weight) else f"{r.weight:.3g}",
          overlap=f"{r.overlap:.2f}", verdict=T("checks.uaum_degenerated" if r.overlap >= 0.9 else "checks.uaum_kept"))
        for r in checks.itertuples(index=False)
    ]  # fmt: skip


def checks_markdown(run: ReevaluationRun) -> str:
    """The paper's observations checked on this run, the tests against Random and UAUM's check: one bullet each."""
    lines = observations(run.summary, run.judgments, run.accuracy_serendipity_rho)
    lines += random_test_lines(run) + uaum_lines(run)
    return "\n".join(f"- {line[:1].upper()}{line[1:]}." for line in lines)


# ----------------------------------------------------------------------------------------------- takeaways
def _lead_takeaway(summary: pd.DataFrame, m: str, top_k: int) -> str | None:
    """Who leads on ``m`` and whether the CIs let this run rank the leader above the others."""
    lead, state = _lead(summary, m)
    if lead is None:
        return None
    head = T("takeaways.lead_head", name=lead.top.name, metric=_label(m, top_k), cell=estimate_cell(lead.top, digits=2),
             unit="" if m == "avg" else " %")  # fmt: skip
    n, names = _users(summary, m), [e.name for e in lead.overlapping or ()]
    return T(_LEAD_TAKEAWAY[state], head=head, users=n, judged="judged " if m in SERENDIPITY_METRICS else "",
             s="s" if n != 1 else "", names=", ".join(names))  # fmt: skip


def _random_takeaway(summary: pd.DataFrame, top_k: int) -> str | None:
    """Which recommenders clear the random floor on P_ser, by CIs."""
    floor, label = ex.random_floor(summary), _label("p_ser", top_k)
    if floor is None or not floor.has_ci:
        return None if floor is None else T("takeaways.random_no_ci", metric=label)
    if not floor.above:
        return T("takeaways.random_none", metric=label)
    one = len(floor.above) == 1
    return T("takeaways.random_some", names=", ".join(map(_name, floor.above)), verb="clears" if one else "clear",
             their="its" if one else "their", metric=label)  # fmt: skip


def _avg_takeaway(summary: pd.DataFrame, top_k: int) -> str | None:
    """Avg.Score against the paper's 2.1-2.4, by CIs where they exist."""
    if not (b := ex.avg_band(summary))["n"]:
        return None
    avg, (low, high) = _values(summary, "avg").dropna(), ex.PAPER_AVG_RANGE
    head = T("takeaways.avg_head", metric=_label("avg", top_k), low=f"{avg.min():.2f}", high=f"{avg.max():.2f}",
             paper_low=low, paper_high=high)  # fmt: skip
    key = (
        "takeaways.avg_no_ci"
        if not b["with_ci"]
        else "takeaways.avg_outside"
        if b["outside"]
        else "takeaways.avg_inside"
    )
    return T(key, head=head, outside=b["outside"], n=b["with_ci"])


def _judge_takeaway(judge_name: str) -> str | None:
    """What the serendipity columns are worth with a simulated or a very small judge (None for any other)."""
    if judge_name.startswith(SIM_PREFIX):
        return T("takeaways.judge_simulated")
    return T("takeaways.judge_small", judge=judge_name) if small_model(judge_name) else None


def _health_takeaway(run: ReevaluationRun) -> str | None:
    """What the judge returned, when more than a fifth of it was unusable."""
    health = AnswerHealth.of_frames(run.judgments)
    key = "takeaways.health_none" if health.nothing_usable else "takeaways.health_some"
    return T(key, sentence=health_sentence(health)) if health.flagged else None


def takeaways_items(run: ReevaluationRun) -> list[str]:
    """Who leads on accuracy and serendipity (if the CIs rank), the random floor, Avg.Score against the paper's
    range, and what the judge's numbers are worth."""
    s, k = run.summary, run.config.top_k
    items = [_health_takeaway(run), _lead_takeaway(s, "p_acc", k), _lead_takeaway(s, "p_ser", k),
             _random_takeaway(s, k), _avg_takeaway(s, k), _judge_takeaway(run.judge_name)]  # fmt: skip
    return [item for item in items if item]


def judge_saw_note(run: ReevaluationRun, dataset: Dataset) -> Callout:
    """What the judge saw: the template's prompts, the judged dataset's domain words and its items' fields."""
    return judge_saw([serendipity_use([run.config.template], dataset.items, dataset)], dataset.domain)
