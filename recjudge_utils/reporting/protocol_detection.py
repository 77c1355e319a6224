"""Chapter 5 ("What the protocols detect"), words in ``text/protocol_detection.yaml``: one function per study lays out
a :class:`~recjudge_utils.experiments.protocol_detection.DetectionRun`'s figures and tables. Every number is the
simulated judge's (each note names its error model, each figure draws the truth in); a new section is one more
:data:`_SWEEPS` entry (its note in the text file) and one more study function."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from pandas.io.formats.style import Styler

from recjudge_utils.experiments import protocol_detection as detect
from recjudge_utils.judge.backends.sim import SIM_PREFIX, SimParameters
from recjudge_utils.reporting.callouts import Callout, simulated_judge_note, stand_in_note
from recjudge_utils.reporting.claims import Estimate, and_join, apart, side
from recjudge_utils.reporting.figures import MARKERS, TRUTH_STYLE, done, forest_plot, grouped_bars, measured, palette
from recjudge_utils.reporting.tables import captioned, text_table
from recjudge_utils.reporting.text import chapter_text

__all__ = [
    "SECTIONS", "adjudication", "arena", "coverage", "data_note", "forest_figure", "judge_note", "noise", "panels",
    "reevaluation", "saer", "section_text", "separation", "takeaways_items",
]  # fmt: skip

T = chapter_text("protocol_detection")
#: the chapter's sections and the simulated judge's errors each one sweeps (the others keep SimParameters' defaults)
_SWEEPS: dict[str, tuple[str, ...]] = {
    "serendipity": ("noise",), "arena": ("position_bias",), "saer": ("context_neglect", "position_bias", "noise"),
    "reevaluation": ("noise",), "panels": ("noise", "position_bias", "leniency", "unparseable"),
}  # fmt: skip
SECTIONS = tuple(_SWEEPS)
#: the error model's parameters a note lists (the seed is the run's; each study offsets it)
_ERRORS = tuple(f.name for f in dataclasses.fields(SimParameters) if f.name != "seed")
_MERGES = (("labels", "label"), ("verdicts", "verdict"))  # SAER's two merged annotations: (source, value) columns
_PANEL = {"acc3": (1, 100), "kappa": (3, 1), "consistency": (1, 100), "bias": (3, 1)}  # measure: cell digits, scale


def _f(key: str, **values: Any) -> str:
    return T(f"figures.{key}", sim=SIM_PREFIX, **values)


def _labelled(ax: Axes, key: str, **values: Any) -> None:
    ax.set(xlabel=_f(f"{key}.x", **values), ylabel=_f(f"{key}.y", **values))
    if "title" in T.raw(f"figures.{key}"):
        ax.set_title(_f(f"{key}.title", **values))
    ax.legend(fontsize=8)


def _panel(ax: Axes, key: str, x: Any, series: Sequence[Sequence[Any]], truth: Any, line: str = "", **v: Any) -> None:
    for k, (y, low, high, label) in enumerate(series):
        measured(ax, x, y, low, high, k, label, line)
    if isinstance(truth, int | float):
        ax.axhline(truth, **TRUTH_STYLE, label=_f(f"{key}.truth"))
    else:
        ax.plot(x, truth, **TRUTH_STYLE, label=_f(f"{key}.truth"))
    _labelled(ax, key, **v)


def _ci(value: Any, low: Any = None, high: Any = None, pct: bool = False) -> str:
    return Estimate.of(value, low, high).cell(1, 100) if pct else Estimate.of(value, low, high).cell()


def _log_ticks(ax: Axes, values: Sequence[float]) -> None:
    ax.set(xscale="log", xticks=list(values), xticklabels=[f"{v:,.0f}" for v in values])
    ax.minorticks_off()


def judge_note(run: detect.DetectionRun, section: str) -> Callout:
    """The simulated judge's note for one section: the errors it sweeps in the title line, the others as set."""
    if section not in _SWEEPS:
        raise ValueError(f"unknown section {section!r}; one of {', '.join(SECTIONS)}")
    config = {k: ", ".join(f"{x:g}" for x in v) if isinstance(v, tuple) else f"{v:g}"
              for k, v in dataclasses.asdict(run.config).items()}  # fmt: skip
    fixed = {name: float(getattr(SimParameters(), name)) for name in _ERRORS if name not in _SWEEPS[section]}
    sweep = T(f"notes.sweeps.{section}", **config, templates=[f"{n:.2f}" for n in run.separation.noises])
    return simulated_judge_note(T("notes.judge", sim=SIM_PREFIX, sweep=sweep), fixed)


