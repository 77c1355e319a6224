"""Chapter 7's tables, figures and sentences: they lay out the numbers
:mod:`recjudge_utils.experiments.your_recommenders` computed (every mean, CI, tau and count comes from there), and say
only what the CIs support (:mod:`recjudge_utils.reporting.claims`).

The notebook writes each table's caption and passes it in: as an f-string where it names the run's fields, with
``{name}`` fields this module fills in where it names numbers computed here (each function's docstring lists them).
Headers, cell words and fixed sentences are written here; the sentences the CIs and the run's state choose between
are ``text/your_recommenders.yaml``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from pandas.io.formats.style import Styler

from recjudge_utils.data import Dataset
from recjudge_utils.experiments.your_recommenders import OFFLINE, Recovery, YourRecommendersRun, cost_at_scale
from recjudge_utils.judge.records import AnswerHealth
from recjudge_utils.judge.usage import scaled
from recjudge_utils.lists import RecommendationLists
from recjudge_utils.metrics.estimate import Estimate
from recjudge_utils.metrics.numbers import number_or_nan
from recjudge_utils.protocols.context.saer import saer_variant
from recjudge_utils.protocols.saer import SaerPointwise
from recjudge_utils.reporting.answer_health import unanswerable_warning
from recjudge_utils.reporting.callouts import Callout, MySTText, myst
from recjudge_utils.reporting.cells import estimate_cell
from recjudge_utils.reporting.claims import leader, side
from recjudge_utils.reporting.figures import MARKERS, done, error_bars, palette
from recjudge_utils.reporting.judge_saw import JudgeUse, arena_use, judge_saw, saer_use, serendipity_use
from recjudge_utils.reporting.tables import captioned, rows_table
from recjudge_utils.reporting.text import chapter_text

__all__ = [
    "NAMES", "agreement_figure", "agreement_sentences", "baseline_section", "baseline_sentences", "baseline_table",
    "beyond_sentences", "beyond_table", "cost_table", "coverage_table", "curve_figure", "health_notes",
    "judge_saw_note", "lists_table",
    "missingness_sentences", "offline_table", "plan_text", "planning_table", "power_table", "q_table",
    "recovery_sentences", "recovery_table", "scale_table", "separation_table", "serendipity_table", "takeaways_items",
    "tau_table", "timings_text", "tournament_table", "unparsed_table", "verdict_figure", "verdict_table",
    "win_matrix",
]  # fmt: skip

T = chapter_text("your_recommenders")
#: each measure's name in tables, figures and sentences
NAMES = {
    "serendipity": "Serendipity (Avg.Score@k)",
    "arena": "Arena (share of points)",
    "saer": "SAER (label 0-2)",
    "precision": "Precision@k",
    "recall": "Recall@k",
    "ndcg": "NDCG@k",
    "precision_all_users": "Precision@k",
    "recall_all_users": "Recall@k",
    "ndcg_all_users": "NDCG@k",
    "arp": "popularity (ARP)",
    "novelty": "novelty (bits)",
    "ild": "intra-list diversity",
}
#: the measures' short names, for tables that name two measures per row
SHORT = {
    "serendipity": "Avg.Score",
    "arena": "Arena share",
    "saer": "SAER label",
    "precision": "P@k",
    "recall": "R@k",
    "ndcg": "NDCG@k",
}
#: the serendipity paper's three numbers, measure -> column header
_SERENDIPITY_COLUMNS = {"serendipity": "Avg.Score@k (1-5)", "p_ser": "P_ser@k", "n_ser": "N_ser@k"}
#: the claim the convention allows on a pair of rankings (the run's ``claim``), in the tau table's words
_TAU_CLAIMS = {
    "too few users": "none (fewer than 10 users)",
    "too few systems": "none (fewer than 4 systems)",
    "no tau": "none (no tau)",
    "equivalent": "equivalent rankings",
    "unreliable": "none (below the ceiling)",
    "agree": "agree",
    "disagree": "disagree",
    "unclear": "none (CI holds 0)",
}
#: a test's decision against the baseline, in the table's and the sentences' words
_DECISIONS = {
    "a higher": "higher",
    "b higher": "lower",
    "not separated": "no difference shown",
    "no decision": "no decision (n < 10)",
}
#: fewer judged users and no sentence claims anything from a bootstrap CI: too few distinct resamples (10 for 3 users)
_MIN_USERS_FOR_CLAIMS = 10


def _summary_cell(run: YourRecommendersRun, measure: str, system: str, users: int | None = None) -> str:
    """``mean [CI]``, with ``(n=..)`` when the users behind it are not ``users`` (the caption's); a judged measure
    without a value says so (never filled in), an offline one reads n/a."""
    part = run.summary[run.summary["measure"] == measure].set_index("system")
    r = part.loc[system] if system in part.index else pd.Series({"mean": np.nan, "n": 0})
    if Estimate.of(r["mean"]).known:
        cell = estimate_cell(Estimate.of_row(r, "mean", "low", "high"))
        return cell if users is not None and int(r["n"]) == users else f"{cell} (n={int(r['n'])})"
    return "n/a" if measure in OFFLINE else f"no parsed judgment (n={int(r['n'])})"


def lists_table(lists: RecommendationLists, caption: str) -> Styler:
    """The reader's report: one row per system, in words (a column not named here keeps its name); a column with one
    value for every system (several systems) moves into the caption, after ``caption``, so the table keeps to what
    differs and fits the page."""
    words = {"users": "users with a list", "ranked_by": "ranked by", "ties_broken": "score ties broken by item id",
             "short_lists": f"lists shorter than {lists.top_k}", "seen_items": "items already in training",
             "seen": "those items"}  # fmt: skip
    frame = lists.report().rename(columns=words)
    same = [c for c in frame.columns[1:] if len(frame) > 1 and frame[c].nunique(dropna=False) == 1]
    if same:
        caption += "; the same for every system: " + ", ".join(f"{c}: {frame[c].iloc[0]}" for c in same)
    return captioned(frame.drop(columns=same), caption, precision=0)


def plan_text(calls: dict[str, int], protocols: Sequence[str], n_systems: int, n_users: int) -> str:
    """What the judge is about to be asked, protocol by protocol, before any call."""
    parts = ", ".join(f"{calls[p]:,} {p}" for p in protocols)
    total = sum(calls[p] for p in protocols)
    return (
        f"**Before judging:** {n_systems} systems x {n_users} users; at most {parts} judge calls ({total:,} in all; "
        "serendipity judges each distinct (user, item) pair once, so lists that share items cost less, and answers "
        "already in the cache cost nothing)."
    )


def _system_table(run: YourRecommendersRun, headers: dict[str, str], caption: str, users: int | None = None) -> Styler:
    """One row per system, one :func:`_summary_cell` per measure (``headers``: measure -> column header)."""
    cells = {h: [_summary_cell(run, m, s, users) for s in run.sample.systems] for m, h in headers.items()}
    return captioned(pd.DataFrame({"system": run.sample.systems, **cells}), caption, nowrap_intervals=True)


def verdict_table(run: YourRecommendersRun, caption: str) -> Styler:
    """System x protocol over the judged users, every cell ``estimate [95% CI]`` (n shown only where it is not the
    judged users')."""
    return _system_table(run, {m: NAMES[m] for m in run.config.protocols}, caption, len(run.sample.users))


def offline_table(run: YourRecommendersRun, caption: str, over: str = "judged") -> Styler:
    """The offline metrics per system, over the judged users (``over="judged"``: the users the protocols have) or
    over every evaluation user with lists (``"all"``); ``caption`` names ``{users}``, their number, filled in here."""
    if over == "all":
        users = len(next(iter(run.offline_all.values()))) if run.offline_all else 0
        headers = {f"{m}_all_users": NAMES[m] for m in OFFLINE}
        return _system_table(run, headers, caption.format(users=users), users)
    users = len(run.sample.users)
    return _system_table(run, {m: NAMES[m] for m in OFFLINE}, caption.format(users=users), users)


def timings_text(run: YourRecommendersRun) -> str:
    """How long each step took, in words (never the raw dictionary)."""
    return "Time taken: " + ", ".join(f"{k} {v:.1f}" for k, v in run.timings.items()) + " (seconds)."


def serendipity_table(run: YourRecommendersRun, caption: str) -> Styler | MySTText:
    """The serendipity paper's Avg.Score@k (the protocol's ranking), P_ser@k and N_ser@k per system."""
    headers = _SERENDIPITY_COLUMNS
    if "serendipity" not in run.config.protocols or not run.summary["measure"].isin(list(headers)).any():
        return myst(T("serendipity.not_run"))
    # n in a cell only where it is not the judged users' (the caption says how many those are)
    return _system_table(run, headers, caption, len(run.sample.users))


def verdict_figure(run: YourRecommendersRun) -> Figure:
    """One panel per measure: each system's mean with its CI, systems in the same order in every panel."""
    measures, systems, y = run.measures, run.sample.systems, np.arange(len(run.sample.systems))
    cols = min(3, len(measures))
    rows = math.ceil(len(measures) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.3 * cols, 0.6 + 0.32 * len(systems) * rows), squeeze=False)
    for ax in axes.flat[len(measures) :]:
        ax.set_visible(False)
    for k, ax in enumerate(axes.flat[: len(measures)]):
        part = run.summary[run.summary["measure"] == measures[k]].set_index("system").reindex(systems)
        v = part["mean"].astype(float)
        ax.errorbar(v, y, xerr=error_bars(v, part["low"], part["high"]), fmt=MARKERS[k % len(MARKERS)],
                    color=palette(len(measures))[k], capsize=3)  # fmt: skip
        ax.set_yticks(y, systems if k % cols == 0 else [""] * len(systems))
        ax.invert_yaxis()
        ax.set_title(NAMES[measures[k]], fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    return done(fig)


def unparsed_table(run: YourRecommendersRun, caption: str, examples: int = 2) -> Styler | MySTText:
    """Per protocol and reason: the answers that could not be read (never filled in), with a few raw answers."""
    rows = [[r.protocol, f"{r.bad} of {r.total}", r.reason[:200] or "no reason given", " | ".join(r.raw) or "(none)"]
            for r in run.unparsed(examples).itertuples()]  # fmt: skip
    if not rows:
        return myst(T("unparsed.none"))
    return rows_table(caption, ["protocol", "answers", "why", "raw answers (first 160 characters)"], rows, precision=0)


def health_notes(run: YourRecommendersRun) -> list[Callout]:
    """The warning when no answer under any protocol could be read (nothing otherwise): the offline metrics stand."""
    health = AnswerHealth.of_frames(*run.judgments.values())
    question = "how the protocols rank your systems (the offline metrics need no judge)"
    return [unanswerable_warning(question, health)] if health.n and health.nothing_usable else []


def win_matrix(run: YourRecommendersRun, caption: str) -> Styler | MySTText:
    """Arena: the row system's share of points against the column system over the duels with a verdict (n)."""
    points, systems = run.duel_points(), run.sample.systems
    if points.empty:
        return myst(T("wins.none"))
    cells = pd.DataFrame([["-" if x == y else "" for y in systems] for x in systems], index=systems, columns=systems)
    for r in points.itertuples(index=False):
        cells.loc[r.x, r.y] = f"{r.share:.2f} (n={r.n})" if r.n else f"no verdict (n={r.duels})"
        cells.loc[r.y, r.x] = f"{1 - r.share:.2f} (n={r.n})" if r.n else cells.loc[r.x, r.y]
    return captioned(cells.rename_axis("").reset_index(), caption)


def q_table(run: YourRecommendersRun, caption: str) -> Styler | MySTText:
    """Arena in the paper's terms: per pair, Win/Tie/Lose %, Q with its CI, beside the share of points the Arena
    column averages (the two can order systems differently: the caption says so)."""
    q = run.duel_q()
    if q.empty:
        return myst(T("wins.none"))
    rows = []
    for (x, y), pair in q.groupby(["x", "y"], sort=False):
        e = {r["measure"]: Estimate.of_row(r) for r in pair.to_dict("records")}
        wtl = " / ".join(f"{e[m].value:.0f}" for m in ("win", "tie", "lose"))
        share = f"{e['share'].value:.2f}" if e["share"].known else "-"
        rows.append([x, y, int(pair["n"].iloc[0]), wtl, estimate_cell(e["Q"], digits=2), share])
    columns = ["system", "against", "duels", "win / tie / lose %", "Q [95% CI]", "share of points"]
    return rows_table(caption, columns, rows, precision=0)


def tournament_table(run: YourRecommendersRun, caption: str) -> Styler | MySTText:
    """The Arena's duels as one ranking (Davidson's Bradley-Terry with ties): rank and log strength per system.
    ``caption`` names ``{nu}`` (the fitted tie parameter) and ``{n}`` (the duels with a verdict), filled in here."""
    fit = run.tournament()
    if fit.empty:
        return myst(T("wins.none"))
    if not fit["log_strength"].notna().any():
        return myst(T("tournament.none"))
    if fit.attrs["ties"] == fit.attrs["n"]:  # nu grows without bound, and every strength is the same
        return myst(T("tournament.ties_only", n=fit.attrs["n"]))
    # rounded before the sign is written: no "-0.00"
    rows = [[int(r.rank), r.system, f"{round(r.log_strength, 2) + 0.0:+.2f}"] for r in fit.itertuples(index=False)]
    named = caption.format(nu=f"{fit.attrs['nu']:.2f}", n=fit.attrs["n"])
    return rows_table(named, ["rank", "system", "log strength"], rows, precision=0)


def missingness_sentences(run: YourRecommendersRun) -> list[str]:
    """Per protocol with unparsed answers: whether their share differs across systems, from the test's p-value."""
    out = []
    for r in run.missingness().itertuples(index=False):
        if r.unparsed == 0:
            continue
        words = {"protocol": r.protocol, "unparsed": r.unparsed, "total": r.total, "method": r.method}
        if not math.isfinite(r.p):
            out.append(T("missing.untestable", **words))
        else:
            key = "missing.differs" if r.p < 0.05 else "missing.even"
            out.append(T(key, p=f"{r.p:.3f}", statistic=f"{r.statistic:.1f}", dof=r.dof, **words))
    return out


def tau_table(run: YourRecommendersRun, caption: str) -> Styler:
    """Kendall's tau between every two measures' system rankings, with the bootstrap CI over users, tau_AP, the
    reliability ceiling and the claim the convention allows. ``caption`` names ``{users}``, ``{systems}``, ``{kept}``
    (the fewest resamples with a tau) and ``{boot}`` (the resamples drawn), filled in here."""
    rows = []
    for r in run.taus.to_dict("records"):
        ceiling = min(number_or_nan(r.get("reliability_a")), number_or_nan(r.get("reliability_b")))
        tau_ap = number_or_nan(r.get("tau_ap"))
        decided = number_or_nan(r.get("tau_decided"))
        on_decided = f"{decided:.2f} ({int(r['pairs_decided'])})" if math.isfinite(decided) else "-"
        rows.append(
            [SHORT[r["a"]], SHORT[r["b"]], _tau_cell(r, "n/a (a ranking is constant or missing)"),
             f"{tau_ap:.2f}" if math.isfinite(tau_ap) else "-", on_decided,
             f"{ceiling:.2f}" if math.isfinite(ceiling) else "-", _TAU_CLAIMS.get(str(r.get("claim")), "-")]
        )  # fmt: skip
    systems = int(run.taus["n_systems"].max()) if len(run.taus) else 0
    users = int(run.taus["n_users"].max()) if len(run.taus) else 0
    kept = int(run.taus["n_boot"].min()) if len(run.taus) else 0
    columns = ["measure", "against", "Kendall tau [95% CI]", "tau_AP", "on decided pairs", "ceiling",
               "what it supports"]  # fmt: skip
    named = caption.format(users=users, systems=systems, kept=kept, boot=run.config.n_boot)
    return rows_table(named, columns, rows, precision=0)


def _tau_cell(r: Mapping[str, Any], na: str) -> str:
    """A tau with its CI, or the words ``na`` when tau is undefined (a measure constant over the systems)."""
    return estimate_cell(Estimate.of_row(r, "tau", "low", "high"), digits=2) if pd.notna(r["tau"]) else na


def agreement_figure(run: YourRecommendersRun) -> Figure:
    """The tau table as a heat map (blank: not computable)."""
    names, values = [NAMES[m] for m in run.measures], run.tau_matrix().to_numpy(dtype=float)
    fig, ax = plt.subplots(figsize=(6.4, 5.0))
    image = ax.imshow(values, cmap="cividis", vmin=-1, vmax=1)
    ax.set_xticks(range(len(names)), names, rotation=35, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    for (i, j), v in np.ndenumerate(values):
        ax.text(j, i, "n/a" if np.isnan(v) else f"{v:.2f}", ha="center", va="center", fontsize=8,
                color="white" if v < 0.2 else "black")  # fmt: skip
    fig.colorbar(image, ax=ax, label="Kendall tau")
    return done(fig)


def separation_table(run: YourRecommendersRun, caption: str) -> Styler:
    """Per measure: how many pairs of systems the corrected tests separate, and which (the higher first); a measure
    whose pairs have too few users says that no decision is made."""
    rows = []
    for m, r in run.separated_counts().iterrows():
        undecided = int(r.get("undecided", 0) or 0)
        count = (f"no decision ({undecided} of {r.pairs} pairs have fewer than 10 users)" if undecided
                 else f"{r.separated} of {r.pairs}")  # fmt: skip
        which = "; ".join(f"{h} > {low}" for h, low in r.which) or "none"
        rows.append([NAMES[str(m)], count, which])
    return rows_table(caption, ["measure", "pairs separated", "which (higher first)"], rows, precision=0)


def baseline_table(run: YourRecommendersRun, caption: str) -> Styler | MySTText:
    """The headline when ``arena_pairs`` names a baseline: every other system against it under every measure, one
    row per (system, measure); below ten judged users, the sentence saying no decision is made and why. ``caption``
    names ``{baseline}``, ``{users}``, ``{level}`` (the simultaneous intervals' level, %) and ``{family}`` (the
    comparisons of a measure), filled in here."""
    tests, baseline = run.baseline_tests, run.config.arena_pairs
    if tests.empty:
        return myst("")
    if len(run.sample.users) < _MIN_USERS_FOR_CLAIMS:
        return myst(T("tests.none", users=len(run.sample.users), baseline=baseline))
    users = len(run.sample.users)

    def difference(r: Any) -> str:
        cell = estimate_cell(Estimate.of(r.difference, r.low, r.high), digits=3)
        return cell if int(r.n) == users else f"{cell} (n={int(r.n)})"

    rows = [
        [r.a, NAMES[r.measure], difference(r), estimate_cell(Estimate.of(r.d_z, r.dz_low, r.dz_high), digits=2),
         f"{r.p_adjusted:.3f}", _DECISIONS[r.decision]]
        for r in tests.sort_values(["a"], kind="stable").itertuples(index=False)
    ]  # fmt: skip
    family = int(tests["family"].iloc[0])
    level = f"{100 * (1 - 0.05 / family):.1f}"
    columns = ["system", "measure", "difference [CI]", "d_z [95% CI]", "adjusted p", "decision"]
    named = caption.format(baseline=baseline, users=users, level=level, family=family)
    return rows_table(named, columns, rows, precision=3)


def baseline_section(run: YourRecommendersRun, caption: str) -> list[Styler | MySTText]:
    """The headline when ``arena_pairs`` names a baseline, ready to display: its table (:func:`baseline_table`'s
    ``caption``) and one sentence per system, or below ten judged users the one sentence saying that no decision is
    made and why; nothing without a baseline."""
    if run.baseline_tests.empty:
        return []
    table = baseline_table(run, caption)
    if isinstance(table, MySTText):
        return [table]
    return [table, myst("\n".join(f"* {s}" for s in baseline_sentences(run)))]


def baseline_sentences(run: YourRecommendersRun) -> list[str]:
    """One sentence per system against the baseline: the measures under which it is higher, lower, or not shown to
    differ (corrected); nothing without a baseline, the no-decision sentence below ten users."""
    tests, baseline = run.baseline_tests, run.config.arena_pairs
    if tests.empty:
        return []
    if len(run.sample.users) < _MIN_USERS_FOR_CLAIMS:
        return [T("tests.none", users=len(run.sample.users), baseline=baseline)]
    out = []
    for system, part in tests.groupby("a", sort=False):
        parts = [
            T("tests.part", decision=_DECISIONS[str(d)], measures=", ".join(NAMES[m] for m in grp["measure"]))
            for d, grp in part.groupby("decision", sort=False)
        ]
        out.append(T("tests.sentence", system=system, baseline=baseline, parts="; ".join(parts)))
    return out


def power_table(run: YourRecommendersRun, caption: str) -> Styler:
    """Per measure: discriminative power, swap rate and split-half reliability over the judged users."""
    rows = [
        [NAMES[r.measure], f"{r.separated} of {r.pairs}",
         f"{r.swap_rate:.2f}" if pd.notna(r.swap_rate) else "-",
         estimate_cell(Estimate.of(r.reliability, r.reliability_low, r.reliability_high), digits=2), r.users]
        for r in run.power.itertuples(index=False)
    ]  # fmt: skip
    columns = ["measure", "pairs separated", "swap rate", "split-half reliability [2.5-97.5%]", "users"]
    return rows_table(caption, columns, rows, precision=0)


def curve_figure(run: YourRecommendersRun) -> Figure | MySTText:
    """The users-needed curves: share of pairs separated (corrected) and swap rate against users, per measure."""
    curve = run.curve
    if curve.empty:
        return myst(T("power.no_curve"))
    measures = [m for m in run.measures if m in set(curve["measure"])]
    # one x axis for both panels: the swap rate needs two disjoint subsets (2n users), so it may stop early
    fig, (left, right) = plt.subplots(1, 2, figsize=(7.6, 3.0), sharex=True)
    colours = palette(len(measures))
    for k, m in enumerate(measures):
        part = curve[curve["measure"] == m]
        style = {"marker": MARKERS[k % len(MARKERS)], "color": colours[k], "label": NAMES[m]}
        left.plot(part["users"], part["power"], **style)
        right.plot(part["users"], part["swap_rate"], **style)
    for ax, title in ((left, "Pairs separated (corrected) against users"),
                      (right, "Swap rate between two disjoint sets of users")):  # fmt: skip
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("judged users in a random subset", fontsize=8)
        ax.grid(alpha=0.3)
    left.set_ylim(-0.03, 1.03)
    right.legend(fontsize=7, loc="upper right")
    return done(fig)


def planning_table(
    run: YourRecommendersRun, caption: str, prices: Mapping[str, Mapping[str, float]] | None = None
) -> Styler | MySTText:
    """Per measure: the users a rerun needs to separate half the pairs and every pair at 80 % power after the
    correction; for a protocol, what judging the first number of users would cost at each model's list price in
    ``prices`` (:func:`~recjudge_utils.experiments.your_recommenders.cost_at_scale`: this run's tokens per judgment,
    every pair in the Arena), or at this run's own cost per judged user when no prices are given."""
    plan = run.plan
    if plan.empty:
        return myst(T("power.no_curve"))
    usage = run.usage().set_index("protocol") if run.judgments else pd.DataFrame()
    users_here = max(len(run.sample.users), 1)
    models = list(prices or {}) or ["at this run's cost"]
    rows = []
    for m in run.measures:
        needed = plan.loc[plan["measure"] == m, "users_needed"].to_numpy(dtype=float)
        if not len(needed):
            continue
        # the users at which half the pairs (the ceil(m/2)-th smallest need) and every pair reach 80 % power; an
        # unknown need (no spread in the differences) counts as never
        ordered = np.sort(np.where(np.isnan(needed), np.inf, needed))
        half, every = float(ordered[math.ceil(len(ordered) / 2) - 1]), float(ordered[-1])
        shown = ["never" if not math.isfinite(v) else f"{math.ceil(v):,}" for v in (half, every)]
        costs = ["-"] * len(models)
        if m in usage.index and math.isfinite(half):
            if prices:
                at = cost_at_scale(run, math.ceil(half), prices=prices).set_index("protocol")
                costs = [f"{float(at.loc[m, f'US$ {model}, {math.ceil(half)} users']):,.2f}" for model in models]
            else:
                costs = [f"{scaled(float(usage.loc[m, 'usd']), users_here, half):,.2f}"]
        rows.append([NAMES[m], *shown, *costs])
    headers = ["measure", "users for half the pairs", "users for every pair", *(f"US$ {model}" for model in models)]
    return rows_table(caption, headers, rows, precision=0)


def beyond_table(run: YourRecommendersRun, caption: str) -> Styler | MySTText:
    """Per system: catalogue coverage and Gini of exposure, and the per-user means of ARP, novelty and ILD.
    ``caption`` names ``{users}`` (the judged users) and ``{catalogue}`` (the training items), filled in here."""
    if run.beyond.empty:
        return myst("")
    means = run.summary.set_index(["measure", "system"])["mean"]
    rows = []
    for r in run.beyond.itertuples(index=False):
        values = [means.get((m, r.system), math.nan) for m in ("arp", "novelty", "ild")]
        rows.append([r.system, f"{r.coverage:.3f}", f"{r.gini:.3f}", *(f"{v:.2f}" for v in values)])
    catalogue = int(run.beyond.attrs.get("catalogue", 0))
    users = len(run.sample.users)
    columns = ["system", "catalogue coverage", "Gini of exposure", "popularity (ARP)", "novelty (bits)",
               "intra-list diversity"]  # fmt: skip
    return rows_table(caption.format(users=users, catalogue=f"{catalogue:,}"), columns, rows, precision=2)


def beyond_sentences(run: YourRecommendersRun) -> list[str]:
    """Whether the judge's item scores follow item popularity, from the regression's CI."""
    fit = run.popularity_fit
    if fit is None:
        return []
    if not fit.known:
        return [T("beyond.popularity_nothing", n=fit.n)]
    verdicts = {"above": "beyond.popularity_above", "below": "beyond.popularity_below",
                "contains": "beyond.popularity_contains", "none": "beyond.popularity_none"}  # fmt: skip
    verdict = T(verdicts[side(fit, 0.0)])
    return [T("beyond.popularity", n=fit.n, users=fit.users, cell=estimate_cell(fit, digits=3), verdict=verdict)]


def cost_table(run: YourRecommendersRun, caption: str) -> Styler:
    """Per protocol: this run's judgments (parsed), paid calls, tokens and dollars spent."""
    rows = [
        [u.protocol, f"{u.judgments:,} ({u.parsed:,})", f"{u.api_calls:,}",
         f"{u.prompt_tokens:,} / {u.completion_tokens:,}",
         f"{u.usd:.4f}" if pd.notna(u.usd) else "unknown price"] for u in run.usage().itertuples()
    ]  # fmt: skip
    columns = ["protocol", "judgments (parsed)", "paid calls", "tokens in / out", "US$ spent"]
    return rows_table(caption, columns, rows)


def scale_table(at_scale: pd.DataFrame, caption: str) -> Styler | str:
    """The estimate at scale (:func:`~recjudge_utils.experiments.your_recommenders.cost_at_scale`), in words."""
    if at_scale.empty:
        return T("cost.nothing_to_scale")
    shown = at_scale.drop(columns=["judgments here"])
    for col in [c for c in shown.columns if c.startswith(("US$ ", "tokens", "judgments,"))]:
        shown[col] = shown[col].map(("{:,.2f}" if col.startswith("US$ ") else "{:,.0f}").format)
    return captioned(shown, caption)


#: the run's claim on a pair of rankings -> its sentence (text keys); any other claim reads as unclear
_AGREEMENT_CLAIMS = {"equivalent": "agreement.equivalent", "agree": "agreement.agree", "disagree": "agreement.disagree",
                     "unreliable": "agreement.unreliable", "unclear": "agreement.unclear"}  # fmt: skip


def agreement_sentences(run: YourRecommendersRun) -> list[str]:
    """Per pair of protocols, and per protocol against Precision@k: only what the convention allows (the run's
    ``claim``: no claim below 10 users or 4 systems, "equivalent" only from a CI above 0.9, agree / disagree only
    from a CI excluding 0 with both measures reliable)."""
    protocols, out = run.config.protocols, []
    for r in run.taus.to_dict("records"):
        if r["a"] not in protocols or (r["b"] not in protocols and r["b"] != "precision"):
            continue
        tau = Estimate.of_row(r, "tau", "low", "high")
        claim = str(r.get("claim", ""))
        if not tau.known:
            key = "agreement.no_tau"
        elif r["n_users"] < _MIN_USERS_FOR_CLAIMS or claim == "too few users":
            key = "agreement.few"
        elif claim == "too few systems":
            key = "agreement.few_systems"
        else:
            key = _AGREEMENT_CLAIMS.get(claim, "agreement.unclear")
        ceiling = min(number_or_nan(r.get("reliability_a")), number_or_nan(r.get("reliability_b")))
        words = {"a": NAMES[r["a"]], "b": NAMES[r["b"]], "tau": f"{r['tau']:.2f}", "cell": estimate_cell(tau, digits=2),
                 "users": r["n_users"], "systems": r.get("n_systems"), "ceiling": f"{ceiling:.2f}"}  # fmt: skip
        out.append(T(key, resamples=r.get("resamples"), **words))
    return out


def recovery_table(recovery: Recovery, caption: str) -> Styler:
    """The simulated judge's section: each protocol's noisy ranking against its truth and against Precision@k.
    ``caption`` names ``{model}`` (the error model's nonzero parameters), filled in here."""
    rows = [[NAMES[r["protocol"]], r["against"], _tau_cell(r, "n/a"), r["n_users"]]
            for r in recovery.taus.to_dict("records")]  # fmt: skip
    model = ", ".join(f"{k} {v:g}" for k, v in recovery.error_model.items() if v)
    columns = ["protocol", "against", "Kendall tau [95% CI]", "users"]
    return rows_table(caption.format(model=model), columns, rows, precision=0)


def coverage_table(recovery: Recovery, caption: str) -> Styler | MySTText:
    """The tau interval's coverage measured in this run (:func:`~recjudge_utils.experiments.your_recommenders.
    tau_coverage`): per protocol and subset size, the mean tau-hat and how often its CI holds the tau of all users.
    ``caption`` names ``{users}`` (the simulated users, the population), filled in here."""
    cov = recovery.coverage
    if cov.empty:
        return myst(T("coverage.none"))
    rows = [
        [NAMES[r.protocol], r.users, f"{r.target:.2f}" if pd.notna(r.target) else "-",
         f"{r.mean_tau:.2f}" if pd.notna(r.mean_tau) else "-",
         f"{100 * r.coverage:.0f}% of {r.draws}" if r.draws else "-"]
        for r in cov.itertuples(index=False)
    ]  # fmt: skip
    columns = ["protocol", "users in a subset", "tau, all users", "mean tau, subsets", "CI holds it"]
    return rows_table(caption.format(users=len(recovery.perfect.sample.users)), columns, rows, precision=0)


def recovery_sentences(recovery: Recovery) -> list[str]:
    """Which protocol recovers its truth best, said only when the CIs do not overlap (else that none can be told)."""
    own = recovery.taus[recovery.taus["against"].str.startswith("its own")]
    found = [e for r in own.itertuples() if (e := Estimate.of(r.tau, r.low, r.high, NAMES[r.protocol])).has_ci]
    lead = leader(found)
    if lead is None:
        return [T("recovery.none")]
    tied = [e for e in found if e.value >= lead.top.value - 1e-9]
    if len(tied) > 1:
        return [T("recovery.tied", names=" and ".join(e.name for e in tied), tau=f"{tied[0].value:.2f}")]
    best = T("recovery.best", name=lead.top.name, cell=estimate_cell(lead.top, digits=2))
    key, named = ("recovery.clear", lead.others) if lead.clear else ("recovery.overlap", lead.overlapping or ())
    return [T(key, best=best, names=", ".join(e.name for e in found if e in named))]


def takeaways_items(run: YourRecommendersRun) -> list[str]:
    """The chapter's takeaways, computed from this run: what parsed, what the corrected tests separate (or that
    nothing is decided below ten users), every system against the baseline, and the agreement claims."""
    usage, counts = run.usage()[["parsed", "judgments", "protocol"]], run.separated_counts()
    parsed = ", ".join(T("takeaways.parsed_part", **r) for r in usage.to_dict("records"))
    said = [T("takeaways.parsed", judge=run.judge_name, parsed=parsed)]
    users = len(run.sample.users)
    if users < _MIN_USERS_FOR_CLAIMS:
        said.append(T("takeaways.undecided", users=users))
    else:
        separated = "; ".join(T("takeaways.separated_part", name=NAMES[str(m)], n=n) for m, n in
                              counts["separated"].items())  # fmt: skip
        said.append(T("takeaways.separated", counts=separated, pairs=run.system_pairs, users=users))
    if users >= _MIN_USERS_FOR_CLAIMS:
        said += baseline_sentences(run)
    return [*said, *agreement_sentences(run)[:3]]


def judge_saw_note(run: YourRecommendersRun, dataset: Dataset) -> Callout:
    """What the judge saw: each protocol's prompts (SAER's pointwise prompt in the set the dataset's words choose),
    the dataset's domain words and the item fields every protocol showed."""
    items = dataset.items
    uses: list[JudgeUse] = []
    for protocol in run.config.protocols:
        if protocol == "serendipity":
            uses.append(serendipity_use([run.config.template], items, dataset))
        elif protocol == "arena":
            uses.append(arena_use(items, dataset))
        else:
            variant = saer_variant(dataset.domain)
            uses.append(saer_use(variant, {"pointwise": [SaerPointwise(variant).version]}, items, dataset))
    return judge_saw(uses, dataset.domain)
