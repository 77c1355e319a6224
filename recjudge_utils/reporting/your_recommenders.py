"""Chapter 7's tables, figures and sentences: lays out the numbers :mod:`recjudge_utils.experiments.your_recommenders`
computed (every mean, CI and tau comes from there), and says in words only what their CIs support."""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from pandas.io.formats.style import Styler

from recjudge_utils.experiments.your_recommenders import Recovery, YourRecommendersRun
from recjudge_utils.lists import RecommendationLists
from recjudge_utils.reporting.answer_health import AnswerHealth, unanswerable_warning
from recjudge_utils.reporting.callouts import Callout
from recjudge_utils.reporting.display import captioned, error_bars, estimate_cell
from recjudge_utils.reporting.figures import MARKERS, palette

__all__ = [
    "agreement_figure",
    "agreement_sentences",
    "cost_table",
    "lists_table",
    "plan_text",
    "recovery_sentences",
    "recovery_table",
    "scale_table",
    "separation_table",
    "serendipity_table",
    "takeaways_items",
    "tau_table",
    "unparsed_table",
    "verdict_figure",
    "verdict_table",
    "win_matrix",
]

NAMES = {
    "serendipity": "Serendipity (Avg.Score@k)",
    "arena": "Arena (share of points)",
    "saer": "SAER (label 0-2)",
    "precision": "Precision@k",
    "recall": "Recall@k",
    "ndcg": "NDCG@k",
}


def _ok(x: object) -> bool:
    try:
        return math.isfinite(float(x))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def lists_table(lists: RecommendationLists) -> Styler:
    """The reader's report: one row per system, in words."""
    report = lists.report().rename(
        columns={
            "system": "system",
            "file": "file",
            "format": "format",
            "users": "users with a list",
            "ranked_by": "ranked by",
            "ties_broken": "score ties broken by item id",
            "short_lists": f"lists shorter than {lists.top_k}",
            "seen_items": "items already in training",
            "seen": "those items",
        }
    )
    return captioned(report, f"The systems read, cut to their top {lists.top_k}", precision=0)


def plan_text(calls: dict[str, int], protocols: Sequence[str], n_systems: int, n_users: int) -> str:
    """What the judge is about to be asked, protocol by protocol, before any call."""
    parts = [f"{calls[p]:,} {p}" for p in protocols]
    return (
        f"**Before judging:** {n_systems} systems x {n_users} users; at most {', '.join(parts)} judge calls "
        f"({sum(calls[p] for p in protocols):,} in all; serendipity judges each distinct (user, item) pair once, so "
        "lists that share items cost less, and answers already in the cache cost nothing)."
    )


def verdict_table(run: YourRecommendersRun) -> Styler:
    """System x measure, every cell ``estimate [95% CI]`` (n users); the protocols first, then the offline metrics."""
    frame = run.summary
    systems = run.panel.systems
    columns = {}
    for m in run.measures:
        part = frame[frame["measure"] == m].set_index("system")
        cells = []
        for s in systems:
            if s not in part.index or not _ok(part.loc[s, "mean"]):
                n = int(part.loc[s, "n"]) if s in part.index else 0
                cells.append(f"no parsed judgment (n={n})" if m in run.config.protocols else "n/a")
            else:
                r = part.loc[s]
                cells.append(f"{estimate_cell(r['mean'], r['low'], r['high'])} (n={int(r['n'])})")
        columns[NAMES[m]] = cells
    table = pd.DataFrame({"system": systems, **columns})
    return captioned(
        table,
        f"Each system under each protocol (judge: {run.judge_name}; {len(run.panel.users)} judged users) and "
        "offline on the test split (every evaluation user with lists): mean over users [95% bootstrap CI]",
    )


def serendipity_table(run: YourRecommendersRun) -> Styler | str:
    """The serendipity paper's three list metrics per system (Avg.Score@k ranks the systems for the protocol; P_ser@k
    and N_ser@k count items the judge scores 4 or 5), each ``estimate [95% CI] (n)`` over the judged users."""
    frame = run.summary[run.summary["measure"].isin(["serendipity", "p_ser", "n_ser"])]
    if "serendipity" not in run.config.protocols or frame.empty:
        return "The serendipity protocol was not run."
    columns = {"serendipity": "Avg.Score@k (1-5)", "p_ser": "P_ser@k", "n_ser": "N_ser@k"}
    rows = []
    for s in run.panel.systems:
        row = {"system": s}
        for m, header in columns.items():
            part = frame[(frame["measure"] == m) & (frame["system"] == s)]
            r = part.iloc[0] if len(part) else None
            row[header] = (
                f"{estimate_cell(r['mean'], r['low'], r['high'])} (n={int(r['n'])})"
                if r is not None and _ok(r["mean"])
                else f"no parsed judgment (n={0 if r is None else int(r['n'])})"
            )
        rows.append(row)
    return captioned(
        pd.DataFrame(rows),
        "The serendipity protocol in the paper's three numbers: the mean score of a list, and the share (P_ser) and "
        "discounted share (N_ser) of its slots holding an item the judge scores 4 or 5; mean over the judged users "
        "[95% bootstrap CI]",
    )