def data_note(run: detect.DetectionRun) -> Callout | None:
    """A stand-in note when the chapter's data are not the papers' (None otherwise)."""
    stand_in = "[STAND-IN]" in run.data_label
    return stand_in_note(run.data_label, T("notes.data_paper"), T("notes.data_detail")) if stand_in else None


def section_text(run: detect.DetectionRun, study: str) -> str:
    """The Markdown before a study's numbers (coverage, separation, arena, saer, reevaluation): what it samples."""
    cov, sep, arena_, gaps = run.coverage.attrs, run.separation, run.arena.attrs, run.reevaluation.gaps.attrs
    values: dict[str, dict[str, Any]] = {
        "coverage": {"noise": f"{cov['noise']:g}", "mae": f"{cov['true_mae']:.3f}", "repeats": run.config.repeats,
                     "acc": f"{100 * cov['true_acc']:.1f}", "n_boot": run.config.n_boot},
        "separation": {"noises": [f"{n:.2f}" for n in sep.noises], "maes": [f"{m:.3f}" for m in sep.maes],
                       "papers": detect.PAPER_MAES, "d": f"{sep.effect_size:.3f}", "n80": f"{sep.n80_statsmodels:,.0f}",
                       "paper_pairs": f"{detect.PAPER_PAIRS:,}", "simulated": f"{sep.n80_simulated:,.0f}",
                       "reached": np.isfinite(sep.n80_simulated), "n_max": f"{sep.table['n'].max():,.0f}"},
        "arena": {**arena_, "ties": f"{100 * arena_['truth_ties']:.0f}", "q": _ci(arena_["true_q"]),
                  "win": f"{100 * arena_['true_win_rate']:.1f}", "infinite": not np.isfinite(run.arena["Q"]).all()},
        "saer": {"customers": run.saer.customers, "heldout": run.saer.heldout},
        "reevaluation": {"users": gaps["users"], "pairs": f"{gaps['pairs']:,}", "names": gaps["recommenders"]},
        "panels": {k: f"{v:,}" for k, v in run.panels.attrs.items()},
    }  # fmt: skip
    return T(f"texts.{study}", **values[study])


def noise(run: detect.DetectionRun) -> tuple[Figure, Styler]:
    """MAE (with CI) against the MAE the error model implies, 3-class accuracy and weighted kappa, by score noise."""
    n = run.noise
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    _panel(left, "mae", n["noise"], [(n["mae"], n["mae_lo"], n["mae_hi"], _f("mae.measured"))], n["expected_mae"])
    bounds = {"acc3": ("acc3_wilson_lo", "acc3_wilson_hi"), "kappa_qw": ("kappa_lo", "kappa_hi")}
    series = [(n[y], n[lo], n[hi], _f(f"agreement.{y}")) for y, (lo, hi) in bounds.items()]
    _panel(right, "agreement", n["noise"], series, 1.0, line="-")
    right.set(ylim=(0, 1.05))
    rows = [
        [f"{r.noise:g}", _ci(r.mae, r.mae_lo, r.mae_hi), f"{r.expected_mae:.3f}",
         T("cells.held" if r.implied_in_ci else "cells.missed"), _ci(r.acc3, r.acc3_wilson_lo, r.acc3_wilson_hi, True),
         _ci(r.kappa_qw, r.kappa_lo, r.kappa_hi)]
        for r in n.itertuples()
    ]  # fmt: skip
    return done(fig), text_table(T, "captions.noise", "columns.noise", rows, sim=SIM_PREFIX)


def _where(value: Any, low: Any, high: Any, reference: float, tolerance: float = 0.0) -> str:
    return side(Estimate.of(value, low, high), reference, tolerance)


