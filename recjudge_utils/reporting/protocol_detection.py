"""Figures and sentences of the chapter "What the protocols detect". Every title says "simulated judge"; every
figure draws the truth in (the value the error model implies, or the answer a perfect judge gives)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from statsmodels.stats.power import TTestPower

from recjudge_utils.experiments.protocol_detection import (
    PAPER_MAES,
    PAPER_PAIRS,
    ReevalDetection,
    SaerDetection,
    Separation,
)
from recjudge_utils.reporting.display import error_bars

__all__ = [
    "arena_figure",
    "arena_lines",
    "coverage_figure",
    "coverage_lines",
    "noise_figure",
    "noise_lines",
    "reevaluation_figure",
    "reevaluation_lines",
    "saer_figure",
    "saer_lines",
    "separation_figure",
    "separation_lines",
]

SIM = "simulated judge"


def _done(fig: Figure) -> Figure:
    fig.tight_layout()
    plt.close(fig)
    return fig


def noise_figure(table: pd.DataFrame) -> Figure:
    """MAE with CI against the MAE the error model implies (left), accuracy and kappa (right), by noise."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    ax = axes[0]
    ax.errorbar(
        table["noise"],
        table["mae"],
        yerr=error_bars(table["mae"], table["mae_lo"], table["mae_hi"]),
        fmt="o",
        label="measured MAE (95% CI)",
    )
    ax.plot(table["noise"], table["expected_mae"], "k--", label="truth: MAE the error model implies")
    ax.set(xlabel="score noise σ (5-level scale)", ylabel="MAE against g", title=f"MAE vs known noise ({SIM})")
    ax.legend(fontsize=8)
    ax = axes[1]
    ax.plot(table["noise"], table["acc3"], "o-", label="3-class accuracy")
    ax.plot(table["noise"], table["kappa_qw"], "s-", label="quadratic kappa")
    ax.axhline(1.0, color="k", ls="--", lw=1, label="truth: a perfect judge (σ = 0)")
    ax.set(
        xlabel="score noise σ", ylabel="agreement with g", title=f"Accuracy and kappa vs noise ({SIM})", ylim=(0, 1.05)
    )
    ax.legend(fontsize=8)
    return _done(fig)


def noise_lines(table: pd.DataFrame) -> list[str]:
    """One line per noise level: MAE with CI, whether the implied MAE is inside it, accuracy and kappa."""
    out = []
    for r in table.itertuples():
        inside = r.mae_lo <= r.expected_mae <= r.mae_hi
        out.append(
            f"noise {r.noise:g}: MAE {r.mae:.3f} [{r.mae_lo:.3f}, {r.mae_hi:.3f}] against {r.expected_mae:.3f} "
            f"implied by the error model ({'inside' if inside else 'outside'} the CI); "
            f"accuracy {100 * r.acc3:.1f}%, kappa {r.kappa_qw:.3f}"
        )
    return out


def coverage_figure(table: pd.DataFrame) -> Figure:
    """Share of 95% CIs holding the truth, by sample size (log scale) and interval, against nominal 95%."""
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    for name, grp in table.groupby("interval", sort=False):
        ax.errorbar(
            grp["n"],
            grp["coverage"],
            yerr=error_bars(grp["coverage"], grp["coverage_lo"], grp["coverage_hi"]),
            fmt="o-",
            capsize=3,
            label=name,
        )
    ax.axhline(0.95, color="k", ls="--", lw=1, label="nominal 95%")
    ax.set_xscale("log")
    ax.set(xlabel="judged pairs per sample (log scale)", ylabel="share of CIs holding the truth", ylim=(0.7, 1.01))
    ax.set_title(
        f"Coverage of 95% CIs over repeated samples ({SIM}, noise {table.attrs.get('noise', '?')})", fontsize=10
    )
    ax.legend(fontsize=8)
    return _done(fig)


def coverage_lines(table: pd.DataFrame) -> list[str]:
    """Population MAE and accuracy, then per sample size and interval: coverage vs 95% and mean width."""
    true_mae, true_acc = table.attrs["true_mae"], table.attrs["true_acc"]
    out = [f"population (all pairs): MAE {true_mae:.3f}, 3-class accuracy {100 * true_acc:.1f}%"]
    for r in table.itertuples():
        verdict = "below" if r.coverage_hi < 0.95 else "above" if r.coverage_lo > 0.95 else "consistent with"
        out.append(
            f"n = {r.n}, {r.interval}: coverage {100 * r.coverage:.1f}% "
            f"[{100 * r.coverage_lo:.1f}, {100 * r.coverage_hi:.1f}] ({verdict} the nominal 95%), "
            f"mean width {r.mean_width:.3f}"
        )
    return out


