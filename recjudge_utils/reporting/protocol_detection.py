"""Tables, figures, notes and takeaways of the chapter "What the protocols detect".

Every number here comes from the simulated judge: each section's note (:func:`judge_note`) names its error model,
every figure title says "simulated judge", and every figure draws the truth in (the value the error model implies,
or the answer a perfect judge gives). Tables put an estimate and its 95 % CI in one cell; the machine-readable
numbers stay in :meth:`~recjudge_utils.experiments.protocol_detection.DetectionRun.results`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from pandas.io.formats.style import Styler

from recjudge_utils.experiments.protocol_detection import (
    PAPER_MAES,
    PAPER_PAIRS,
    DetectionRun,
    ReevalDetection,
    SaerDetection,
    Separation,
    reevaluation_config,
)
from recjudge_utils.judge.backends.sim import SIM_PREFIX, SimParameters
from recjudge_utils.reporting.callouts import Callout, simulated_judge_note, stand_in_note
from recjudge_utils.reporting.display import captioned, error_bars, estimate_cell
from recjudge_utils.reporting.figures import MARKERS, forest_plot, palette

__all__ = [
    "SECTIONS",
    "adjudication_figure",
    "adjudication_tables",
    "arena_figure",
    "arena_table",
    "arena_text",
    "coverage_figure",
    "coverage_table",
    "coverage_text",
    "data_note",
    "forest_figure",
    "judge_note",
    "noise_figure",
    "noise_table",
    "ordering_figure",
    "reevaluation_figure",
    "reevaluation_table",
    "reevaluation_text",
    "saer_figure",
    "saer_tables",
    "saer_text",
    "separation_figure",
    "separation_table",
    "separation_text",
    "takeaways_items",
]

SIM = SIM_PREFIX
#: the chapter's sections and the simulated judge's errors each one sweeps (the others keep SimParameters' defaults)
_SWEEPS: dict[str, tuple[str, ...]] = {
    "serendipity": ("noise",),
    "arena": ("position_bias",),
    "saer": ("context_neglect", "position_bias", "noise"),
    "reevaluation": ("noise",),
}
SECTIONS = tuple(_SWEEPS)
#: the error model's parameters a note lists (the seed is the profile's; each study offsets it)
_ERRORS = tuple(f.name for f in dataclasses.fields(SimParameters) if f.name != "seed")
_TRUTH_STYLE: dict[str, Any] = {"color": "k", "linestyle": "--", "linewidth": 1.2}


def _done(fig: Figure) -> Figure:
    fig.tight_layout()
    plt.close(fig)
    return fig


def _values(levels: Sequence[float]) -> str:
    return ", ".join(f"{v:g}" for v in levels)


def _pct(value: float, low: float | None = None, high: float | None = None) -> str:
    return estimate_cell(value, low, high, digits=1, scale=100)


def _ci_holds(value: float, low: float, high: float) -> bool:
    # a Wilson bound at 0 % or 100 % can miss 0 or 1 by a rounding error
    return bool(low - 1e-9 <= value <= high + 1e-9)


def _log_ticks(ax: Axes, values: Sequence[float]) -> None:
    """A log x axis labelled at the sample sizes drawn, in plain numbers."""
    ax.set_xscale("log")
    ax.set_xticks(list(values), [f"{v:,.0f}" for v in values])
    ax.minorticks_off()


def _q_with_error(q: float, true_q: float) -> str:
    """Q as a table shows it, with its relative error against the truth when both are finite."""
    if not (np.isfinite(q) and np.isfinite(true_q) and true_q > 0):
        return estimate_cell(q)
    return f"{estimate_cell(q)} ({100 * (q / true_q - 1):+.0f} %)"


# ------------------------------------------------------------------------------------------------ notes
def judge_note(run: DetectionRun, section: str) -> Callout:
    """The simulated judge's note for one section: the errors it sweeps in the title line, the others as set."""
    c = run.config
    if section not in _SWEEPS:
        raise ValueError(f"unknown section {section!r}; one of {', '.join(SECTIONS)}")
    sep = run.separation
    what = {
        "serendipity": f"score noise σ = {_values(c.noise_levels)} (the coverage study: σ = {c.coverage_noise:g}; "
        f"the two templates: σ = {sep.noises[0]:.2f} and {sep.noises[1]:.2f})",
        "arena": f"position bias b = {_values(c.biases)}",
        "saer": f"context neglect c = {_values(c.neglects)} on the adversarial pairs, position bias b = "
        f"{_values(c.biases)} in the swap test and score noise {c.annotator_noise:g} for each of two annotators, "
        "one error at a time",
        "reevaluation": f"score noise σ = {_values(c.reeval_noise)}",
    }[section]
    default = SimParameters()
    fixed = {name: float(getattr(default, name)) for name in _ERRORS if name not in _SWEEPS[section]}
    return simulated_judge_note(f"{SIM} with {what}; every other error as below", fixed)


