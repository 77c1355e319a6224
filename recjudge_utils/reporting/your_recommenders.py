"""Chapter 7's tables, figures and sentences, in the words of ``text/your_recommenders.yaml``: they lay out the numbers
:mod:`recjudge_utils.experiments.your_recommenders` computed (every mean, CI, tau and count comes from there), and say
only what the CIs support (:mod:`recjudge_utils.reporting.claims`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from pandas.io.formats.style import Styler

from recjudge_utils.experiments.your_recommenders import OFFLINE, Recovery, YourRecommendersRun
from recjudge_utils.judge.records import AnswerHealth
from recjudge_utils.lists import RecommendationLists
from recjudge_utils.reporting.answer_health import unanswerable_warning
from recjudge_utils.reporting.callouts import Callout
from recjudge_utils.reporting.claims import Estimate, leader, side
from recjudge_utils.reporting.figures import MARKERS, done, error_bars, palette
from recjudge_utils.reporting.tables import captioned
from recjudge_utils.reporting.text import chapter_text

__all__ = [
    "NAMES", "agreement_figure", "agreement_sentences", "cost_table", "health_notes", "lists_table", "plan_text",
    "recovery_sentences", "recovery_table", "scale_table", "separation_table", "serendipity_table", "takeaways_items",
    "tau_table", "unparsed_table", "verdict_figure", "verdict_table", "win_matrix",
]  # fmt: skip

T = chapter_text("your_recommenders")
NAMES: dict[str, str] = T.raw("names")
#: fewer judged users and no sentence claims anything from a bootstrap CI: too few distinct resamples (10 for 3 users)
_MIN_USERS_FOR_CLAIMS = 10


def _table(key: str, rows: Sequence[Sequence[object]], precision: int = 1, **values: object) -> Styler:
    """``rows`` under the headers ``<key>.columns``, captioned ``<key>.caption``."""
    return captioned(pd.DataFrame(rows, columns=T.raw(f"{key}.columns")), T(f"{key}.caption", **values), precision)


def _cell(run: YourRecommendersRun, measure: str, system: str) -> str:
    """``mean [CI] (n=..)``; a judged measure without a value says so (never filled in), an offline one reads n/a."""
    part = run.summary[run.summary["measure"] == measure].set_index("system")
    r = part.loc[system] if system in part.index else pd.Series({"mean": np.nan, "n": 0})
    if Estimate.of(r["mean"]).known:
        return T("cells.estimate", cell=Estimate.of(r["mean"], r["low"], r["high"]).cell(), n=int(r["n"]))
    return T("cells.na") if measure in OFFLINE else T("cells.no_parsed", n=int(r["n"]))


def _tau(r: Any, na: str) -> str:
    return Estimate.of(r.tau, r.low, r.high).cell(2) if pd.notna(r.tau) else T(na)


def lists_table(lists: RecommendationLists) -> Styler:
    """The reader's report: one row per system, in words."""
    words = {c: T(f"lists.columns.{c}", k=lists.top_k) for c in T.raw("lists.columns")}
    return captioned(lists.report().rename(columns=words), T("lists.caption", k=lists.top_k), precision=0)


def plan_text(calls: dict[str, int], protocols: Sequence[str], n_systems: int, n_users: int) -> str:
    """What the judge is about to be asked, protocol by protocol, before any call."""
    parts = ", ".join(f"{calls[p]:,} {p}" for p in protocols)
    return T("plan", systems=n_systems, users=n_users, parts=parts, total=f"{sum(calls[p] for p in protocols):,}")


def _system_table(run: YourRecommendersRun, headers: dict[str, str], caption: str) -> Styler:
    """One row per system, one :func:`_cell` per measure (``headers``: measure -> column header)."""
    cells = {h: [_cell(run, m, s) for s in run.panel.systems] for m, h in headers.items()}
    return captioned(pd.DataFrame({"system": run.panel.systems, **cells}), caption)