def separation_figure(sep: Separation) -> Figure:
    """Simulated power to separate the paper's two MAEs by pair count, with statsmodels' power curve."""
    t = sep.table
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    ax.errorbar(
        t["n"],
        t["power"],
        yerr=error_bars(t["power"], t["power_lo"], t["power_hi"]),
        fmt="o",
        capsize=3,
        label="simulation (paired t-test, 5%)",
    )
    grid = np.geomspace(t["n"].min(), t["n"].max(), 60)
    ax.plot(
        grid,
        TTestPower().power(effect_size=sep.effect_size, nobs=grid, alpha=0.05),
        "k--",
        label="statsmodels TTestPower",
    )
    ax.axhline(0.8, color="grey", lw=1)
    ax.axvline(PAPER_PAIRS, color="C3", ls=":", label=f"the paper's {PAPER_PAIRS:,} pairs")
    ax.set_xscale("log")
    ax.set(xlabel="judged pairs (log scale)", ylabel="power", ylim=(0, 1.02))
    ax.set_title(f"Pairs to separate MAE {PAPER_MAES[0]} from {PAPER_MAES[1]} ({SIM})", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    return _done(fig)


def separation_lines(sep: Separation) -> list[str]:
    """The two templates' noises and MAEs, the standardised effect, and the pairs needed for 80% power."""
    return [
        f"two simulated templates with noise {sep.noises[0]:.2f} and {sep.noises[1]:.2f} reach MAE "
        f"{sep.maes[0]:.3f} and {sep.maes[1]:.3f} on these pairs (the paper's CoT and LtM: {PAPER_MAES[0]} and "
        f"{PAPER_MAES[1]})",
        f"standardised paired effect (mean / SD of the per-pair error difference): {sep.effect_size:.3f}",
        f"pairs for 80% power: {sep.n80_simulated:.0f} by simulation, {sep.n80_statsmodels:.0f} by statsmodels' "
        f"TTestPower; the paper judged {PAPER_PAIRS:,} pairs",
    ]


def arena_figure(table: pd.DataFrame) -> Figure:
    """Win rate (left) and Q (right) of the tested model as position bias grows, per protocol and the truth."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    styles = {"truth": "k--", "single order (paper)": "o-", "both orders, adjudicated": "s-"}
    for ax, metric, label in ((axes[0], "win_rate", "win rate of the tested model (ties half)"), (axes[1], "Q", "Q")):
        for name, grp in table.groupby("protocol", sort=False):
            ax.plot(grp["bias"], grp[metric], styles.get(str(name), "o-"), label=name)
        ax.set(xlabel="position bias b", ylabel=label)
        ax.legend(fontsize=8)
    fig.suptitle(
        f"RecSys Arena: {table.attrs.get('tested')} vs {table.attrs.get('baseline')} as position bias grows ({SIM})",
        fontsize=10,
    )
    return _done(fig)


def arena_lines(table: pd.DataFrame) -> list[str]:
    """True tie share and Q, then per bias the single-order and adjudicated Q with their error vs the truth."""
    piv = table.pivot(index="bias", columns="protocol", values="Q")
    truth = float(piv["truth"].iloc[0])
    out = [
        f"{table.attrs['users']} users; {100 * table.attrs['truth_ties']:.0f}% of the true comparisons are ties "
        f"(equal held-out positives in both top-5 lists); true Q = {truth:.3f}"
    ]
    for b, row in piv.iterrows():
        single, adj = float(row["single order (paper)"]), float(row["both orders, adjudicated"])
        out.append(
            f"bias {b:g}: single-order Q {single:.3f} ({100 * (single / truth - 1):+.0f}% vs the truth), "
            f"adjudicated Q {adj:.3f} ({100 * (adj / truth - 1):+.0f}%)"
        )
    return out


def saer_figure(det: SaerDetection) -> Figure:
    """Adversarial-pair outcomes vs context neglect (left), swap consistency vs position bias (right)."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    adv = det.adversarial
    ax = axes[0]
    for outcome, marker in (("correct", "o-"), ("tie", "s-"), ("wrong", "^-")):
        grp = adv[adv["outcome"] == outcome]
        ax.errorbar(
            grp["context_neglect"],
            grp["share"],
            yerr=error_bars(grp["share"], grp["lo"], grp["hi"]),
            fmt=marker,
            capsize=3,
            label=outcome,
        )
    exp = adv[adv["outcome"] == "expected correct"]
    ax.plot(exp["context_neglect"], exp["share"], "k--", label="truth: correct = 1 - c")
    ax.set(xlabel="context neglect c", ylabel="share of adversarial pairs", title=f"Adversarial detection ({SIM})")
    ax.legend(fontsize=8)
    ax = axes[1]
    c = det.consistency
    ax.errorbar(
        c["bias"],
        c["consistency"],
        yerr=error_bars(c["consistency"], c["lo"], c["hi"]),
        fmt="o",
        capsize=3,
        label="measured",
    )
    ax.plot(c["bias"], c["expected"], "k--", label="truth: the error model's consistency")
    ax.set(xlabel="position bias b", ylabel="swap consistency", title=f"Swap consistency ({SIM})", ylim=(0, 1.05))
    ax.legend(fontsize=8)
    return _done(fig)


def adjudication_figure(det: SaerDetection) -> Figure:
    """Label shares under the strict merge (left) and verdict shares under the conservative merge (right)."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
    sns.barplot(data=det.labels, x="label", y="share", hue="labels", ax=axes[0])
    axes[0].set_title(f"Pointwise labels: strict merge (harsher wins) vs truth ({SIM})", fontsize=10)
    sns.barplot(data=det.verdicts, x="verdict", y="share", hue="verdicts", ax=axes[1])
    axes[1].set_title(f"Pairwise verdicts: conservative merge vs truth ({SIM})", fontsize=10)
    for ax in axes:
        ax.legend(fontsize=7)
    return _done(fig)


def saer_lines(det: SaerDetection) -> list[str]:
    """The panel's held-out future, detection per context neglect, swap consistency per bias, and Poor Match / Tie
    shares after merging."""
    adv = det.adversarial
    correct = adv[adv["outcome"] == "correct"].set_index("context_neglect")["share"]
    out = [
        f"panel: {det.customers} customers, each one's last {det.heldout} interactions held out of the context and "
        "of the recommenders' training as the future the truth is read from (simulated-judge runs only: the paper "
        "has no such split, and an LLM run of chapter 4 shows and trains on the whole history)"
    ]
    out += [
        f"context neglect {c:g}: {100 * v:.0f}% of adversarial pairs detected (expected {100 * (1 - c):.0f}%)"
        for c, v in correct.items()
    ]
    for r in det.consistency.itertuples():
        out.append(
            f"position bias {r.bias:g}: swap consistency {100 * r.consistency:.0f}% "
            f"[{100 * r.lo:.0f}, {100 * r.hi:.0f}] (expected {100 * r.expected:.0f}%)"
        )
    labels = det.labels.pivot(index="labels", columns="label", values="share")
    kappa = det.labels.groupby("labels")["kappa_vs_truth"].first()
    poor = labels["Poor Match"]
    strict = "strict merge of A and B"
    out.append(
        f"Poor Match: truth {100 * poor['truth']:.0f}%, the two annotators {100 * poor['annotator A']:.0f}% and "
        f"{100 * poor['annotator B']:.0f}%, strict merge {100 * poor[strict]:.0f}%; kappa with the truth: "
        f"A {kappa['annotator A']:.2f}, B {kappa['annotator B']:.2f}, strict merge {kappa[strict]:.2f}"
    )
    ties = det.verdicts[det.verdicts["verdict"] == "Tie"].set_index("verdicts")["share"]
    out.append(
        f"Tie: truth {100 * ties['truth']:.0f}%, annotators {100 * ties['annotator A']:.0f}% and "
        f"{100 * ties['annotator B']:.0f}%, conservative merge {100 * ties['conservative merge of A and B']:.0f}%"
    )
    return out


def reevaluation_figure(det: ReevalDetection) -> Figure:
    """Avg.Score@20 and P_ser@20 gaps (with CI) between the two recommenders per judge, vs the true gap."""
    a, b = det.gaps.attrs["recommenders"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    gaps = det.gaps.copy()
    for ax, metric, label in ((axes[0], "avg", "Avg.Score@20 gap"), (axes[1], "p_ser", "P_ser@20 gap")):
        g = gaps[gaps["metric"] == metric]
        truth = float(g[g["source"] == "truth"]["gap"].iloc[0])
        noisy = g[g["source"] != "truth"]
        ax.errorbar(
            range(len(noisy)),
            noisy["gap"],
            yerr=error_bars(noisy["gap"], noisy["gap_lo"], noisy["gap_hi"]),
            fmt="o",
            capsize=3,
            label="measured (95% CI over users)",
        )
        ax.axhline(truth, color="k", ls="--", label="truth (scored by g)")
        ax.axhline(0, color="grey", lw=1)
        ax.set_xticks(range(len(noisy)), list(noisy["source"]))
        ax.set(ylabel=f"{label} ({a} - {b})")
        ax.legend(fontsize=8)
    fig.suptitle(f"RS re-evaluation: judge noise shrinks the gap between {a} and {b} ({SIM})", fontsize=10)
    return _done(fig)


def ordering_figure(det: ReevalDetection) -> Figure:
    """Share of samples ordering the two recommenders as the truth does, by judged users, per metric."""
    a, b = det.gaps.attrs["recommenders"]
    g = sns.relplot(
        data=det.ordering,
        x="users",
        y="correct_order",
        hue="source",
        col="metric",
        kind="line",
        marker="o",
        height=3.4,
        aspect=1.3,
    )
    for ax in g.axes.flat:
        ax.axhline(0.95, color="k", ls="--", lw=1)
        ax.set_xscale("log")
    g.figure.suptitle(f"Share of samples that order {a} and {b} as the truth does ({SIM})", y=1.04, fontsize=10)
    plt.close(g.figure)
    return g.figure


def reevaluation_lines(det: ReevalDetection) -> list[str]:
    """Each gap with its CI (and whether it excludes 0), then the judged users needed for 95% correct order."""
    a, b = det.gaps.attrs["recommenders"]
    out = [f"{det.gaps.attrs['users']} judged users, {det.gaps.attrs['pairs']} distinct (user, item) pairs; {a} - {b}:"]
    for r in det.gaps.itertuples():
        sig = "excludes 0" if (r.gap_lo > 0 or r.gap_hi < 0) else "includes 0"
        out.append(f"{r.source}, {r.metric}: gap {r.gap:+.3f} [{r.gap_lo:+.3f}, {r.gap_hi:+.3f}] (CI {sig})")
    for metric, source, n in det.users_needed[["metric", "source", "users_for_95%"]].itertuples(index=False):
        needed = f"{int(n)} judged users" if np.isfinite(n) else "more users than sampled here"
        out.append(f"{metric}, {source}: {needed} to order them correctly 95% of the time")
    return out


def summary_lines(
    noise: pd.DataFrame,
    coverage: pd.DataFrame,
    separation: Separation,
    arena: pd.DataFrame,
    saer: SaerDetection,
    reeval: ReevalDetection,
) -> list[str]:
    """The chapter's findings, each stated from this run's numbers."""
    out = []
    inside = int(((noise["mae_lo"] <= noise["expected_mae"]) & (noise["expected_mae"] <= noise["mae_hi"])).sum())
    out.append(f"The measured MAE holds the value the error model implies in {inside} of {len(noise)} noise levels.")
    boot = coverage[coverage["interval"].str.startswith("MAE")]
    low = boot[boot["coverage_hi"] < 0.95]
    if len(low):
        out.append(
            "The percentile bootstrap CI of the MAE covers less than 95% at n = "
            + ", ".join(str(int(n)) for n in low["n"])
            + f" (lowest: {100 * low['coverage'].min():.1f}%)."
        )
    else:
        out.append("The percentile bootstrap CI of the MAE is consistent with 95% coverage at every sample size tried.")
    out.append(
        "Separating the paper's CoT and LtM MAEs with 80% power takes about "
        f"{separation.n80_statsmodels:.0f} judged pairs (statsmodels; {separation.n80_simulated:.0f} by simulation), "
        f"against the paper's {PAPER_PAIRS:,}."
    )
    piv = arena.pivot(index="bias", columns="protocol", values="Q")
    truth = float(piv["truth"].iloc[0])
    worst = float(piv.index.max())
    single, adjudicated = piv.loc[worst, "single order (paper)"], piv.loc[worst, "both orders, adjudicated"]
    out.append(
        f"At position bias {worst:g} the single-order Q is {float(single):.3f} against a true {truth:.3f}; "
        f"adjudicated over both orders it is {float(adjudicated):.3f}."
    )
    adv = saer.adversarial[saer.adversarial["outcome"] == "correct"].set_index("context_neglect")["share"]
    out.append(
        f"Adversarial detection falls from {100 * adv.iloc[0]:.0f}% without context neglect to "
        f"{100 * adv.iloc[-1]:.0f}% at neglect {adv.index[-1]:g}."
    )
    gaps = reeval.gaps[reeval.gaps["metric"] == "avg"].set_index("source")
    lost = [s for s in gaps.index if s != "truth" and gaps.loc[s, "gap_lo"] <= 0 <= gaps.loc[s, "gap_hi"]]
    truth_gap = gaps.loc["truth"]
    ci = f"[{truth_gap['gap_lo']:+.3f}, {truth_gap['gap_hi']:+.3f}]"
    tail = (
        f"the measured gap's CI includes 0 under {', '.join(lost)}."
        if lost
        else "it stays clear of 0 at every noise level tried."
    )
    out.append(f"The true Avg.Score@20 gap is {truth_gap['gap']:+.3f} {ci}; {tail}")
    return out
