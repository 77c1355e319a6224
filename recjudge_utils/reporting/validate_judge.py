"""Chapter 8: tables, figures and sentences, from a :class:`~recjudge_utils.experiments.validate_judge.JudgeValidation`

Every sentence is chosen by the intervals (:mod:`recjudge_utils.reporting.claims`): the judge is said to be below the
people only when its kappa's interval lies under every pair of people's, its labels to have added nothing when no
prediction-powered interval is narrower than the human-only one. The sentences the intervals and the run's state
choose between are ``text/validate_judge.yaml``; headers and fixed sentences are written here, captions by the notebook.
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from pandas.io.formats.style import Styler

from recjudge_utils.annotation.agreement_with_people import ALL_SYSTEMS
from recjudge_utils.annotation.kinds import kind_named
from recjudge_utils.annotation.ranking import ESTIMATE_KINDS
from recjudge_utils.annotation.ratings import RatingsComparison
from recjudge_utils.annotation.sample import sample_path
from recjudge_utils.experiments.validate_judge import JudgeValidation
from recjudge_utils.metrics.estimate import Estimate
from recjudge_utils.metrics.system_tests import DECISIONS
from recjudge_utils.paths import shown_path
from recjudge_utils.reporting.callouts import Callout, MySTText, admonition, judge_caveat, myst, small_model
from recjudge_utils.reporting.cells import estimate_cell
from recjudge_utils.reporting.claims import and_join, apart, side, with_name
from recjudge_utils.reporting.figures import MARKERS, TRUTH_STYLE, done, empty_figure, error_bars, palette
from recjudge_utils.reporting.tables import captioned
from recjudge_utils.reporting.text import chapter_text

__all__ = [
    "agreement_figure",
    "agreement_sentences",
    "agreement_table",
    "comparisons_tables",
    "curve_figure",
    "curve_text",
    "estimates_figure",
    "estimates_sentences",
    "estimates_table",
    "opening",
    "per_system_table",
    "ranks_sentences",
    "ranks_table",
    "ratings_sentences",
    "ratings_table",
    "sample_table",
    "sample_text",
    "takeaways_items",
    "worth_table",
]

T = chapter_text("validate_judge")
#: the frames' columns as the tables head them (a column not named here keeps its name)
_COLUMNS = {
    "scope": "systems",
    "statistic": "statistic",
    "between": "between",
    "estimate": "estimate [95 % CI]",
    "n": "tasks",
    "system": "system",
    "population": "judged units",
    "sampled": "tasks drawn",
    "inclusion_probability": "inclusion probability",
    "unparsed": "judged, unparsed",
    "n_labelled": "labelled",
    "n_judged": "judged",
    "human": "human-only [95 % CI]",
    "judge": "judge-only (no CI)",
    "ppi": "prediction-powered [95 % CI]",
    "width_ratio": "PPI / human CI width",
    "lam": "judge weight (lam)",
    "effective_labels": "worth (human labels)",
    "truth": "SIMULATED people, all units",
    "answer": "judge's answer",
}
#: the kind of items a sample holds, in the sample's sentence; each estimate's name in tables and figures
_KIND_WORDS = {
    "scores": "(user, item) pairs, each scored 1-5 for serendipity",
    "lists": "lists, each labelled Good, Partial or Poor Match",
    "duels": "duels of two systems' lists, both presentation orders adjudicated into A, B or a tie",
}
_ESTIMATE_NAMES = {"human": "human-only", "judge": "judge-only", "ppi": "prediction-powered"}
#: where rho's interval lies against 0 -> the sentence that says so (text keys; no interval: no sentence)
_RATINGS_SIDES = {"above": "ratings.rises", "below": "ratings.falls", "contains": "ratings.flat", "none": None}
_KAPPA = "quadratic-weighted kappa"


def _rename(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.rename(columns={c: _COLUMNS.get(c, c) for c in frame.columns})


def _whose(v: JudgeValidation, caption: str) -> str:
    """A caption naming whose labels its numbers rest on when they are SIMULATED annotators'."""
    return f"{caption} · labels of SIMULATED annotators, not people's" if v.simulated else caption


