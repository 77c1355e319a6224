"""What chapter 2 shows about a re-evaluation run: the split, tuning, Table 3's two halves beside the paper with their
figures, accuracy against serendipity, the paper's observations checked and the takeaways. The words are
``text/reevaluation.yaml``; every number comes from :mod:`recjudge_utils.experiments.reevaluation`."""

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
from recjudge_utils.experiments.reevaluation import SERENDIPITY_METRICS, ReevaluationRun
from recjudge_utils.judge.backends.sim import SIM_PREFIX
from recjudge_utils.judge.records import AnswerHealth
from recjudge_utils.metrics.correlation import SPEARMAN_Z_VARIANCE, Correlation
from recjudge_utils.metrics.serendipity_at_k import METRIC_LABELS, METRICS
from recjudge_utils.paper_tables import paper_table
from recjudge_utils.recommenders import DISPLAY_NAMES
from recjudge_utils.reporting.answer_health import NO_PARSED, health_sentence, unanswerable_warning
from recjudge_utils.reporting.callouts import Callout, small_model, stand_in_note
from recjudge_utils.reporting.claims import Estimate, Leader, leader, plural
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


def _estimate(row: pd.Series, m: str) -> Estimate:
    return Estimate.of_row(row, m, name=_name(row["rs"]))


def _users(summary: pd.DataFrame, m: str) -> int:
    """The fewest users any RS's value of ``m`` rests on (judged users for the serendipity metrics)."""
    return int(summary["users_judged" if m in SERENDIPITY_METRICS else "users_acc"].min())


def _lead(summary: pd.DataFrame, m: str) -> tuple[Leader | None, str]:
    """The leader on ``m`` and what the CIs allow: none, alone, no_ci, clear, one (overlaps one) or many."""
    lead = leader([_estimate(r, m) for _, r in summary.iterrows()])
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


def table2(ours: pd.DataFrame) -> Styler:
    """Dataset statistics (ours, from ``dataset_statistics``) beside the paper's Table 2, one row per dataset."""
    paper_t2 = paper_table("serendipity_table2").assign(source="paper")
    frame = pd.concat([ours.assign(source="this run"), paper_t2], ignore_index=True)
    heads: dict[str, str] = T.raw("columns.table2")
    return captioned(frame.rename(columns=heads)[list(heads.values())], T("captions.table2"), spaced=True)


def split_text(run: ReevaluationRun) -> str:
    """The temporal split of every fold in words (sizes, periods, what the unseen-entity rules removed)."""
    paragraphs = []
    for f in run.folds:
        n, users = len(f.judged_users), ", ".join(str(int(u)) for u in f.judged_users)
        who = f" (user{'s' if n > 1 else ''} {users})" if 0 < n <= 10 else ""
        days = [pd.to_datetime(ts, unit="s").date().isoformat() for ts in f.time_range]
        paragraphs.append(T("split.fold", f=f, train_users=f.train["user"].nunique(), days=days, who=who))
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


def unparsed_judgments(run: ReevaluationRun, n: int = 10) -> Styler | None:
    """The first ``n`` judgments that were not parsed, with the judge's raw answer (None when every answer parsed)."""
    all_bad = run.judgments[run.judgments["status"] != "parsed"] if len(run.judgments) else run.judgments
    if all_bad.empty:
        return None
    bad, empty = all_bad.head(n), pd.Series("", index=all_bad.head(n).index)
    frame = pd.DataFrame({"Fold": bad["fold"], "User": bad["user"], "Item": bad["item"],
                          "Why it did not parse": bad.get("reason", empty).fillna("").str.slice(0, 120),
                          "The judge's answer": bad.get("raw_text", empty).fillna("").str.slice(0, 200)})  # fmt: skip
    return captioned(frame, T("captions.unparsed", shown=len(frame), total=len(all_bad)), spaced=True, escape=True)


def health_notes(run: ReevaluationRun) -> list[Callout]:
    """The warning when no answer was usable (the accuracy half stands, the serendipity half cannot be computed)."""
    health = AnswerHealth.of_frames(run.judgments)
    return [unanswerable_warning(T("notes.health_question"), health)] if health.n and health.nothing_usable else []


# ----------------------------------------------------------------------------------------------- Table 3
def _paper_cell(value: float, metric: str) -> str:
    """A paper's Table 3 number as printed: three significant digits (zeros kept), Avg.Score three decimals."""
    return f"{value:.3f}" if metric == "avg" else f"{value:#.3g}"