def data_note(run: DetectionRun) -> Callout | None:
    """A stand-in note when the chapter's data are not the papers' (None otherwise)."""
    if "[STAND-IN]" not in run.data_label:
        return None
    return stand_in_note(
        run.data_label,
        "the papers' data",
        "Here that matters less than elsewhere in the book: every number below is measured against a truth the "
        "simulated judge is handed, not against people's answers.",
    )


# ------------------------------------------------------------------------------------------------ serendipity
def noise_table(noise: pd.DataFrame) -> Styler:
    """MAE, 3-class accuracy and weighted kappa per score noise, each with its CI, beside the implied MAE."""
    rows = [
        {
            "score noise σ": f"{r.noise:g}",
            "MAE [95 % CI]": estimate_cell(r.mae, r.mae_lo, r.mae_hi),
            "MAE the error model implies": f"{r.expected_mae:.3f}",
            "implied MAE in the CI": "yes" if _ci_holds(r.expected_mae, r.mae_lo, r.mae_hi) else "no",
            "3-class accuracy % [95 % CI]": _pct(r.acc3, r.acc3_wilson_lo, r.acc3_wilson_hi),
            "weighted kappa [95 % CI]": estimate_cell(r.kappa_qw, r.kappa_lo, r.kappa_hi),
        }
        for r in noise.itertuples()
    ]
    return captioned(pd.DataFrame(rows), f"Serendipity scores against a known score noise ({SIM})")


def _measured(ax: Axes, x: Any, y: Any, low: Any, high: Any, k: int, label: str, line: str = "") -> None:
    """Series ``k`` of a figure's measured estimates with their CIs: its marker (plus ``line``, e.g. "-") and its
    colour-blind-safe colour, as every figure of this chapter draws them."""
    ax.errorbar(
        x, y, yerr=error_bars(y, low, high), fmt=MARKERS[k] + line, color=palette(k + 1)[k], capsize=3, label=label
    )