def opening(v: JudgeValidation) -> list[Callout | MySTText]:
    """Whose labels these are (SIMULATED annotators in their own admonition), and the judge's caveat."""
    shown: list[Callout | MySTText] = []
    if v.simulated:
        names = v.labels.annotators
        noises = ", ".join(f"{n:g}" for n in v.config.noises)
        body = T("simulated_annotators", n=len(names), names=", ".join(names), noises=noises)
        shown.append(Callout(admonition("admonition", body, "SIMULATED annotators", ("simulated",))))
    else:
        frame = v.labels.frame
        shown.append(
            myst(
                T(
                    "people",
                    source=shown_path(v.labels.source),
                    annotators=len(v.labels.annotators),
                    labels=len(frame),
                    tasks=frame["task_id"].nunique(),
                    skipped=v.labels.skipped,
                    relabelled=v.labels.relabelled,
                )
            )
        )
    caveat = judge_caveat(v.judge_name)
    return [*shown, *([caveat] if caveat else [])]


def sample_text(v: JudgeValidation) -> MySTText:
    """What was drawn, from which judgments, and where the files for people are."""
    s = v.sample
    path = shown_path(sample_path(v.run_dir, s.notebook, s.kind))
    files = ", ".join(f"`{shown_path(p)}`" for p in v.task_files)
    return myst(
        f"The sample: {len(s.tasks):,} tasks drawn from {s.notebook}'s {_KIND_WORDS[s.kind]} judged by "
        f"**{v.judge_name}** (template `{s.template}`), at most {s.per_system} per system (seed {s.seed}), each "
        f"system's draw a simple random sample of its judged units, recorded in the run as `{path}`. The files for "
        f"people (without the judge's answers): {files}."
    )


def sample_table(v: JudgeValidation, caption: str) -> Styler:
    """Per system: judged units, tasks drawn, inclusion probability, unparsed judgments (in no population)."""
    rows = [
        {"system": name, **{k: stratum[k] for k in _COLUMNS if k in stratum}}
        for name, stratum in v.sample.strata.items()
    ]
    frame = pd.DataFrame(rows, columns=["system", "population", "sampled", "inclusion_probability", "unparsed"])
    frame[["population", "sampled", "unparsed"]] = frame[["population", "sampled", "unparsed"]].astype(int)
    return captioned(_rename(frame), caption, precision=3)