def table3_frame(
    summary: pd.DataFrame, metrics: Sequence[str], paper_dataset: str = "ML-1M", top_k: int = 20
) -> pd.DataFrame:
    """Table 3's ``metrics``, this run (estimate [95 % CI]) beside the paper (``-``: no such RS), one row per RS."""
    paper = paper_table3(paper_dataset).set_index("rs")
    columns: dict[tuple[str, str], list[str]] = {("Recommender", ""): [_name(r) for r in summary["rs"]]}
    for m in metrics:
        head = _label(m, top_k, unit=True)
        columns[(head, "this run")] = [
            NO_PARSED
            if m in SERENDIPITY_METRICS and pd.isna(r[m]) and r["users_judged"]
            else _estimate(r, m).cell(digits=2)
            for _, r in summary.iterrows()
        ]
        columns[(head, f"paper ({paper_dataset})")] = [
            _paper_cell(paper.loc[_name(r), m], m) if _name(r) in paper.index else "-" for r in summary["rs"]
        ]  # fmt: skip
    if any(m in SERENDIPITY_METRICS for m in metrics):
        columns[("Unparsed answers", "")] = [f"{int(n):,}" for n in summary["unparsed"]]
    return pd.DataFrame(columns)


def users_sentence(run: ReevaluationRun) -> str:
    """How many user-lists per recommender Table 3's accuracy and serendipity columns rest on."""
    return T("users", acc=int(run.summary["users_acc"].min()), judged=int(run.summary["users_judged"].min()))


def table3(run: ReevaluationRun, dataset: str, metrics: Sequence[str]) -> Styler:
    """One half of Table 3 (``ACCURACY`` or ``SERENDIPITY``) beside the paper's rows for the nearest dataset."""
    k, cfg, s = run.config.top_k, run.config, run.summary
    serendipity = any(m in SERENDIPITY_METRICS for m in metrics)
    users = int(s["users_judged" if serendipity else "users_acc"].min()) if len(s) else 0
    setup = f"{run.data_label}, {plural(cfg.folds, 'fold')}, {plural(cfg.n_trials, 'TPE trial')}, "
    setup += plural(users, "judged user-list" if serendipity else "evaluation user-list")
    head = T("captions.table3b_head", k=k, judge=run.judge_name) if serendipity else T("captions.table3a_head", k=k)
    no_ci = any(s[f"{m}_lo"].isna().any() and s[m].notna().any() for m in metrics)
    caption = T("captions.table3", head=head, setup=setup, nearest=_paper_dataset(dataset),
                paper_judge=T("paper_judge"), no_ci=T("captions.no_ci") if no_ci else "")  # fmt: skip
    return captioned(table3_frame(s, metrics, _paper_dataset(dataset), k), caption, spaced=True)