def coverage(run: detect.DetectionRun) -> tuple[Figure, Styler]:
    """How often each interval method's 95 % CI holds the truth per sample size (log scale), against 95 %."""
    c = run.coverage
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    for k, (name, g) in enumerate(c.groupby("interval", sort=False)):
        measured(ax, g["n"], g["coverage"], g["coverage_lo"], g["coverage_hi"], k, str(name), "-" if k == 0 else "-.")
    ax.axhline(0.95, **TRUTH_STYLE, label=_f("coverage.truth"))
    _log_ticks(ax, sorted(set(c["n"])))
    ax.set(ylim=(min(0.7, float(c["coverage_lo"].min()) - 0.02), 1.01))
    _labelled(ax, "coverage", noise=c.attrs.get("noise", "?"))
    rows = [
        [r.n, r.interval, _ci(r.coverage, r.coverage_lo, r.coverage_hi, True),
         T(f"cells.nominal.{_where(r.coverage, r.coverage_lo, r.coverage_hi, 0.95)}"), f"{r.mean_width:.3f}"]
        for r in c.itertuples()
    ]  # fmt: skip
    return done(fig), text_table(T, "captions.coverage", "columns.coverage", rows, sim=SIM_PREFIX)


def separation(run: detect.DetectionRun) -> tuple[Figure, Styler]:
    """Power to separate two templates with the paper's MAEs, by simulation (with CIs) and by statsmodels."""
    sep, t, paper = run.separation, run.separation.table, detect.PAPER_PAIRS
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    measured(ax, t["n"], t["power"], t["power_lo"], t["power_hi"], 0, _f("power.simulated"))
    grid = np.geomspace(t["n"].min(), max(t["n"].max(), paper), 80)
    ax.plot(grid, sep.power_curve(grid), **TRUTH_STYLE, label=_f("power.truth", d=f"{sep.effect_size:.2f}"))
    ax.axhline(0.8, color="0.6", lw=1, label=_f("power.target"))
    ax.axvline(paper, color=palette(2)[1], ls=":", lw=1.5, label=_f("power.paper", n=f"{paper:,}"))
    _log_ticks(ax, list(t["n"]))
    ax.set(ylim=(0, 1.02))
    _labelled(ax, "power", a=detect.PAPER_MAES[0], b=detect.PAPER_MAES[1])
    ax.legend(fontsize=8, loc="lower right")
    rows = [[f"{r.n:,}", _ci(r.power, r.power_lo, r.power_hi, True), f"{100 * r.power_statsmodels:.1f}"]
            for r in t.itertuples()]  # fmt: skip
    return done(fig), text_table(T, "captions.separation", "columns.separation", rows, sim=SIM_PREFIX)


def _q(row: Any) -> str:
    cell = _ci(row["Q"])
    return T("cells.q_error", q=cell, error=f"{100 * row['Q_error']:+.0f}") if np.isfinite(row["Q_error"]) else cell


def arena(run: detect.DetectionRun) -> tuple[Figure, Styler]:
    """Win rate and Q of the tested model per position bias: single order, both orders adjudicated, the truth."""
    a = run.arena
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, metric in zip(axes, ("win_rate", "Q"), strict=True):
        truth = a[a["protocol"] == "truth"]
        ax.plot(truth["bias"], truth[metric], **TRUTH_STYLE, zorder=3, label=_f("arena.truth"))
        for k, name in enumerate(detect.ARENA_PROTOCOLS):
            g = a[a["protocol"] == name]
            ax.plot(g["bias"], g[metric], MARKERS[k] + ("-" if k == 0 else ":"), color=palette(2)[k], label=name)
        ax.set(xlabel=_f("arena.x"), ylabel=_f(f"arena.{metric}"))
        ax.legend(fontsize=8)
    fig.suptitle(_f("arena.title", tested=a.attrs.get("tested"), baseline=a.attrs.get("baseline")))
    rows = []
    for b, grp in a[a["protocol"] != "truth"].groupby("bias", sort=True):
        single, adj = (grp.set_index("protocol").loc[p] for p in detect.ARENA_PROTOCOLS)
        rows.append([f"{b:g}", f"{100 * single['win_rate']:.1f}", f"{100 * adj['win_rate']:.1f}", _q(single), _q(adj)])
    return done(fig), text_table(
        T, "captions.arena", "columns.arena", rows, sim=SIM_PREFIX, true_q=_ci(a.attrs["true_q"])
    )