def noise_figure(noise: pd.DataFrame) -> Figure:
    """MAE with CI against the MAE the error model implies (left), accuracy and kappa with CIs (right), by noise."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    ax = axes[0]
    _measured(ax, noise["noise"], noise["mae"], noise["mae_lo"], noise["mae_hi"], 0, "measured MAE (95 % CI)")
    ax.plot(noise["noise"], noise["expected_mae"], **_TRUTH_STYLE, label="truth: the MAE the error model implies")
    ax.set(xlabel="score noise σ (five-level scale)", ylabel="MAE against g", title=f"MAE ({SIM})")
    ax.legend(fontsize=8)
    ax = axes[1]
    for k, (col, lo, hi, label) in enumerate(
        (
            ("acc3", "acc3_wilson_lo", "acc3_wilson_hi", "3-class accuracy (Wilson 95 % CI)"),
            ("kappa_qw", "kappa_lo", "kappa_hi", "weighted kappa (bootstrap 95 % CI)"),
        )
    ):
        _measured(ax, noise["noise"], noise[col], noise[lo], noise[hi], k, label, line="-")
    ax.axhline(1.0, **_TRUTH_STYLE, label="truth: a perfect judge (σ = 0)")
    ax.set(xlabel="score noise σ", ylabel="agreement with g", title=f"Accuracy and kappa ({SIM})", ylim=(0, 1.05))
    ax.legend(fontsize=8)
    return _done(fig)


def coverage_text(run: DetectionRun) -> str:
    """The population the coverage study samples from and how each coverage is counted (Markdown)."""
    cov, c = run.coverage, run.config
    return (
        f"Population: every judged pair at score noise σ = {cov.attrs['noise']:g}, with {{term}}`MAE` "
        f"{cov.attrs['true_mae']:.3f} and {{term}}`3-class accuracy` {100 * cov.attrs['true_acc']:.1f} %. Each row "
        f"draws {c.repeats} samples of n pairs and computes a 95 % CI on each ({c.n_boot} bootstrap resamples for the "
        "MAE); its coverage is the share of those intervals that hold the population value, with a "
        "{term}`Wilson interval` over the samples."
    )


def coverage_table(coverage: pd.DataFrame) -> Styler:
    """Coverage (with its CI) and mean width of each interval method per sample size, against the nominal 95 %."""
    rows = []
    for r in coverage.itertuples():
        verdict = "below" if r.coverage_hi < 0.95 else "above" if r.coverage_lo > 0.95 else "consistent with"
        rows.append(
            {
                "judged pairs per sample": r.n,
                "interval": r.interval,
                "coverage % [95 % CI]": _pct(r.coverage, r.coverage_lo, r.coverage_hi),
                "against the nominal 95 %": verdict,
                "mean width": f"{r.mean_width:.3f}",
            }
        )
    return captioned(pd.DataFrame(rows), f"How often a 95 % CI holds the truth ({SIM})")


def coverage_figure(coverage: pd.DataFrame) -> Figure:
    """Share of 95 % CIs holding the truth, by sample size (log scale) and interval, against the nominal 95 %."""
    groups = list(dict.fromkeys(coverage["interval"]))
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    for k, name in enumerate(groups):
        grp = coverage[coverage["interval"] == name]
        _measured(
            ax, grp["n"], grp["coverage"], grp["coverage_lo"], grp["coverage_hi"], k, name, line="-" if k == 0 else "-."
        )
    ax.axhline(0.95, **_TRUTH_STYLE, label="nominal 95 %")
    _log_ticks(ax, sorted(set(coverage["n"])))
    bottom = min(0.7, float(coverage["coverage_lo"].min()) - 0.02)
    ax.set(xlabel="judged pairs per sample (log scale)", ylabel="share of CIs holding the truth", ylim=(bottom, 1.01))
    ax.set_title(f"Coverage of 95 % CIs over repeated samples ({SIM}, σ = {coverage.attrs.get('noise', '?')})")
    ax.legend(fontsize=8)
    return _done(fig)


def separation_text(sep: Separation) -> str:
    """The two templates' noises and MAEs, the standardised effect and the pairs needed for 80 % power."""
    simulated = (
        f"{sep.n80_simulated:,.0f} by simulation"
        if np.isfinite(sep.n80_simulated)
        else f"not reached by simulation within {int(sep.table['n'].max()):,} pairs"
    )
    return (
        f"Two simulated templates with score noise {sep.noises[0]:.2f} and {sep.noises[1]:.2f} reach MAE "
        f"{sep.maes[0]:.3f} and {sep.maes[1]:.3f} on these pairs (the paper's CoT and LtM: {PAPER_MAES[0]} and "
        f"{PAPER_MAES[1]} {{cite:p}}`tokutake2025serendipity`). The standardised paired effect (mean over standard "
        f"deviation of the per-pair difference in absolute error) is d = {sep.effect_size:.3f}. Pairs for 80 % power "
        f"at the 5 % level: {sep.n80_statsmodels:,.0f} by statsmodels' `TTestPower`, {simulated}; the paper judged "
        f"{PAPER_PAIRS:,}."
    )


def separation_table(sep: Separation) -> Styler:
    """Power per judged-pair count: the simulation's share of significant tests with its CI, and statsmodels'."""
    rows = [
        {
            "judged pairs": f"{r.n:,}",
            "power by simulation % [95 % CI]": _pct(r.power, r.power_lo, r.power_hi),
            "power by statsmodels %": f"{100 * r.power_statsmodels:.1f}",
        }
        for r in sep.table.itertuples()
    ]
    return captioned(pd.DataFrame(rows), f"Power to tell two templates apart (paired t-test, 5 %; {SIM})")


def separation_figure(sep: Separation) -> Figure:
    """Simulated power to separate the paper's two MAEs by pair count, with statsmodels' power curve."""
    t = sep.table
    colours = palette(2)
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    _measured(
        ax, t["n"], t["power"], t["power_lo"], t["power_hi"], 0, "simulation (paired t-test, 5 %; Wilson 95 % CI)"
    )
    grid = np.geomspace(t["n"].min(), max(t["n"].max(), PAPER_PAIRS), 80)
    ax.plot(
        grid,
        sep.power_curve(grid),
        **_TRUTH_STYLE,
        label=f"statsmodels TTestPower (d = {sep.effect_size:.2f})",
    )
    ax.axhline(0.8, color="0.6", lw=1, label="80 % power")
    ax.axvline(PAPER_PAIRS, color=colours[1], ls=":", lw=1.5, label=f"the paper's {PAPER_PAIRS:,} pairs")
    _log_ticks(ax, list(t["n"]))
    ax.set(xlabel="judged pairs (log scale)", ylabel="power", ylim=(0, 1.02))
    ax.set_title(f"Pairs to separate MAE {PAPER_MAES[0]} from {PAPER_MAES[1]} ({SIM})")
    ax.legend(fontsize=8, loc="lower right")
    return _done(fig)