def verdict_table(run: YourRecommendersRun) -> Styler:
    """System x measure, every cell ``estimate [95% CI] (n users)``; the protocols first, then the offline metrics."""
    caption = T("verdicts.caption", judge=run.judge_name, users=len(run.panel.users))
    return _system_table(run, {m: NAMES[m] for m in run.measures}, caption)


def serendipity_table(run: YourRecommendersRun) -> Styler | str:
    """The serendipity paper's Avg.Score@k (the protocol's ranking), P_ser@k and N_ser@k per system."""
    headers: dict[str, str] = T.raw("serendipity.columns")
    if "serendipity" not in run.config.protocols or not run.summary["measure"].isin(list(headers)).any():
        return T("serendipity.not_run")
    return _system_table(run, headers, T("serendipity.caption"))


def verdict_figure(run: YourRecommendersRun) -> Figure:
    """One panel per measure: each system's mean with its CI, systems in the same order in every panel."""
    measures, systems, y = run.measures, run.panel.systems, np.arange(len(run.panel.systems))
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


def unparsed_table(run: YourRecommendersRun, examples: int = 2) -> Styler | str:
    """Per protocol and reason: the answers that could not be read (never filled in), with a few raw answers."""
    rows = [[r.protocol, T("unparsed.answers", bad=r.bad, total=r.total), r.reason[:200] or T("unparsed.no_reason"),
             " | ".join(r.raw) or T("unparsed.no_raw")] for r in run.unparsed(examples).itertuples()]  # fmt: skip
    return _table("unparsed", rows, precision=0) if rows else T("unparsed.none")


def health_notes(run: YourRecommendersRun) -> list[Callout]:
    """The warning when no answer under any protocol could be read (nothing otherwise): the offline metrics stand."""
    health = AnswerHealth.of_frames(*run.judgments.values())
    return [unanswerable_warning(T("health_question"), health)] if health.n and health.nothing_usable else []


def win_matrix(run: YourRecommendersRun) -> Styler | str:
    """Arena: the row system's share of points against the column system over the duels with a verdict (n)."""
    points, systems = run.duel_points(), run.panel.systems
    if points.empty:
        return T("wins.none")
    cells = pd.DataFrame([["-" if x == y else "" for y in systems] for x in systems], index=systems, columns=systems)
    for r in points.itertuples(index=False):
        cells.loc[r.x, r.y] = T("wins.cell", share=f"{r.share:.2f}", n=r.n) if r.n else T("wins.no_verdict", n=r.duels)
        cells.loc[r.y, r.x] = T("wins.cell", share=f"{1 - r.share:.2f}", n=r.n) if r.n else cells.loc[r.x, r.y]
    return captioned(cells.rename_axis("").reset_index(), T("wins.caption"))


def tau_table(run: YourRecommendersRun) -> Styler:
    """Kendall's tau between every two measures' system rankings, with the bootstrap CI over users."""
    rows = [[NAMES[r.a], NAMES[r.b], _tau(r, "taus.na"), r.n_systems, r.n_users] for r in run.taus.itertuples()]
    return _table("taus", rows, precision=0)