def table3_figure(run: ReevaluationRun, dataset: str, metrics: Sequence[str]) -> Figure:
    """A forest plot per metric: each RS with its 95 % CI, and the paper's value (hollow diamonds, no interval)."""
    k, nearest = run.config.top_k, _paper_dataset(dataset)
    paper = paper_table3(nearest).set_index("rs")
    names = [_name(r) for r in run.summary["rs"]]
    y = np.arange(len(names), dtype=float)
    ours, theirs = palette(2)
    ours_label, paper_label = T("captions.figure_ours"), T("captions.figure_paper", nearest=nearest)
    size = (1.6 + 2.7 * len(metrics), 1.2 + 0.32 * len(names))
    fig, axes = plt.subplots(1, len(metrics), figsize=size, sharey=True, squeeze=False)
    for ax, m in zip(axes[0], metrics, strict=True):
        s, value = run.summary, run.summary[m].astype(float)
        ax.errorbar(value, y - 0.12, xerr=error_bars(value, s[f"{m}_lo"], s[f"{m}_hi"]), fmt=MARKERS[0], color=ours,
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
    plot = run.summary.assign(RS=[_name(r) for r in run.summary["rs"]])
    n = len(plot)
    markers = [MARKERS[i % len(MARKERS)] for i in range(n)]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for ax, (x, y) in zip(axes, [("p_acc", "p_ser"), ("n_acc", "n_ser")], strict=True):
        ax.errorbar(plot[x], plot[y], xerr=error_bars(plot[x], plot[f"{x}_lo"], plot[f"{x}_hi"]),
                    yerr=error_bars(plot[y], plot[f"{y}_lo"], plot[f"{y}_hi"]), fmt="none", ecolor="grey",
                    alpha=0.4)  # fmt: skip
        sns.scatterplot(data=plot, x=x, y=y, hue="RS", style="RS", markers=markers, palette=palette(n), s=80, ax=ax,
                        legend=(ax is axes[1]))  # fmt: skip
        for _, r in plot.iterrows():
            ax.annotate(r["RS"], (r[x], r[y]), fontsize=8, xytext=(4, 3), textcoords="offset points")
        ax.set(xlabel=_label(x, top_k, unit=True), ylabel=_label(y, top_k, unit=True))
    if axes[1].get_legend():
        sns.move_legend(axes[1], "upper left", bbox_to_anchor=(1, 1), title=None, fontsize=8)
    fig.suptitle(T("captions.figure_title", data=run.data_label, judge=run.judge_name, template=run.config.template),
                 fontsize=9)  # fmt: skip
    return done(fig)


# ----------------------------------------------------------------------------------------------- the paper's checks
def _best(summary: pd.DataFrame, m: str) -> tuple[str, bool, str]:
    """Best RS on m, whether its CI lies above the CI of every other RS, and that verdict in words."""
    lead, state = _lead(summary, m)
    if lead is None:
        why = NO_PARSED if m in SERENDIPITY_METRICS and summary["users_judged"].any() else T("checks.no_value")
        return "none", False, T("checks.best_none", why=why)
    names = ", ".join(e.name for e in lead.overlapping or ())
    return lead.top.name, state == "clear", T(f"checks.{state}", users=_users(summary, m), names=names)


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
    b, avg = ex.avg_band(summary), summary["avg"].dropna()
    line = T("checks.avg_range", low=f"{avg.min():.2f}", high=f"{avg.max():.2f}", inside=b["points_inside"], n=b["n"],
             paper_low=ex.PAPER_AVG_RANGE[0], paper_high=ex.PAPER_AVG_RANGE[1])  # fmt: skip
    if not b["with_ci"]:
        return line + T("checks.avg_range_no_ci", users=b["users"])
    without = T("checks.avg_range_without", n=b["n"] - b["with_ci"]) if b["with_ci"] < b["n"] else ""
    return line + T("checks.avg_range_ci", inside=b["inside"], outside=b["outside"], straddle=b["straddle"],
                    without=without)  # fmt: skip


def _spearman_line(rho: Correlation) -> str:
    """The rank correlation of Precision_acc and Precision_ser across RSs, with its interval when it has one."""
    head = T("checks.spearman_head", n=rho.n)
    if not np.isfinite(rho.value):
        return T("checks.spearman_undefined", head=head)
    if np.isnan(rho.low):
        why = "n < 4" if rho.n < 4 else "|rho| = 1"
        return T("checks.spearman_no_ci", head=head, rho=f"{rho.value:.2f}", n=rho.n, why=why)
    return T("checks.spearman", head=head, rho=f"{rho.value:.2f}", low=f"{rho.low:.2f}", high=f"{rho.high:.2f}",
             variance=f"{SPEARMAN_Z_VARIANCE:g}", n=rho.n)  # fmt: skip


def observations(
    summary: pd.DataFrame, judgments: pd.DataFrame | None = None, rho: Correlation | None = None
) -> list[str]:
    """The paper's observations checked on these numbers by their CIs (``rho``: the run's P_acc-P_ser Spearman)."""
    best = {m: _best(summary, m) for m in METRICS}
    lines = [T("checks.best", metric=METRIC_LABELS[m], best=w, verdict=v) for m, (w, _, v) in best.items()]
    lines.append(_winners_line({m: w for m, (w, clear, _) in best.items() if clear}))
    lines += [_avg_range_line(summary)] if summary["avg"].notna().any() else []
    if (floor := ex.random_floor(summary)) is not None:
        lines.append(T("checks.random_above", names=", ".join(map(_name, floor.above)) or "none") if floor.has_ci
                     else T("checks.random_no_ci", users=floor.users))  # fmt: skip
    lines += [_spearman_line(rho)] if rho is not None and summary["p_ser"].notna().sum() >= 3 else []
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
    head = T("takeaways.lead_head", name=lead.top.name, metric=_label(m, top_k), cell=lead.top.cell(digits=2),
             unit="" if m == "avg" else " %")  # fmt: skip
    n, names = _users(summary, m), [e.name for e in lead.overlapping or ()]
    return T(f"takeaways.lead_{state}", head=head, users=n, judged="judged " if m in SERENDIPITY_METRICS else "",
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
    avg, (low, high) = summary["avg"].dropna(), ex.PAPER_AVG_RANGE
    head = T("takeaways.avg_head", metric=_label("avg", top_k), low=f"{avg.min():.2f}", high=f"{avg.max():.2f}",
             paper_low=low, paper_high=high)  # fmt: skip
    key = "avg_no_ci" if not b["with_ci"] else "avg_outside" if b["outside"] else "avg_inside"
    return T(f"takeaways.{key}", head=head, outside=b["outside"], n=b["with_ci"])


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