# ------------------------------------------------------------------------------------------------ RecSys Arena
def _arena_truth(arena: pd.DataFrame) -> tuple[float, float]:
    truth = arena[arena["protocol"] == "truth"].iloc[0]
    return float(truth["win_rate"]), float(truth["Q"])


def arena_text(arena: pd.DataFrame) -> str:
    """The panel, its true tie share and the true win rate and Q the protocols should recover (Markdown)."""
    win, q = _arena_truth(arena)
    return (
        f"{arena.attrs['users']} users compare {arena.attrs['tested']} (tested) with {arena.attrs['baseline']} "
        f"(baseline); {100 * arena.attrs['truth_ties']:.0f} % of the true comparisons are ties (equal held-out "
        f"positives in both top-5 lists). The truth: win rate {100 * win:.1f} % (ties counted half), "
        f"{{term}}`Q` = {estimate_cell(q)}."
        + (
            " Q reads ∞ where a protocol records wins but no losses and no ties."
            if not np.isfinite(arena["Q"].astype(float)).all()
            else ""
        )
    )


def arena_table(arena: pd.DataFrame) -> Styler:
    """Per position bias: win rate and Q of the single-order and the adjudicated protocol, Q's error vs the truth."""
    _, true_q = _arena_truth(arena)
    rows = []
    for b, grp in arena[arena["protocol"] != "truth"].groupby("bias", sort=True):
        by = grp.set_index("protocol")
        single, adj = by.loc["single order (paper)"], by.loc["both orders, adjudicated"]
        rows.append(
            {
                "position bias b": f"{b:g}",
                "win % single order (paper)": f"{100 * single['win_rate']:.1f}",
                "win % both orders adjudicated": f"{100 * adj['win_rate']:.1f}",
                "Q single order": _q_with_error(float(single["Q"]), true_q),
                "Q adjudicated": _q_with_error(float(adj["Q"]), true_q),
            }
        )
    return captioned(
        pd.DataFrame(rows),
        f"Single order against both orders, Q's error against the true {estimate_cell(true_q)} ({SIM})",
    )


def arena_figure(arena: pd.DataFrame) -> Figure:
    """Win rate (left) and Q (right) of the tested model as position bias grows, per protocol and the truth."""
    protocols = ("single order (paper)", "both orders, adjudicated")
    colours = palette(len(protocols))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, metric, label in ((axes[0], "win_rate", "win rate of the tested model (ties half)"), (axes[1], "Q", "Q")):
        truth = arena[arena["protocol"] == "truth"]
        ax.plot(truth["bias"], truth[metric], **_TRUTH_STYLE, zorder=3, label="truth")
        for k, name in enumerate(protocols):
            grp = arena[arena["protocol"] == name]
            ax.plot(grp["bias"], grp[metric], MARKERS[k] + ("-" if k == 0 else ":"), color=colours[k], label=name)
        ax.set(xlabel="position bias b", ylabel=label)
        ax.legend(fontsize=8)
    fig.suptitle(f"{arena.attrs.get('tested')} against {arena.attrs.get('baseline')} as position bias grows ({SIM})")
    return _done(fig)


# ------------------------------------------------------------------------------------------------ SAER
def saer_text(det: SaerDetection) -> str:
    """The panel and its held-out future, which only simulated-judge runs have (Markdown)."""
    return (
        f"Panel: {det.customers} customers, each one's last {det.heldout} interactions held out of the context and of "
        "the recommenders' training as the future the truth is read from. Only simulated-judge runs hold out a future: "
        f"the paper has no such split {{cite:p}}`liu2026saer`, and an LLM run of {{doc}}`chapter 4 <04_saer>` shows "
        "and trains on the whole history."
    )