def agreement_figure(run: YourRecommendersRun) -> Figure:
    """The tau table as a heat map (blank: not computable)."""
    names, values = [NAMES[m] for m in run.measures], run.tau_matrix().to_numpy(dtype=float)
    fig, ax = plt.subplots(figsize=(6.4, 5.0))
    image = ax.imshow(values, cmap="cividis", vmin=-1, vmax=1)
    ax.set_xticks(range(len(names)), names, rotation=35, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    for (i, j), v in np.ndenumerate(values):
        ax.text(j, i, T("taus.na_cell") if np.isnan(v) else f"{v:.2f}", ha="center", va="center", fontsize=8,
                color="white" if v < 0.2 else "black")  # fmt: skip
    fig.colorbar(image, ax=ax, label=T("taus.colorbar"))
    return done(fig)


def separation_table(run: YourRecommendersRun) -> Styler:
    """Per measure: how many pairs of systems its CIs separate, and which (the higher first)."""
    rows = [
        [NAMES[m], T("separation.count", separated=r.separated, pairs=r.pairs),
         "; ".join(T("separation.higher", higher=h, lower=low) for h, low in r.which) or T("separation.none")]
        for m, r in run.separated_counts().iterrows()
    ]  # fmt: skip
    return _table("separation", rows, precision=0)


def cost_table(run: YourRecommendersRun) -> Styler:
    """Per protocol: this run's judgments (parsed), paid calls, tokens and dollars spent."""
    rows = [
        [u.protocol, T("cost.judgments", judgments=f"{u.judgments:,}", parsed=f"{u.parsed:,}"), f"{u.api_calls:,}",
         T("cost.tokens", tokens_in=f"{u.prompt_tokens:,}", tokens_out=f"{u.completion_tokens:,}"),
         f"{u.usd:.4f}" if pd.notna(u.usd) else T("cost.unknown_price")] for u in run.usage().itertuples()
    ]  # fmt: skip
    return _table("cost", rows, judge=run.judge_name)


def scale_table(at_scale: pd.DataFrame) -> Styler | str:
    """The estimate at scale (:func:`~recjudge_utils.experiments.your_recommenders.cost_at_scale`), in words."""
    if at_scale.empty:
        return T("cost.nothing_to_scale")
    shown = at_scale.drop(columns=["judgments here"])
    for col in [c for c in shown.columns if c.startswith(("US$ ", "tokens", "judgments,"))]:
        shown[col] = shown[col].map(("{:,.2f}" if col.startswith("US$ ") else "{:,.0f}").format)
    return captioned(shown, T("cost.scale_caption"))


def agreement_sentences(run: YourRecommendersRun) -> list[str]:
    """Per pair of protocols, and per protocol against Precision@k: only what the CI of tau supports."""
    protocols, out = run.config.protocols, []
    for r in run.taus.itertuples(index=False):
        if r.a not in protocols or (r.b not in protocols and r.b != "precision"):
            continue
        tau = Estimate.of(r.tau, r.low, r.high)
        key = "no_tau" if not tau.known else "few" if r.n_users < _MIN_USERS_FOR_CLAIMS else side(tau, 0.0)
        words = {"a": NAMES[r.a], "b": NAMES[r.b], "tau": f"{r.tau:.2f}", "cell": tau.cell(2), "users": r.n_users}
        out.append(T(f"agreement.{key}", resamples=r.resamples, **words))
    return out


def recovery_table(recovery: Recovery) -> Styler:
    """The simulated judge's section: each protocol's noisy ranking against its truth and against Precision@k."""
    rows = [[NAMES[r.protocol], r.against, _tau(r, "recovery.na"), r.n_users] for r in recovery.taus.itertuples()]
    model = ", ".join(f"{k} {v:g}" for k, v in recovery.error_model.items() if v)
    return _table("recovery", rows, precision=0, model=model)


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
    best = T("recovery.best", name=lead.top.name, cell=lead.top.cell(2))
    key, named = ("clear", lead.others) if lead.clear else ("overlap", lead.overlapping or ())
    return [T(f"recovery.{key}", best=best, names=", ".join(e.name for e in found if e in named))]


def takeaways_items(run: YourRecommendersRun) -> list[str]:
    """The chapter's takeaways, computed from this run."""
    usage, counts = run.usage()[["parsed", "judgments", "protocol"]], run.separated_counts()["separated"]
    parsed = ", ".join(T("takeaways.parsed_part", **r) for r in usage.to_dict("records"))
    separated = "; ".join(T("takeaways.separated_part", name=NAMES[m], n=n) for m, n in counts.items())
    said = T("takeaways.parsed", judge=run.judge_name, parsed=parsed)
    return [said, T("takeaways.separated", counts=separated, pairs=run.system_pairs), *agreement_sentences(run)[:3]]