def _agreement_rows(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.assign(estimate=[estimate_cell(Estimate.of_row(r), digits=2) for _, r in frame.iterrows()])
    return _rename(out[["scope", "statistic", "between", "estimate", "n"]])


def agreement_table(v: JudgeValidation, caption: str) -> Styler:
    """The people among themselves, then the judge against their consensus, over all systems (the caption says
    whose labels when they are SIMULATED annotators')."""
    both = pd.concat([v.human, v.judge[v.judge["scope"] == ALL_SYSTEMS]], ignore_index=True)
    return captioned(_agreement_rows(both), _whose(v, caption), precision=0)


def per_system_table(v: JudgeValidation, caption: str) -> Styler:
    """The judge against the consensus, one row per system and statistic."""
    part = v.judge[v.judge["scope"] != ALL_SYSTEMS].sort_values(["scope", "statistic"], kind="stable")
    return captioned(_agreement_rows(part), _whose(v, caption), precision=0)


def _kappas(v: JudgeValidation) -> tuple[Estimate | None, list[Estimate], list[Estimate]]:
    """(the judge's kappa over all systems, each pair of people's, the judge's per system)."""
    kappa = v.judge[v.judge["statistic"] == _KAPPA]
    overall = kappa[kappa["scope"] == ALL_SYSTEMS]
    first = None if overall.empty else overall.iloc[0]
    judge = None if first is None else Estimate.of_row(first, name=ALL_SYSTEMS)
    people = [Estimate.of_row(r, name=r["between"]) for _, r in v.human[v.human["statistic"] == _KAPPA].iterrows()]
    per_system = [Estimate.of_row(r, name=r["scope"]) for _, r in kappa[kappa["scope"] != ALL_SYSTEMS].iterrows()]
    return judge, people, per_system


def agreement_figure(v: JudgeValidation) -> Figure:
    """Kappa with its CI: each pair of people (the ceiling), the judge over all systems and per system."""
    judge, people, per_system = _kappas(v)
    rows = [(e.name.replace(" vs ", " vs\n"), e, "people among themselves") for e in people]
    rows += [(f"judge, {e.name}", e, "judge vs human consensus") for e in ([judge] if judge else []) + per_system]
    rows = [r for r in rows if r[1].known]
    if not rows:
        return empty_figure("no kappa to show: too few labelled tasks")
    groups = list(dict.fromkeys(g for _, _, g in rows))
    colours = palette(len(groups))
    fig, ax = plt.subplots(figsize=(7.0, 0.9 + 0.32 * len(rows)))
    for y, (_, e, group) in enumerate(rows):
        k = groups.index(group)
        ax.errorbar(
            [e.value], [y], xerr=error_bars([e.value], [e.low], [e.high]), fmt=MARKERS[k], color=colours[k], capsize=3,
            label=group if y == next(i for i, r in enumerate(rows) if r[2] == group) else None,
        )  # fmt: skip
    ax.axvline(0.0, color="0.4", linestyle=":", linewidth=1)
    ax.set_yticks(range(len(rows)), [label for label, _, _ in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("quadratic-weighted kappa (95 % CI); 0 = chance")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return done(fig)


def agreement_sentences(v: JudgeValidation) -> MySTText:
    """The judge against its ceiling, decided by the intervals, and whether it errs more on some systems."""
    judge, people, per_system = _kappas(v)
    if not people:
        return myst(T("agreement.no_people"))
    if judge is None or not judge.known:
        return myst(T("agreement.no_judge"))
    people_cells = ", ".join(estimate_cell(e, digits=2) for e in people)
    values = {"judge": estimate_cell(judge, digits=2), "people": people_cells, "n": int(v.judge["n"].iloc[0])}
    if side(judge, 0.0) == "contains" and any(side(p, 0.0) == "above" for p in people):
        sentences = [T("agreement.chance", **values)]
    elif all(p.has_ci for p in people) and judge.has_ci and all(judge.high < p.low for p in people):
        sentences = [T("agreement.below", **values)]
    elif all(p.has_ci for p in people) and judge.has_ci and all(judge.low > p.high for p in people):
        sentences = [T("agreement.above", **values)]
    else:
        sentences = [T("agreement.overlap", **values)]
    known = [e for e in per_system if e.known]
    if len(known) >= 2 and min(e.value for e in known) == max(e.value for e in known):
        sentences.append(T("agreement.same", value=estimate_cell(known[0], digits=2), systems=len(known)))
    elif len(known) >= 2:
        lo, hi = min(known, key=lambda e: e.value), max(known, key=lambda e: e.value)
        split = any(apart(a, b) for a in known for b in known)
        sentences.append(
            T(
                "agreement.uneven",
                low=estimate_cell(lo, digits=2),
                low_system=lo.name,
                high=estimate_cell(hi, digits=2),
                high_system=hi.name,
                apart=T("agreement.uneven_apart" if split else "agreement.uneven_overlap"),
            )
        )
    return myst("\n\n".join(sentences))


def _widths(v: JudgeValidation) -> pd.Series:
    e = v.estimates
    return (e["ppi_high"] - e["ppi_low"]) / (e["human_high"] - e["human_low"])


def _narrowing(v: JudgeValidation) -> tuple[pd.DataFrame, pd.Series]:
    """(the systems with both intervals and an unlabelled judged unit, their width ratios PPI / human-only)."""
    e = v.estimates
    usable = e[np.isfinite(e["ppi_low"]) & np.isfinite(e["human_low"]) & (e["n_judged"] > e["n_labelled"])]
    return usable, _widths(v)[usable.index]


def _narrower(ratio: pd.Series) -> int:
    """How many prediction-powered intervals are narrower than their human-only one (beyond rounding)."""
    return int((ratio < 1 - 1e-9).sum())


def estimates_table(v: JudgeValidation, caption: str) -> Styler:
    """Per system: judged and labelled units and the three estimates (and, SIMULATED, the people's all-unit mean)."""
    e = v.estimates
    frame = pd.DataFrame(
        {
            "system": e["system"],
            "n_judged": e["n_judged"].astype(int),
            "n_labelled": e["n_labelled"].astype(int),
            "human": [
                estimate_cell(Estimate.of_row(r, "human", "human_low", "human_high"), digits=2) for _, r in e.iterrows()
            ],
            "judge": [estimate_cell(x, digits=2) for x in e["judge"]],
            "ppi": [estimate_cell(Estimate.of_row(r, "ppi", "ppi_low", "ppi_high"), digits=2) for _, r in e.iterrows()],
        }
    )
    if v.simulated:
        frame["truth"] = v.people_means["people"].round(2).to_numpy()
    return captioned(_rename(frame), _whose(v, caption), precision=2)


def worth_table(v: JudgeValidation, caption: str) -> Styler:
    """Per system: the prediction-powered interval's width over the human-only one's, the judge's weight, and the
    number of human labels the prediction-powered interval is worth."""
    e = v.estimates
    frame = pd.DataFrame(
        {
            "system": e["system"],
            "n_labelled": e["n_labelled"].astype(int),
            "width_ratio": _widths(v).round(2),
            "lam": e["lam"].round(2),
            "effective_labels": [estimate_cell(x, digits=0) for x in e["effective_labels"]],  # a count, or ∞
        }
    )
    return captioned(_rename(frame), _whose(v, caption), precision=2)


def estimates_figure(v: JudgeValidation) -> Figure:
    """Per system the three estimates (judge-only without an interval), and the SIMULATED truth where there is one."""
    e = v.estimates
    if e.empty:
        return empty_figure("no system estimate: no labelled task")
    names = list(e["system"])
    colours = palette(3)
    fig, ax = plt.subplots(figsize=(7.0, 1.0 + 0.42 * len(names)))
    offsets = {"human": -0.22, "judge": 0.0, "ppi": 0.22}
    for k, kind in enumerate(ESTIMATE_KINDS):
        y = np.arange(len(names)) + offsets[kind]
        low = e.get(f"{kind}_low", e[kind])
        high = e.get(f"{kind}_high", e[kind])
        ax.errorbar(
            e[kind], y, xerr=error_bars(e[kind], low, high), fmt=MARKERS[k], color=colours[k], capsize=3,
            label=_ESTIMATE_NAMES[kind],
        )  # fmt: skip
    if v.simulated:
        truth = v.people_means["people"].to_numpy()
        for row, t in enumerate(truth):
            ax.plot([t, t], [row - 0.4, row + 0.4], **TRUTH_STYLE, label=_COLUMNS["truth"] if row == 0 else None)
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlabel(f"{kind_named(v.config.kind).measure} (95 % CI)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return done(fig)


def estimates_sentences(v: JudgeValidation) -> MySTText:
    """Whether the judge's labels narrowed anything (and what they are worth), and the SIMULATED truth's coverage."""
    e = v.estimates
    usable, ratio = _narrowing(v)
    if usable.empty:
        return myst(T("estimates.none"))
    narrower = _narrower(ratio)
    values = {
        "narrower": narrower,
        "systems": len(usable),
        "ratio": f"{float(np.nanmedian(ratio)):.2f}",
        "labelled": int(np.median(usable["n_labelled"])),
        "judged": int(np.median(usable["n_judged"])),
        "worth": f"{float(np.nanmedian(usable['effective_labels'])):.0f}",
    }
    if narrower == 0:
        key = "estimates.nothing"
    else:
        key = "estimates.narrower" if narrower == len(usable) else "estimates.some"
    sentences = [T(key, **values)]
    flat = e.loc[(e["n_labelled"] >= 2) & ~((e["human_high"] - e["human_low"]) > 0), "system"].tolist()
    if flat:
        sentences.append(T("estimates.zero_width", systems=and_join(flat), n=len(flat)))
    if v.simulated:
        truth = v.people_means.set_index("system")["people"]
        t = truth.reindex(usable["system"]).to_numpy()
        covered = {
            kind: int(((usable[f"{kind}_low"] <= t) & (t <= usable[f"{kind}_high"])).sum()) for kind in ("ppi", "human")
        }
        bias = float(np.nanmean(np.abs(usable["judge"].to_numpy() - t)))
        sentences.append(
            T(
                "estimates.truth_covered",
                ppi=covered["ppi"],
                human=covered["human"],
                systems=len(usable),
                bias=f"{bias:.2f}",
            )
        )
    return myst("\n\n".join(sentences))


def ranks_table(v: JudgeValidation, caption: str) -> Styler:
    """Each system's rank under the three estimates."""
    frame = v.ranks.rename(columns={f"{k}_rank": _ESTIMATE_NAMES[k] for k in ESTIMATE_KINDS})
    return captioned(_rename(frame), _whose(v, caption), precision=1)


def ranks_sentences(v: JudgeValidation) -> MySTText:
    """Kendall's tau between the rankings, and how many tests separate systems under each estimate."""
    tau = {(r["a"], r["b"]): r["tau"] for _, r in v.rank_agreement.iterrows()}
    systems = int(v.rank_agreement["systems"].iloc[0]) if len(v.rank_agreement) else 0

    def shown(x: float) -> str:
        return "n/a" if not np.isfinite(x) else f"{x:.2f}"

    human_ppi = shown(tau.get(("human", "ppi"), float("nan")))
    human_judge = shown(tau.get(("human", "judge"), float("nan")))
    separated = {k: int(c["decision"].isin(DECISIONS[:2]).sum()) for k, c in v.comparisons.items()}
    family = int(v.comparisons["ppi"]["family"].iloc[0]) if len(v.comparisons["ppi"]) else 0
    sentences = [
        f"Kendall's tau-b between the rankings: human-only vs prediction-powered {human_ppi}, human-only vs "
        f"judge-only {human_judge} ({systems} systems). With {systems} systems a tau rests on "
        f"{systems * (systems - 1) // 2} pairs: read the decisions below, which account for each estimate's "
        "uncertainty, before any ranking.",
        f"On the prediction-powered estimates {separated['ppi']} of {family} tests separate the systems after Holm's "
        f"correction; on the human-only ones {separated['human']}.",
    ]
    return myst("\n\n".join(sentences))


def comparisons_tables(v: JudgeValidation, caption: str) -> list[Styler]:
    """Chapter 7's decisions on the prediction-powered and the human-only estimates, one table each. ``caption``
    names ``{what}`` (what was compared: every two systems, or for duels each pair's win rate against the null),
    ``{estimate}`` and ``{family}`` (the tests' count), filled in here for each table."""
    out = []
    for name, frame in v.comparisons.items():
        if frame.empty:
            continue
        shown = pd.DataFrame(
            {
                "a": frame["a"],
                "b": frame["b"],
                "difference [simultaneous CI]": [
                    estimate_cell(d, lo, hi, digits=2)
                    for d, lo, hi in zip(frame["difference"], frame["low"], frame["high"], strict=True)
                ],
                "p (Holm)": frame["p_adjusted"].round(3),
                "decision": frame["decision"],
            }
        )
        what = f"each pair's win rate against {v.null:g}" if v.null is not None else "every two systems compared"
        named = caption.format(what=what, estimate=_ESTIMATE_NAMES[name], family=int(frame["family"].iloc[0]))
        out.append(captioned(shown, named, precision=3))
    return out


def curve_text(v: JudgeValidation) -> MySTText:
    """How Figure 8.3 is drawn: the sample sizes and repetitions of this run's configuration."""
    sizes = ", ".join(f"{f:g}x" for f in v.config.curve.fractions)
    return myst(
        f"Figure 8.3 redraws each system's labelled tasks (with replacement) at {sizes} of the sample's size, "
        f"{v.config.curve.reps} times each, and averages both intervals' widths. Where the solid line "
        "(prediction-powered) lies under the dashed one (human-only), the judge's labels are worth more people's; "
        "where they meet, they are worth none."
    )


def curve_figure(v: JudgeValidation) -> Figure:
    """CI width against labels per system: human-only dashed, prediction-powered solid, one colour per system."""
    c = v.curve
    if c.empty:
        return empty_figure("no labels-needed curve: no system has 2 labelled tasks and an unlabelled unit")
    systems = list(dict.fromkeys(c["system"]))
    colours = palette(len(systems))
    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    for k, system in enumerate(systems):
        part = c[c["system"] == system]
        style: dict[str, Any] = {"color": colours[k], "marker": MARKERS[k % len(MARKERS)]}
        ax.plot(part["n"], part["human_width"], linestyle="--", alpha=0.8, **style)
        ax.plot(part["n"], part["ppi_width"], linestyle="-", label=system, **style)
    ax.plot([], [], linestyle="--", color="0.3", label="human-only")
    ax.plot([], [], linestyle="-", color="0.3", label="prediction-powered")
    ax.set_xscale("log")
    ax.set_xlabel("human labels per system (log scale)")
    ax.set_ylabel("mean 95 % CI width")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    return done(fig)


def takeaways_items(v: JudgeValidation) -> list[str]:
    """The chapter's closing bullets, from this run's numbers."""
    judge, people, _ = _kappas(v)
    items = []
    if v.simulated:
        items.append(T("takeaways.simulated"))
    if small_model(v.judge_name):
        items.append(T("takeaways.small", judge=v.judge_name))
    if people:
        items.append(T("takeaways.agreement_people", cells="; ".join(with_name(e, 2) for e in people)))
    if judge is not None and judge.known:
        items.append(T("takeaways.agreement_judge", cell=estimate_cell(judge, digits=2), n=int(v.judge["n"].iloc[0])))
    usable, ratio = _narrowing(v)
    if not usable.empty:
        items.append(
            T(
                "takeaways.estimates",
                narrower=_narrower(ratio),
                systems=len(usable),
                ratio=f"{float(np.nanmedian(ratio)):.2f}",
            )
        )
    return items


def ratings_table(v: JudgeValidation, caption: str) -> Styler | MySTText:
    """The judge against the users' held-out ratings, or why there is nothing to compare. ``caption`` names
    ``{run}`` and ``{notebook}`` (whose ratings) and ``{interval}`` (how the CIs were computed), filled in here."""
    r = v.ratings
    if r is None:
        return myst(T("ratings.not_scores", kind=v.config.kind))
    if isinstance(r, str):
        return myst(T("ratings.why_not", why=r))
    if r.table.empty:
        return myst(T("ratings.why_not", why=r.why_not))
    t = r.table
    frame = pd.DataFrame(
        {
            "statistic": t["statistic"],
            "answer": t["what"],
            "estimate": [estimate_cell(Estimate.of_row(row), digits=2) for _, row in t.iterrows()],
            "n": t["n"].astype(int),
        }
    )
    interval = str(t["interval"].iloc[-1])
    return captioned(_rename(frame), caption.format(run=r.run, notebook=r.notebook, interval=interval), 0)


def ratings_sentences(v: JudgeValidation) -> MySTText:
    """What the rho's interval allows, per answer compared, then the notes and the caveat."""
    r = v.ratings
    if r is None or isinstance(r, str) or not r.compared:  # the table's cell said why
        return myst(T("ratings.why_not", why=r.why_not) if isinstance(r, RatingsComparison) and len(r.table) else "")
    sentences = []
    for _, row in r.table[r.table["statistic"].str.startswith("Spearman")].iterrows():
        rho = Estimate.of_row(row)
        what = str(row["what"]).split(" (")[0]
        key = _RATINGS_SIDES[side(rho, 0.0)]
        if key:  # an undefined rho: the result's notes say why
            sentences.append(T(key, n=int(row["n"]), what=what, rho=estimate_cell(rho, digits=2)))
    return myst("\n\n".join([*sentences, *r.notes, T("ratings.caveat")]))