def saer_tables(det: SaerDetection) -> tuple[Styler, Styler]:
    """Adversarial detection per context neglect, and swap consistency per position bias, against the truth."""
    adv = det.adversarial.pivot(index="context_neglect", columns="outcome", values=["share", "lo", "hi"])
    detection = pd.DataFrame(
        [
            {
                "context neglect c": f"{c:g}",
                "genuine list picked % [95 % CI]": _pct(
                    adv.loc[c, ("share", "correct")], adv.loc[c, ("lo", "correct")], adv.loc[c, ("hi", "correct")]
                ),
                "tie %": f"{100 * adv.loc[c, ('share', 'tie')]:.1f}",
                "decoy picked %": f"{100 * adv.loc[c, ('share', 'wrong')]:.1f}",
                "truth: 1 − c (%)": f"{100 * adv.loc[c, ('share', 'expected correct')]:.1f}",
            }
            for c in adv.index
        ]
    )
    consistency = pd.DataFrame(
        [
            {
                "position bias b": f"{r.bias:g}",
                "swap consistency % [95 % CI]": _pct(r.consistency, r.lo, r.hi),
                "truth: the error model's consistency %": f"{100 * r.expected:.1f}",
            }
            for r in det.consistency.itertuples()
        ]
    )
    return (
        captioned(detection, f"Adversarial pairs: the genuine list against a decoy ({SIM})"),
        captioned(consistency, f"The position swap: both orders agree ({SIM})"),
    )


def saer_figure(det: SaerDetection) -> Figure:
    """Adversarial-pair outcomes vs context neglect (left), swap consistency vs position bias (right), with CIs."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    adv = det.adversarial
    ax = axes[0]
    for k, (outcome, label) in enumerate((("correct", "genuine list"), ("tie", "tie"), ("wrong", "decoy"))):
        grp = adv[adv["outcome"] == outcome]
        _measured(ax, grp["context_neglect"], grp["share"], grp["lo"], grp["hi"], k, label, line="-")
    exp = adv[adv["outcome"] == "expected correct"]
    ax.plot(exp["context_neglect"], exp["share"], **_TRUTH_STYLE, label="truth: genuine = 1 − c")
    ax.set(xlabel="context neglect c", ylabel="share of adversarial pairs (95 % CI)")
    ax.set_title(f"Adversarial detection ({SIM})")
    ax.legend(fontsize=8)
    ax = axes[1]
    c = det.consistency
    _measured(ax, c["bias"], c["consistency"], c["lo"], c["hi"], 0, "measured (Wilson 95 % CI)")
    ax.plot(c["bias"], c["expected"], **_TRUTH_STYLE, label="truth: the error model's consistency")
    ax.set(xlabel="position bias b", ylabel="swap consistency", ylim=(0, 1.05))
    ax.set_title(f"Swap consistency ({SIM})")
    ax.legend(fontsize=8)
    return _done(fig)


def adjudication_tables(det: SaerDetection) -> tuple[Styler, Styler]:
    """Label shares with kappa against the truth (strict merge), and verdict shares (conservative merge)."""
    labels = det.labels.pivot(index="labels", columns="label", values="share")
    labels = labels.loc[list(dict.fromkeys(det.labels["labels"])), list(dict.fromkeys(det.labels["label"]))]
    kappa = det.labels.groupby("labels", sort=False)["kappa_vs_truth"].first()
    label_frame = (100 * labels).round(1).rename(columns=lambda c: f"{c} %")
    label_frame["weighted kappa with the truth"] = [
        "(the truth)" if src == "truth" else f"{kappa[src]:.2f}" for src in label_frame.index
    ]
    verdicts = det.verdicts.pivot(index="verdicts", columns="verdict", values="share")
    verdicts = verdicts.loc[list(dict.fromkeys(det.verdicts["verdicts"])), list(dict.fromkeys(det.verdicts["verdict"]))]
    verdict_frame = (100 * verdicts).round(1).rename(columns=lambda c: f"{c} %")
    return (
        captioned(label_frame.rename_axis("labels").reset_index(), f"Pointwise labels: the strict merge ({SIM})"),
        captioned(
            verdict_frame.rename_axis("verdicts").reset_index(), f"Pairwise verdicts: the conservative merge ({SIM})"
        ),
    )


def _hatched_bars(ax: Axes, frame: pd.DataFrame, x: str, hue: str) -> None:
    order = list(dict.fromkeys(frame[hue]))
    sns.barplot(data=frame, x=x, y="share", hue=hue, hue_order=order, palette=palette(len(order)), ax=ax)
    for container, hatch in zip(ax.containers, ("", "//", "..", "xx", "\\\\"), strict=False):
        for bar in container:
            bar.set_hatch(hatch)
            bar.set_edgecolor("0.2")
    ax.legend(fontsize=7)


def adjudication_figure(det: SaerDetection) -> Figure:
    """Label shares under the strict merge (left) and verdict shares under the conservative merge (right)."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    _hatched_bars(axes[0], det.labels, "label", "labels")
    axes[0].set_title(f"Pointwise labels, strict merge ({SIM})", fontsize=10)
    _hatched_bars(axes[1], det.verdicts, "verdict", "verdicts")
    axes[1].set_title(f"Pairwise verdicts, conservative merge ({SIM})", fontsize=10)
    return _done(fig)