def verdict_figure(run: YourRecommendersRun) -> Figure:
    """One panel per measure: each system's mean with its CI, systems in the same order in every panel."""
    measures = run.measures
    systems = run.panel.systems
    cols = min(3, len(measures))
    rows = math.ceil(len(measures) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.3 * cols, 0.6 + 0.32 * len(systems) * rows), squeeze=False)
    colours = palette(len(measures))
    for k, m in enumerate(measures):
        ax = axes[k // cols][k % cols]
        part = run.summary[run.summary["measure"] == m].set_index("system").reindex(systems)
        y = np.arange(len(systems))
        v = part["mean"].astype(float)
        ax.errorbar(
            v, y, xerr=error_bars(v, part["low"], part["high"]), fmt=MARKERS[k % len(MARKERS)],
            color=colours[k], capsize=3,
        )  # fmt: skip
        ax.set_yticks(y, systems if k % cols == 0 else [""] * len(systems))
        ax.invert_yaxis()
        ax.set_title(NAMES[m], fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    for k in range(len(measures), rows * cols):
        axes[k // cols][k % cols].set_visible(False)
    fig.tight_layout()
    plt.close(fig)
    return fig


def unparsed_table(run: YourRecommendersRun, examples: int = 2) -> Styler | str:
    """Per protocol and reason: the answers that could not be read (never filled in), with a few raw answers."""
    rows = []
    for protocol, frame in run.judgments.items():
        bad = frame[frame["status"] != "parsed"]
        for reason, grp in bad.groupby(bad["reason"].fillna("no reason given"), sort=False):
            raw = [str(t)[:160].replace("\n", " ") for t in grp["raw_text"].dropna().head(examples)]
            rows.append(
                {
                    "protocol": protocol,
                    "answers": f"{len(grp)} of {len(frame)}",
                    "why": str(reason)[:200],
                    "raw answers (first 160 characters)": " | ".join(raw) or "(none)",
                }
            )
    if not rows:
        return "Every answer of this run's judge could be read."
    return captioned(pd.DataFrame(rows), "Answers that could not be read, by protocol and reason", precision=0)


def _health(run: YourRecommendersRun) -> AnswerHealth:
    return AnswerHealth.of_frames(*run.judgments.values())


def health_notes(run: YourRecommendersRun) -> list[Callout]:
    """The warning shown when none of the judge's answers, under any protocol, could be read (nothing otherwise):
    the offline metrics still stand."""
    health = _health(run)
    if not health.n or not health.nothing_usable:
        return []
    return [unanswerable_warning("how the protocols rank your systems (the offline metrics need no judge)", health)]


def win_matrix(run: YourRecommendersRun) -> Styler | str:
    """Arena: the row system's share of points against the column system over the duels with a verdict (n)."""
    duels = run.duels
    if duels.empty or "overall" not in duels:
        return "No Arena duel was judged in this run."
    points = {"win": 1.0, "tie": 0.5, "lose": 0.0}
    systems = run.panel.systems
    cells = pd.DataFrame("", index=systems, columns=systems)
    for (x, y), grp in duels.groupby(["x", "y"], sort=False):
        scored = [points[o] for o in grp["overall"] if o in points]
        if not scored:
            cells.loc[x, y] = cells.loc[y, x] = f"no verdict (n={len(grp)})"
            continue
        share = float(np.mean(scored))
        cells.loc[x, y] = f"{share:.2f} (n={len(scored)})"
        cells.loc[y, x] = f"{1 - share:.2f} (n={len(scored)})"
    for s in systems:
        cells.loc[s, s] = "-"
    return cells.style.set_caption(
        "Arena, both orders adjudicated: the row system's share of points against the column system (win 1, tie "
        "1/2); n = duels with a verdict"
    )


def tau_table(run: YourRecommendersRun) -> Styler:
    """Kendall's tau between every two measures' system rankings, with the bootstrap CI over users."""
    rows = [
        {
            "measure": NAMES[r.a],
            "against": NAMES[r.b],
            "Kendall tau [95% CI]": estimate_cell(r.tau, r.low, r.high, digits=2)
            if _ok(r.tau)
            else "n/a (a ranking is constant or missing)",
            "systems": r.n_systems,
            "users": r.n_users,
        }
        for r in run.taus.itertuples(index=False)
    ]
    return captioned(
        pd.DataFrame(rows),
        "Do two measures rank the systems alike? Kendall's tau-b of the system means; 95% bootstrap CI over the "
        "judged users",
        precision=0,
    )


def agreement_figure(run: YourRecommendersRun) -> Figure:
    """The tau table as a heat map (blank: not computable)."""
    names = [NAMES[m] for m in run.measures]
    matrix = pd.DataFrame(np.nan, index=names, columns=names)
    for r in run.taus.itertuples(index=False):
        matrix.loc[NAMES[r.a], NAMES[r.b]] = matrix.loc[NAMES[r.b], NAMES[r.a]] = r.tau
    for n in names:
        matrix.loc[n, n] = 1.0
    fig, ax = plt.subplots(figsize=(6.4, 5.0))
    image = ax.imshow(matrix.to_numpy(dtype=float), cmap="cividis", vmin=-1, vmax=1)
    ax.set_xticks(range(len(names)), names, rotation=35, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    for i in range(len(names)):
        for j in range(len(names)):
            v = matrix.iat[i, j]
            ax.text(j, i, "n/a" if not _ok(v) else f"{v:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if _ok(v) and v < 0.2 else "black")  # fmt: skip
    fig.colorbar(image, ax=ax, label="Kendall tau")
    fig.tight_layout()
    plt.close(fig)
    return fig


def separation_table(run: YourRecommendersRun) -> Styler:
    """Per measure: how many pairs of systems its CIs separate, and which."""
    rows = []
    for m in run.measures:
        part = run.separation[run.separation["measure"] == m]
        sep = part[part["separated"]]
        rows.append(
            {
                "measure": NAMES[m],
                "pairs separated": f"{len(sep)} of {len(part)}",
                "which (higher first)": "; ".join(
                    f"{r.a} > {r.b}" if r.difference > 0 else f"{r.b} > {r.a}" for r in sep.itertuples(index=False)
                )
                or "none",
            }
        )
    return captioned(
        pd.DataFrame(rows),
        "Which pairs of systems each measure separates: the paired 95% bootstrap CI of the difference excludes 0",
        precision=0,
    )


def cost_table(run: YourRecommendersRun) -> Styler:
    """Per protocol: this run's judgments (parsed), paid calls, tokens and dollars spent."""
    rows = [
        {
            "protocol": u.protocol,
            "judgments (parsed)": f"{int(u.judgments):,} ({int(u.parsed):,})",
            "paid calls": f"{int(u.api_calls):,}",
            "tokens in / out": f"{int(u.prompt_tokens):,} / {int(u.completion_tokens):,}",
            "US$ spent": f"{float(u.usd):.4f}" if _ok(u.usd) else "unknown price",
        }
        for u in run.usage().itertuples(index=False)
    ]
    return captioned(
        pd.DataFrame(rows), f"What each protocol cost in this run (judge: {run.judge_name}; cache hits cost nothing)"
    )


def scale_table(at_scale: pd.DataFrame) -> Styler | str:
    """The estimate at scale (:func:`~recjudge_utils.experiments.your_recommenders.cost_at_scale`), in words."""
    if at_scale.empty:
        return "No protocol was judged: there is nothing to scale."
    shown = at_scale.drop(columns=["judgments here"]).copy()
    for col in shown.columns:
        if col.startswith("US$ "):
            shown[col] = shown[col].map(lambda v: f"{v:,.2f}")
        elif col.startswith("tokens") or col.startswith("judgments,"):
            shown[col] = shown[col].map(lambda v: f"{v:,.0f}")
    return captioned(
        shown,
        "An estimate at scale: this run's tokens per judgment times the judgments there, at list prices "
        "(`python -m recjudge_utils.book plan` counts it exactly)",
    )


#: fewer judged users than this and no sentence claims anything from a bootstrap CI: n users have only
#: C(2n - 1, n) distinct resamples (10 for 3 users), too few for a percentile interval to mean much
MIN_USERS_FOR_CLAIMS = 10


def _tau_words(tau: float, low: float, high: float) -> str:
    return f"tau {estimate_cell(tau, low, high, digits=2)}"


def agreement_sentences(run: YourRecommendersRun) -> list[str]:
    """One sentence per pair of protocols, and per protocol against Precision@k, each saying only what the CI
    supports."""
    out = []
    pairs = run.taus[
        run.taus["a"].isin(run.config.protocols)
        & (run.taus["b"].isin(run.config.protocols) | (run.taus["b"] == "precision"))
    ]
    for r in pairs.itertuples(index=False):
        a, b = NAMES[r.a], NAMES[r.b]
        if not _ok(r.tau):
            out.append(f"{a} and {b}: no tau (a ranking is constant or has fewer than two systems with a value).")
        elif r.n_users < MIN_USERS_FOR_CLAIMS:
            out.append(
                f"{a} and {b}: tau {r.tau:.2f} over only {r.n_users} users, whose bootstrap has at most "
                f"{math.comb(2 * r.n_users - 1, r.n_users)} distinct resamples: too few to say whether they agree."
            )
        elif not (_ok(r.low) and _ok(r.high)):
            out.append(f"{a} and {b}: tau {r.tau:.2f} with no CI ({r.n_users} users): nothing can be concluded.")
        elif r.low > 0:
            out.append(f"{a} and {b} rank the systems alike: {_tau_words(r.tau, r.low, r.high)}, a CI above 0.")
        elif r.high < 0:
            out.append(f"{a} and {b} rank the systems in opposite orders: {_tau_words(r.tau, r.low, r.high)}.")
        else:
            out.append(
                f"{a} and {b}: {_tau_words(r.tau, r.low, r.high)}; the CI includes 0, so this run cannot say "
                "whether they agree."
            )
    return out


def recovery_table(recovery: Recovery) -> Styler:
    """The simulated judge's section: each protocol's noisy ranking against its truth and against Precision@k."""
    rows = [
        {
            "protocol": NAMES[r.protocol],
            "against": r.against,
            "Kendall tau [95% CI]": estimate_cell(r.tau, r.low, r.high, digits=2) if _ok(r.tau) else "n/a",
            "users": r.n_users,
        }
        for r in recovery.taus.itertuples(index=False)
    ]
    model = ", ".join(f"{k} {v:g}" for k, v in recovery.error_model.items() if v)
    return captioned(
        pd.DataFrame(rows),
        f"SIMULATED JUDGE (never an LLM; error model: {model}): how well each protocol's ranking recovers the truth",
        precision=0,
    )


def recovery_sentences(recovery: Recovery) -> list[str]:
    """Which protocol recovers its truth best, said only when the CIs do not overlap; else that they cannot be told
    apart."""
    own = recovery.taus[recovery.taus["against"].str.startswith("its own")]
    ok = own[[_ok(t) and _ok(lo) and _ok(hi) for t, lo, hi in zip(own["tau"], own["low"], own["high"], strict=True)]]
    if ok.empty:
        return ["No protocol's recovery of its truth has a CI in this run: nothing can be concluded."]
    top = ok[ok["tau"] >= ok["tau"].max() - 1e-9]
    if len(top) > 1:
        names = " and ".join(NAMES[p] for p in top["protocol"])
        return [
            f"With this simulated judge, {names} recover their truth equally well (tau {top['tau'].iloc[0]:.2f}): this "
            "run cannot rank the protocols by how well they recover the truth."
        ]
    best = top.iloc[0]
    others = ok[ok["protocol"] != best["protocol"]]
    clear = [r.protocol for r in others.itertuples(index=False) if r.high < best["low"]]
    sentence = (
        f"With this simulated judge, {NAMES[best['protocol']]} recovers its truth best "
        f"({_tau_words(best['tau'], best['low'], best['high'])})"
    )
    if clear and len(clear) == len(others):
        return [sentence + f", clearly above {', '.join(NAMES[p] for p in clear)} (the CIs do not overlap)."]
    overlapping = ", ".join(NAMES[r.protocol] for r in others.itertuples(index=False) if r.protocol not in clear)
    return [sentence + f"; its CI overlaps {overlapping}, so this run cannot rank the protocols by how well they "
            "recover the truth."]  # fmt: skip


def takeaways_items(run: YourRecommendersRun) -> list[str]:
    """The chapter's takeaways, computed from this run."""
    usage = run.usage()
    parsed = ", ".join(f"{r.parsed} of {r.judgments} {r.protocol} answers" for r in usage.itertuples(index=False))
    items = [f"This run's judge ({run.judge_name}) gave readable answers to {parsed}."]
    sep = run.separation.groupby("measure")["separated"].sum()
    items.append(
        "Pairs of systems separated by a 95% CI: "
        + "; ".join(f"{NAMES[m]} {int(sep.get(m, 0))}" for m in run.measures)
        + f" (of {len(run.panel.systems) * (len(run.panel.systems) - 1) // 2})."
    )
    items += agreement_sentences(run)[:3]
    return items