def saer(run: detect.DetectionRun) -> tuple[Figure, Styler, Styler]:
    """Adversarial detection per context neglect and swap consistency per position bias, with CIs, against the truth."""
    cons, det = run.saer.consistency, run.saer.detection
    by = run.saer.adversarial.set_index(["outcome", "context_neglect"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    groups = {o: by.loc[o].reindex(det.index) for o in T.raw("figures.adversarial.outcomes")}
    series = [(g["share"], g["lo"], g["hi"], _f(f"adversarial.outcomes.{o}")) for o, g in groups.items()]
    _panel(left, "adversarial", det.index, series, det["expected"], line="-")
    swap = [(cons["consistency"], cons["lo"], cons["hi"], _f("consistency.measured"))]
    _panel(right, "consistency", cons["bias"], swap, cons["expected"])
    right.set(ylim=(0, 1.05))
    detection = [
        [f"{r.Index:g}", _ci(r.correct, r.lo, r.hi, True), *(f"{100 * v:.1f}" for v in (r.tie, r.wrong, r.expected))]
        for r in det.itertuples()
    ]
    consistency = [[f"{r.bias:g}", _ci(r.consistency, r.lo, r.hi, True), f"{100 * r.expected:.1f}"]
                   for r in cons.itertuples()]  # fmt: skip
    return (
        done(fig),
        text_table(T, "captions.detection", "columns.detection", detection, sim=SIM_PREFIX),
        text_table(T, "captions.consistency", "columns.consistency", consistency, sim=SIM_PREFIX),
    )


def adjudication(run: detect.DetectionRun) -> tuple[Figure, Styler, Styler]:
    """Label shares (with kappa against the truth) under the strict merge, verdict shares under the conservative."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    tables = []
    for ax, frame, (source, value) in zip(axes, (run.saer.labels, run.saer.verdicts), _MERGES, strict=True):
        shares = frame.pivot(index=source, columns=value, values="share")
        shares = shares.loc[list(dict.fromkeys(frame[source])), list(dict.fromkeys(frame[value]))]
        grouped_bars(ax, list(shares.columns), {s: shares.loc[s].to_numpy() for s in shares.index}, edgecolor="0.2")
        ax.set(xlabel=value, ylabel=_f("adjudication.y"))
        ax.set_title(_f(f"adjudication.{source}"), fontsize=10)
        ax.legend(fontsize=7)
        shown = (100 * shares).round(1).rename(columns=lambda c: f"{c} %")
        if "kappa_vs_truth" in frame:
            kappa = frame.groupby(source, sort=False)["kappa_vs_truth"].first().map("{:.2f}".format)
            shown[T("cells.kappa")] = [T("cells.kappa_truth") if s == "truth" else kappa[s] for s in shown.index]
        tables.append(captioned(shown.rename_axis(source).reset_index(), T(f"captions.{source}", sim=SIM_PREFIX)))
    return done(fig), tables[0], tables[1]


def _users(n: float, largest: int) -> str:
    return T("cells.none") if np.isnan(n) else f"{n:.0f}" if np.isfinite(n) else T("cells.more_users", n=largest)


def reevaluation(run: detect.DetectionRun) -> tuple[Figure, Figure, Styler]:
    """The two gaps per judge against the true gap; the share of samples ordering the two RSs as the truth does."""
    table, order, k = run.reevaluation.table, run.reevaluation.ordering, detect.reevaluation_config(run.config).top_k
    (a, b), truth, noisy = run.reevaluation.gaps.attrs["recommenders"], table.iloc[0], table.iloc[1:]
    gaps, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, m in zip(axes, ("avg", "p_ser"), strict=True):
        ax.axhspan(truth[f"{m}_lo"], truth[f"{m}_hi"], color="0.85", label=_f("gaps.band"))
        ax.axhline(0, color="0.5", lw=0.8)
        series = [(noisy[m], noisy[f"{m}_lo"], noisy[f"{m}_hi"], _f("gaps.measured"))]
        _panel(ax, "gaps", noisy["noise"], series, float(truth[m]), label=_f(f"gaps.{m}", k=k), a=a, b=b)
    gaps.suptitle(_f("gaps.suptitle", a=a, b=b))
    ordering, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    noises = list(dict.fromkeys(order["noise"]))
    for ax, m in zip(axes, ("avg", "p_ser"), strict=True):
        for j, s in enumerate(noises):
            g = order[(order["metric"] == m) & (order["noise"] == s)]
            ax.plot(g["users"], g["correct_order"], MARKERS[j % len(MARKERS)] + "-", color=palette(len(noises))[j],
                    label=_f("ordering.series", sigma=f"{s:g}"))  # fmt: skip
        ax.axhline(0.95, **TRUTH_STYLE, label=_f("ordering.truth"))
        _log_ticks(ax, sorted(set(order.loc[order["metric"] == m, "users"])))
        ax.set(xlabel=_f("ordering.x"), title=_f(f"ordering.{m}", k=k), ylim=(0, 1.02))
        ax.legend(fontsize=8)
    axes[0].set_ylabel(_f("ordering.y"))
    ordering.suptitle(_f("ordering.suptitle", a=a, b=b))
    largest = max(run.config.user_sizes)
    rows = [
        [r.source if r.source == "truth" else T("cells.noisy_judge", sim=SIM_PREFIX, sigma=f"{r.noise:g}"),
         _ci(r.avg, r.avg_lo, r.avg_hi), _ci(r.p_ser, r.p_ser_lo, r.p_ser_hi), _users(r.users_avg, largest),
         _users(r.users_p_ser, largest)]
        for r in table.itertuples()
    ]  # fmt: skip
    return (
        done(gaps),
        done(ordering),
        text_table(T, "captions.reevaluation", "columns.reevaluation", rows, sim=SIM_PREFIX, k=k, a=a, b=b),
    )


def panels(run: detect.DetectionRun) -> tuple[Figure, Styler]:
    """One judge against two panels of three: each measure with its CI and the calls each asked."""
    p = run.panels
    x = pd.concat([p.assign(label=_f(f"panels.{m}"), value=p[m], low=p[f"{m}_lo"], high=p[f"{m}_hi"]) for m in _PANEL])
    fig = forest_plot(x, group="condition", xlabel=_f("panels.x"), reference=0.0, reference_label=_f("panels.zero"))
    fig.axes[0].set_title(_f("panels.title"), fontsize=10)
    cells = [[r["condition"], *(Estimate.of_row(r, m).cell(*d) for m, d in _PANEL.items()),
              T("cells.calls", calls=f"{r['calls']:,}", x=f"{r['cost_multiple']:.1f}")]
             for r in p.to_dict("records")]  # fmt: skip
    return done(fig), text_table(T, "captions.panels", "columns.panels", cells, sim=SIM_PREFIX)


def _panel_takeaways(run: detect.DetectionRun) -> list[str]:
    p, (one, ind, shared) = run.panels.set_index("condition"), detect.PANEL_CONDITIONS
    e = {(c, m): Estimate.of_row(r, m, name=_f(f"panels.{m}")) for c, r in p.iterrows()
         for m in _PANEL}  # fmt: skip
    vs = {k: "overlap" if not apart(x, e[one, k[1]]) else "above" if x.value > e[one, k[1]].value else "below"
          for k, x in e.items()}  # fmt: skip
    words = {c: {w: and_join([e[c, m].name for m in ms if vs[c, m] == w]) for w in ("above", "below", "overlap")}
             for c, ms in ((ind, [*_PANEL][:3]), (shared, [*_PANEL][:2]))}  # fmt: skip
    cells = [(e[ind, m].name, e[ind, m].cell(*d), e[one, m].cell(*d), d[1]) for m, d in [*_PANEL.items()][:3]]
    kept = apart(bias := e[shared, "bias"], x := e[ind, "bias"]) and bias.value > x.value and side(bias, 0) == "above"
    return [T("takeaways.panel_noise", cells=cells, **words[ind]),
            T("takeaways.panel_bias", offset=f"{run.config.panel_offset:g}", shared=bias.cell(), kept=kept,
              independent=x.cell(), **words[shared])]  # fmt: skip


def forest_figure(run: detect.DetectionRun) -> Figure:
    """The chapter's headline detection rates with their Wilson CIs, each beside the value its error model implies."""
    rates = [(_f("forest.adversarial", c=f"{r.Index:g}"), r.correct, r.lo, r.hi, r.expected)
             for r in run.saer.detection.itertuples()]  # fmt: skip
    rates += [(_f("forest.swap", b=f"{r.bias:g}"), r.consistency, r.lo, r.hi, r.expected)
              for r in run.saer.consistency.itertuples()]  # fmt: skip
    rows = [row for label, v, lo, hi, t in rates for row in
            ((label, _f("forest.measured"), v, lo, hi), (label, _f("forest.truth"), t, None, None))]  # fmt: skip
    frame = pd.DataFrame(rows, columns=["label", "series", "value", "low", "high"])
    frame[["value", "low", "high"]] = 100 * frame[["value", "low", "high"]].astype(float)
    fig = forest_plot(frame, group="series", xlabel=_f("forest.x"), width=8.0)
    fig.axes[0].set_title(_f("forest.title"), fontsize=10)
    return done(fig)


def _coverage_takeaway(interval: str, grp: pd.DataFrame) -> str:
    metric, _, method = interval.partition(", ")
    low = [r for r in grp.itertuples() if _where(r.coverage, r.coverage_lo, r.coverage_hi, 0.95) == "below"]
    worst = min(low, key=lambda r: r.coverage) if low else None
    return T("takeaways.coverage", metric=metric, method=method, low=", ".join(str(int(r.n)) for r in low),
             sizes=", ".join(str(int(n)) for n in grp["n"]), worst_n=worst and int(worst.n),
             worst=worst and _ci(worst.coverage, worst.coverage_lo, worst.coverage_hi, True))  # fmt: skip


def _gap_takeaway(run: detect.DetectionRun, k: int) -> str:
    table, (a, b) = run.reevaluation.table, run.reevaluation.gaps.attrs["recommenders"]
    truth, noisy = table.iloc[0], table.iloc[1:]
    sides = {f"{r.noise:g}": _where(r.avg, r.avg_lo, r.avg_hi, 0.0, 1e-9) for r in noisy.itertuples()}
    wrong = dict(zip(sides, np.sign(noisy["avg"]) != np.sign(truth["avg"]), strict=True))
    return T("takeaways.gap", k=k, a=a, b=b, truth=_ci(truth["avg"], truth["avg_lo"], truth["avg_hi"]),
             unresolved=", ".join(s for s, w in sides.items() if w == "contains"),
             reversed=", ".join(s for s, w in sides.items() if w != "contains" and wrong[s]),
             sigmas=list(sides), widths=[f"{w:.3f}" for w in noisy["avg_hi"] - noisy["avg_lo"]])  # fmt: skip


def takeaways_items(run: detect.DetectionRun) -> list[str]:
    """The chapter's findings from this run, each claiming only what its CI allows."""
    noise_, sep, a, det, cons = run.noise, run.separation, run.arena, run.saer.detection, run.saer.consistency
    worst = a[a["bias"] == a["bias"].max()].set_index("protocol")
    biased = [r for r in cons.itertuples() if r.bias > 0]
    detected = [r for r in biased if _where(r.consistency, r.lo, r.hi, 1.0) == "below"]
    swap = detected[:1] or biased[-1:]
    return [
        T("takeaways.mae", held=int(noise_["implied_in_ci"].sum()), levels=len(noise_),
          missed=", ".join(T("takeaways.sigma", s=f"{s:g}") for s in noise_.loc[~noise_["implied_in_ci"], "noise"])),
        *(_coverage_takeaway(str(i), grp) for i, grp in run.coverage.groupby("interval", sort=False)),
        T("takeaways.power", n80=f"{sep.n80_statsmodels:,.0f}", d=f"{sep.effect_size:.2f}",
          paper=f"{detect.PAPER_PAIRS:,}", fewer=sep.n80_statsmodels < detect.PAPER_PAIRS),
        T("takeaways.arena", b=f"{a['bias'].max():g}", truth=_ci(a.attrs["true_q"]),
          single=_q(worst.loc[detect.ARENA_PROTOCOLS[0]]), adjudicated=_q(worst.loc[detect.ARENA_PROTOCOLS[1]])),
        T("takeaways.adversarial", held=int(det["held"].sum()), levels=len(det), c=[f"{c:g}" for c in det.index],
          shares=[_ci(r.correct, r.lo, r.hi, True) for r in det.itertuples()]),
        *(T("takeaways.swap", detected=bool(detected), b=f"{r.bias:g}", share=_ci(r.consistency, r.lo, r.hi, True))
          for r in swap),
        _gap_takeaway(run, detect.reevaluation_config(run.config).top_k),
        *_panel_takeaways(run),
    ]  # fmt: skip