# ------------------------------------------------------------------------------------------------ re-evaluation
def _k(run: DetectionRun) -> int:
    return reevaluation_config(run.config).top_k


def reevaluation_text(run: DetectionRun) -> str:
    """The judged users and pairs behind the re-evaluation study (Markdown)."""
    gaps = run.reevaluation.gaps
    a, b = gaps.attrs["recommenders"]
    return (
        f"{gaps.attrs['users']} judged users, {gaps.attrs['pairs']:,} distinct (user, item) pairs; every gap is "
        f"{a} − {b}, with a {{term}}`percentile bootstrap` 95 % CI over users {{cite:p}}`efron1979bootstrap`."
    )


def _users_needed(det: ReevalDetection, metric: str, source: str, largest: int) -> str:
    row = det.users_needed[(det.users_needed["metric"] == metric) & (det.users_needed["source"] == source)]
    if row.empty:
        return "-"
    n = float(row["users_for_95%"].iloc[0])
    return f"{n:.0f}" if np.isfinite(n) else f"more than {largest}"


def reevaluation_table(run: DetectionRun) -> Styler:
    """Per judge (the truth, then each noise): both gaps with CIs and the judged users for 95 % correct order."""
    det, k = run.reevaluation, _k(run)
    largest = max(run.config.user_sizes)
    rows = []
    for key, grp in det.gaps.groupby("source", sort=False):
        source, by = str(key), grp.set_index("metric")
        rows.append(
            {
                "judge": source if source == "truth" else f"{SIM}, σ = {source.removeprefix('noise ')}",
                f"Avg.Score@{k} gap [95 % CI]": estimate_cell(
                    by.loc["avg", "gap"], by.loc["avg", "gap_lo"], by.loc["avg", "gap_hi"]
                ),
                f"P_ser@{k} gap [95 % CI]": estimate_cell(
                    by.loc["p_ser", "gap"], by.loc["p_ser", "gap_lo"], by.loc["p_ser", "gap_hi"]
                ),
                "users for 95 % correct order (Avg.Score)": "-"
                if source == "truth"
                else _users_needed(det, "avg", source, largest),
                "users for 95 % correct order (P_ser)": "-"
                if source == "truth"
                else _users_needed(det, "p_ser", source, largest),
            }
        )
    a, b = det.gaps.attrs["recommenders"]
    return captioned(pd.DataFrame(rows), f"The gap {a} − {b} as judge noise grows ({SIM})")


def reevaluation_figure(run: DetectionRun) -> Figure:
    """Avg.Score@k and P_ser@k gaps (with CI) between the two recommenders per judge, against the true gap."""
    det, k = run.reevaluation, _k(run)
    a, b = det.gaps.attrs["recommenders"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, metric, label in ((axes[0], "avg", f"Avg.Score@{k} gap"), (axes[1], "p_ser", f"P_ser@{k} gap")):
        g = det.gaps[det.gaps["metric"] == metric]
        truth = g[g["source"] == "truth"].iloc[0]
        noisy = g[g["source"] != "truth"]
        x = noisy["source"].str.removeprefix("noise ").astype(float)
        ax.axhspan(truth["gap_lo"], truth["gap_hi"], color="0.85", label="truth's 95 % CI")
        ax.axhline(truth["gap"], **_TRUTH_STYLE, label="truth (scored by g)")
        ax.axhline(0, color="0.5", lw=0.8)
        _measured(ax, x, noisy["gap"], noisy["gap_lo"], noisy["gap_hi"], 0, "measured (95 % CI over users)")
        ax.set(xlabel="score noise σ", ylabel=f"{label} ({a} − {b})")
        ax.legend(fontsize=8)
    fig.suptitle(f"The gap between {a} and {b} as judge noise grows ({SIM})")
    return _done(fig)


def ordering_figure(run: DetectionRun) -> Figure:
    """Share of samples ordering the two recommenders as the truth does, by judged users, per metric and noise."""
    det, k = run.reevaluation, _k(run)
    a, b = det.gaps.attrs["recommenders"]
    sources = list(dict.fromkeys(det.ordering["source"]))
    colours = palette(len(sources))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for ax, metric, label in ((axes[0], "avg", f"Avg.Score@{k}"), (axes[1], "p_ser", f"P_ser@{k}")):
        part = det.ordering[det.ordering["metric"] == metric]
        for j, src in enumerate(sources):
            grp = part[part["source"] == src]
            ax.plot(
                grp["users"],
                grp["correct_order"],
                MARKERS[j % len(MARKERS)] + "-",
                color=colours[j],
                label=f"σ = {src.removeprefix('noise ')}",
            )
        ax.axhline(0.95, **_TRUTH_STYLE, label="95 %")
        _log_ticks(ax, sorted(set(part["users"])))
        ax.set(xlabel="judged users per sample (log scale)", title=label, ylim=(0, 1.02))
        ax.legend(fontsize=8)
    axes[0].set_ylabel("share ordering them as the truth does")
    fig.suptitle(f"Judged users to order {a} and {b} as the truth does ({SIM})")
    return _done(fig)


# ------------------------------------------------------------------------------------------------ the chapter
def forest_figure(run: DetectionRun) -> Figure:
    """The chapter's headline detection rates with their Wilson CIs, each beside the value its error model implies."""
    adv = run.saer.adversarial.pivot(index="context_neglect", columns="outcome", values=["share", "lo", "hi"])
    rows = []
    for c in adv.index:
        label = f"adversarial detected, c = {c:g}"
        rows.append(
            (
                label,
                "measured (95 % CI)",
                adv.loc[c, ("share", "correct")],
                adv.loc[c, ("lo", "correct")],
                adv.loc[c, ("hi", "correct")],
            )
        )
        rows.append((label, "truth (error model)", adv.loc[c, ("share", "expected correct")], np.nan, np.nan))
    for r in run.saer.consistency.itertuples():
        label = f"swap consistency, b = {r.bias:g}"
        rows.append((label, "measured (95 % CI)", r.consistency, r.lo, r.hi))
        rows.append((label, "truth (error model)", r.expected, np.nan, np.nan))
    frame = pd.DataFrame(rows, columns=["label", "series", "value", "low", "high"])
    frame[["value", "low", "high"]] = 100 * frame[["value", "low", "high"]].astype(float)
    fig = forest_plot(frame, group="series", xlabel="% of pairs (95 % CI)", width=8.0)
    fig.axes[0].set_title(f"What SAER's safeguards detect ({SIM})", fontsize=10)
    fig.tight_layout()
    return fig


def _gap_takeaway(run: DetectionRun) -> str:
    """The true Avg.Score gap, the noise levels whose CI cannot order the two recommenders or orders them wrongly."""
    gaps = run.reevaluation.gaps[run.reevaluation.gaps["metric"] == "avg"].set_index("source")
    a, b = run.reevaluation.gaps.attrs["recommenders"]
    truth, noisy = gaps.loc["truth"], gaps.drop(index="truth")
    sigmas = [str(src).removeprefix("noise ") for src in noisy.index]
    unresolved, reversed_ = [], []
    for sigma, r in zip(sigmas, noisy.itertuples(), strict=True):
        if _ci_holds(0.0, r.gap_lo, r.gap_hi):
            unresolved.append(sigma)
        elif np.sign(r.gap) != np.sign(truth["gap"]):
            reversed_.append(sigma)
    parts = []
    if unresolved:
        parts.append(
            f"at σ = {', '.join(unresolved)} the measured gap's CI includes 0: there this run cannot order them"
        )
    if reversed_:
        parts.append(
            f"at σ = {', '.join(reversed_)} the CI excludes 0 on the wrong side: the judge orders them wrongly"
        )
    if not parts:
        parts.append("the measured gap's CI excludes 0 on the truth's side at every noise level tried")
    widths = (noisy["gap_hi"] - noisy["gap_lo"]).to_numpy()
    return (
        f"The true Avg.Score@{_k(run)} gap {a} − {b} is "
        f"{estimate_cell(truth['gap'], truth['gap_lo'], truth['gap_hi'])}; {'; '.join(parts)}. The measured CI is "
        f"{widths[0]:.3f} wide at σ = {sigmas[0]} and {widths[-1]:.3f} at σ = {sigmas[-1]}."
    )


def takeaways_items(run: DetectionRun) -> list[str]:
    """The chapter's findings from this run, each claiming only what its CI allows."""
    out = []
    noise = run.noise
    held = [_ci_holds(r.expected_mae, r.mae_lo, r.mae_hi) for r in noise.itertuples()]
    missed = [f"σ = {r.noise:g}" for r, ok in zip(noise.itertuples(), held, strict=True) if not ok]
    out.append(
        f"The measured {{term}}`MAE`'s 95 % CI holds the MAE the error model implies at {sum(held)} of {len(held)} "
        "noise levels" + (f"; it misses at {', '.join(missed)}." if missed else ".")
    )
    for interval, grp in run.coverage.groupby("interval", sort=False):
        metric, _, method = str(interval).partition(", ")
        name = f"{method} CI of the {metric}" if method else f"{metric} CI"
        low = grp[grp["coverage_hi"] < 0.95]
        if len(low):
            worst = low.loc[low["coverage"].idxmin()]
            out.append(
                f"The {name} covers less than 95 % at n = {', '.join(str(int(n)) for n in low['n'])} judged "
                f"pairs (coverage CI entirely below 95 %; at n = {int(worst['n'])}: "
                f"{_pct(worst['coverage'], worst['coverage_lo'], worst['coverage_hi'])} %): read small samples' "
                "intervals as too narrow."
            )
        else:
            out.append(
                f"The {name} is not shown to cover less than 95 % at any sample size tried "
                f"({', '.join(str(int(n)) for n in grp['n'])} pairs)."
            )
    sep = run.separation
    enough = "fewer than" if sep.n80_statsmodels < PAPER_PAIRS else "more than"
    out.append(
        f"Telling templates with the paper's CoT and LtM MAEs apart with 80 % power takes about "
        f"{sep.n80_statsmodels:,.0f} judged pairs (statsmodels, d = {sep.effect_size:.2f}), {enough} the paper's "
        f"{PAPER_PAIRS:,}."
    )
    _, true_q = _arena_truth(run.arena)
    worst_b = float(run.arena["bias"].max())
    at = run.arena[run.arena["bias"] == worst_b].set_index("protocol")["Q"]
    single, adj = float(at["single order (paper)"]), float(at["both orders, adjudicated"])
    out.append(
        f"At position bias {worst_b:g} the paper's single-order {{term}}`Q` reads {_q_with_error(single, true_q)} "
        f"against a true {estimate_cell(true_q)}; adjudicated over both orders it reads {_q_with_error(adj, true_q)}. "
        "These Q values have no CI here: they are one panel's, judged once."
    )
    adv = run.saer.adversarial
    correct = adv[adv["outcome"] == "correct"].set_index("context_neglect")
    expected = adv[adv["outcome"] == "expected correct"].set_index("context_neglect")["share"]
    inside = sum(_ci_holds(expected[c], r.lo, r.hi) for c, r in correct.iterrows())
    first, last = correct.iloc[0], correct.iloc[-1]
    out.append(
        f"Adversarial detection goes from {_pct(first['share'], first['lo'], first['hi'])} % at context neglect "
        f"{correct.index[0]:g} to {_pct(last['share'], last['lo'], last['hi'])} % at {correct.index[-1]:g}; the "
        f"Wilson CI holds the expected 1 − c at {inside} of {len(correct)} levels."
    )
    cons = run.saer.consistency
    biased = cons[cons["bias"] > 0]
    detected = biased[biased["hi"] < 1.0]
    if len(detected):
        r = detected.iloc[0]
        out.append(
            f"The smallest position bias the swap test detects in this run is b = {r['bias']:g}: swap consistency "
            f"{_pct(r['consistency'], r['lo'], r['hi'])} %, a CI that stays below the 100 % of an unbiased judge."
        )
    elif len(biased):
        r = biased.iloc[-1]
        out.append(
            f"Even at b = {r['bias']:g} swap consistency is {_pct(r['consistency'], r['lo'], r['hi'])} %, a CI that "
            "reaches 100 %: this run cannot tell the biased judge from an unbiased one."
        )
    out.append(_gap_takeaway(run))
    return out
