"""Chapter 5 ("What the protocols detect"): one function per study lays out a
:class:`~recjudge_utils.experiments.protocol_detection.DetectionRun`'s figures and tables. Every number is the
simulated judge's (each note names its error model, each figure draws the truth in). Figure labels and table headers
are written here beside the code that fills them, each table's caption is the notebook's, and
``text/protocol_detection.yaml`` holds the words that depend on the run: the notes, the section texts and the
takeaways. A new section is one more :data:`_SWEEPS` entry (its note in the text file) and one more study function."""

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
from recjudge_utils.metrics import judge_scores as js
from recjudge_utils.metrics.estimate import Estimate
from recjudge_utils.reporting.callouts import Callout, simulated_judge_note, stand_in_note
from recjudge_utils.reporting.cells import estimate_cell
from recjudge_utils.reporting.claims import and_join, apart, side
from recjudge_utils.reporting.figures import MARKERS, TRUTH_STYLE, done, forest_plot, grouped_bars, measured, palette
from recjudge_utils.reporting.tables import captioned, rows_table
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
#: each section's note on the errors it sweeps, and each study's text before its numbers (keys of the text file)
_SWEEP_NOTES = {"serendipity": "notes.sweeps.serendipity", "arena": "notes.sweeps.arena", "saer": "notes.sweeps.saer",
                "reevaluation": "notes.sweeps.reevaluation", "panels": "notes.sweeps.panels"}  # fmt: skip
_STUDY_TEXTS = {"coverage": "texts.coverage", "separation": "texts.separation", "arena": "texts.arena",
                "saer": "texts.saer", "reevaluation": "texts.reevaluation", "panels": "texts.panels"}  # fmt: skip
#: the error model's parameters a note lists (the seed is the run's; each study offsets it)
_ERRORS = tuple(name for name in SimParameters.model_fields if name != "seed")
#: SAER's two merged annotations: their (source, value) columns and their panel's title
_MERGES = (("labels", "label", f"Pointwise labels, strict merge ({SIM_PREFIX})"),
           ("verdicts", "verdict", f"Pairwise verdicts, conservative merge ({SIM_PREFIX})"))  # fmt: skip
_PANEL = {"acc3": (1, 100), "kappa": (3, 1), "consistency": (1, 100), "bias": (3, 1)}  # measure: cell digits, scale
_PANEL_NAMES = {"acc3": "3-class accuracy", "kappa": "weighted kappa", "bias": "mean error (score − g)",
                "consistency": "position consistency"}  # fmt: skip
#: where a coverage's CI lies against the nominal 95 %, in a cell's words
_NOMINAL = {"above": "above", "below": "below", "contains": "consistent with", "none": "consistent with"}


def _labelled(ax: Axes, x: str, y: str, title: str | None = None) -> None:
    ax.set(xlabel=x, ylabel=y)
    if title is not None:
        ax.set_title(title)
    ax.legend(fontsize=8)


def _panel(ax: Axes, x: Any, series: Sequence[Sequence[Any]], truth: Any, truth_label: str, line: str = "") -> None:
    """Each measured series with its interval, and the truth dashed: one level, or one value per x."""
    for k, (y, low, high, label) in enumerate(series):
        measured(ax, x, y, low, high, k, label, line)
    if isinstance(truth, int | float):
        ax.axhline(truth, **TRUTH_STYLE, label=truth_label)
    else:
        ax.plot(x, truth, **TRUTH_STYLE, label=truth_label)


def _ci(value: Any, low: Any = None, high: Any = None, pct: bool = False) -> str:
    estimate = Estimate.of(value, low, high)
    return estimate_cell(estimate, digits=1, scale=100) if pct else estimate_cell(estimate)


def _row_ci(row: pd.Series, pct: bool = False) -> str:
    """A long frame's row (value, low, high) as a cell."""
    return _ci(row["value"], row["low"], row["high"], pct)


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
    sweep = T(_SWEEP_NOTES[section], **config, templates=[f"{n:.2f}" for n in run.separation.noises])
    return simulated_judge_note(f"{SIM_PREFIX} with {sweep}; every other error as below", fixed)


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
                       "reached": np.isfinite(sep.n80_simulated), "n_max": f"{sep.table['pairs'].max():,.0f}"},
        "arena": {**arena_, "ties": f"{100 * arena_['truth_ties']:.0f}", "q": _ci(arena_["true_q"]),
                  "win": f"{100 * arena_['true_win_rate']:.1f}", "infinite": not np.isfinite(run.arena["Q"]).all()},
        "saer": {"customers": run.saer.customers, "heldout": run.saer.heldout},
        "reevaluation": {"users": gaps["users"], "pairs": f"{gaps['pairs']:,}", "names": gaps["recommenders"]},
        "panels": {k: f"{v:,}" for k, v in run.panels.attrs.items()},
    }  # fmt: skip
    return T(_STUDY_TEXTS[study], **values[study])


def noise(run: detect.DetectionRun, caption: str) -> tuple[Figure, Styler]:
    """MAE (with CI) against the MAE the error model implies, 3-class accuracy and weighted kappa, by score noise."""
    mae, acc3, kappa, implied = (js.measure_by(run.noise, m, "noise")
                                 for m in ("mae", "acc3", "kappa_qw", "expected_mae"))  # fmt: skip
    held, x = detect.implied_in_ci(run.noise), mae.index
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    _panel(left, x, [(mae["value"], mae["low"], mae["high"], "measured MAE (95 % CI)")], implied["value"],
           "truth: the MAE the error model implies")  # fmt: skip
    _labelled(left, "score noise σ (five-level scale)", "MAE against g", f"MAE ({SIM_PREFIX})")
    series = [(m["value"], m["low"], m["high"], name) for m, name in (
        (acc3, "3-class accuracy (Wilson 95 % CI)"), (kappa, "weighted kappa (bootstrap 95 % CI)"))]  # fmt: skip
    _panel(right, x, series, 1.0, "truth: a perfect judge (σ = 0)", line="-")
    _labelled(right, "score noise σ", "agreement with g", f"Accuracy and kappa ({SIM_PREFIX})")
    right.set(ylim=(0, 1.05))
    rows = [
        [f"{s:g}", _row_ci(mae.loc[s]), f"{implied.loc[s, 'value']:.3f}", "yes" if held[s] else "no",
         _row_ci(acc3.loc[s], True), _row_ci(kappa.loc[s])]
        for s in x
    ]  # fmt: skip
    columns = ["score noise σ", "MAE [95 % CI]", "MAE the error model implies", "implied MAE in the CI",
               "3-class accuracy % [95 % CI]", "weighted kappa [95 % CI]"]  # fmt: skip
    return done(fig), rows_table(caption, columns, rows)


def _where(value: Any, low: Any, high: Any, reference: float, tolerance: float = 0.0) -> str:
    return side(Estimate.of(value, low, high), reference, tolerance)


def _coverages(run: detect.DetectionRun) -> pd.DataFrame:
    """The coverage study's ``coverage`` rows (pairs, interval, value, low, high, n), each with its CIs'
    ``mean_width``: the wide view its table and takeaways read."""
    c = run.coverage
    widths = c.loc[c["measure"] == "mean_width"].set_index(["pairs", "interval"])["value"].rename("mean_width")
    return c.loc[c["measure"] == "coverage"].join(widths, on=["pairs", "interval"])


def coverage(run: detect.DetectionRun, caption: str) -> tuple[Figure, Styler]:
    """How often each interval method's 95 % CI holds the truth per sample size (log scale), against 95 %."""
    c = _coverages(run)
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    for k, (name, g) in enumerate(c.groupby("interval", sort=False)):
        measured(ax, g["pairs"], g["value"], g["low"], g["high"], k, str(name), "-" if k == 0 else "-.")
    ax.axhline(0.95, **TRUTH_STYLE, label="nominal 95 %")
    _log_ticks(ax, sorted(set(c["pairs"])))
    ax.set(ylim=(min(0.7, float(c["low"].min()) - 0.02), 1.01))
    title = f"Coverage of 95 % CIs over repeated samples ({SIM_PREFIX}, σ = {run.coverage.attrs.get('noise', '?')})"
    _labelled(ax, "judged pairs per sample (log scale)", "share of CIs holding the truth", title)
    rows = [
        [r.pairs, r.interval, _ci(r.value, r.low, r.high, True), _NOMINAL[_where(r.value, r.low, r.high, 0.95)],
         f"{r.mean_width:.3f}"]
        for r in c.itertuples()
    ]  # fmt: skip
    columns = ["judged pairs per sample", "interval", "coverage % [95 % CI]", "against the nominal 95 %", "mean width"]
    return done(fig), rows_table(caption, columns, rows)


def separation(run: detect.DetectionRun, caption: str) -> tuple[Figure, Styler]:
    """Power to separate two templates with the paper's MAEs, by simulation (with CIs) and by statsmodels."""
    sep, paper = run.separation, detect.PAPER_PAIRS
    t = js.measure_by(sep.table, "power", "pairs")
    analytic = js.measure_by(sep.table, "power_statsmodels", "pairs")["value"]
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    measured(ax, t.index, t["value"], t["low"], t["high"], 0, "simulation (paired t-test, 5 %; Wilson 95 % CI)")
    grid = np.geomspace(t.index.min(), max(t.index.max(), paper), 80)
    ax.plot(grid, sep.power_curve(grid), **TRUTH_STYLE, label=f"statsmodels TTestPower (d = {sep.effect_size:.2f})")
    ax.axhline(0.8, color="0.6", lw=1, label="80 % power")
    ax.axvline(paper, color=palette(2)[1], ls=":", lw=1.5, label=f"the paper's {paper:,} pairs")
    _log_ticks(ax, list(t.index))
    ax.set(ylim=(0, 1.02))
    title = f"Pairs to separate MAE {detect.PAPER_MAES[0]} from {detect.PAPER_MAES[1]} ({SIM_PREFIX})"
    _labelled(ax, "judged pairs (log scale)", "power", title)
    ax.legend(fontsize=8, loc="lower right")
    rows = [[f"{pairs:,}", _row_ci(r, True), f"{100 * analytic[pairs]:.1f}"] for pairs, r in t.iterrows()]
    columns = ["judged pairs", "power by simulation % [95 % CI]", "power by statsmodels %"]
    return done(fig), rows_table(caption, columns, rows)


def _q(row: Any) -> str:
    cell = _ci(row["Q"])
    return f"{cell} ({100 * row['Q_error']:+.0f} %)" if np.isfinite(row["Q_error"]) else cell


def arena(run: detect.DetectionRun, caption: str) -> tuple[Figure, Styler]:
    """Win rate and Q of the tested model per position bias: single order, both orders adjudicated, the truth."""
    a = run.arena
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, (metric, ylabel) in zip(axes, {"win_rate": "win rate of the tested model (ties half)", "Q": "Q"}.items(),
                                    strict=True):  # fmt: skip
        truth = a[a["protocol"] == "truth"]
        ax.plot(truth["bias"], truth[metric], **TRUTH_STYLE, zorder=3, label="truth")
        for k, name in enumerate(detect.ARENA_PROTOCOLS):
            g = a[a["protocol"] == name]
            ax.plot(g["bias"], g[metric], MARKERS[k] + ("-" if k == 0 else ":"), color=palette(2)[k], label=name)
        ax.set(xlabel="position bias b", ylabel=ylabel)
        ax.legend(fontsize=8)
    fig.suptitle(f"{a.attrs.get('tested')} against {a.attrs.get('baseline')} as position bias grows ({SIM_PREFIX})")
    rows = []
    for b, grp in a[a["protocol"] != "truth"].groupby("bias", sort=True):
        single, adj = (grp.set_index("protocol").loc[p] for p in detect.ARENA_PROTOCOLS)
        rows.append([f"{b:g}", f"{100 * single['win_rate']:.1f}", f"{100 * adj['win_rate']:.1f}", _q(single), _q(adj)])
    columns = ["position bias b", "win % single order (paper)", "win % both orders adjudicated", "Q single order",
               "Q adjudicated"]  # fmt: skip
    return done(fig), rows_table(caption, columns, rows)


def _consistencies(run: detect.DetectionRun) -> pd.DataFrame:
    """Swap consistency per position bias (the index, in the sweep's order): value, low, high, n, and the
    consistency the error model implies (``expected``)."""
    cons = run.saer.consistency
    expected = js.measure_by(cons, "expected", "bias")["value"].rename("expected")
    return js.measure_by(cons, "consistency", "bias").join(expected)


def saer(run: detect.DetectionRun, detection_caption: str, consistency_caption: str) -> tuple[Figure, Styler, Styler]:
    """Adversarial detection per context neglect and swap consistency per position bias, with CIs, against the truth."""
    cons, det = _consistencies(run), run.saer.detection
    by = run.saer.adversarial.set_index(["measure", "context_neglect"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    outcomes = {"correct": "genuine list", "tie": "tie", "wrong": "decoy"}
    groups = {o: by.loc[o].reindex(det.index) for o in outcomes}
    series = [(g["value"], g["low"], g["high"], outcomes[o]) for o, g in groups.items()]
    _panel(left, det.index, series, det["expected"], "truth: genuine = 1 − c", line="-")
    title = f"Adversarial detection ({SIM_PREFIX})"
    _labelled(left, "context neglect c", "share of adversarial pairs (95 % CI)", title)
    swap = [(cons["value"], cons["low"], cons["high"], "measured (Wilson 95 % CI)")]
    _panel(right, cons.index, swap, cons["expected"], "truth: the error model's consistency")
    _labelled(right, "position bias b", "swap consistency", f"Swap consistency ({SIM_PREFIX})")
    right.set(ylim=(0, 1.05))
    detection = [
        [f"{r.Index:g}", _ci(r.correct, r.low, r.high, True), *(f"{100 * v:.1f}" for v in (r.tie, r.wrong, r.expected))]
        for r in det.itertuples()
    ]
    consistency = [[f"{r.Index:g}", _ci(r.value, r.low, r.high, True), f"{100 * r.expected:.1f}"]
                   for r in cons.itertuples()]  # fmt: skip
    return (
        done(fig),
        rows_table(detection_caption, ["context neglect c", "genuine list picked % [95 % CI]", "tie %",
                                       "decoy picked %", "truth: 1 − c (%)"], detection),
        rows_table(consistency_caption, ["position bias b", "swap consistency % [95 % CI]",
                                         "truth: the error model's consistency %"], consistency),
    )  # fmt: skip


def adjudication(run: detect.DetectionRun, labels_caption: str, verdicts_caption: str
                 ) -> tuple[Figure, Styler, Styler]:  # fmt: skip
    """Label shares (with kappa against the truth) under the strict merge, verdict shares under the conservative."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    tables = []
    frames, captions = (run.saer.labels, run.saer.verdicts), (labels_caption, verdicts_caption)
    for ax, frame, (source, value, title), caption in zip(axes, frames, _MERGES, captions, strict=True):
        shares = frame.pivot(index=source, columns=value, values="share")
        shares = shares.loc[list(dict.fromkeys(frame[source])), list(dict.fromkeys(frame[value]))]
        grouped_bars(ax, list(shares.columns), {s: shares.loc[s].to_numpy() for s in shares.index}, edgecolor="0.2")
        ax.set(xlabel=value, ylabel="share")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7)
        shown = (100 * shares).round(1).rename(columns=lambda c: f"{c} %")
        if "kappa_vs_truth" in frame:
            kappa = frame.groupby(source, sort=False)["kappa_vs_truth"].first().map("{:.2f}".format)
            shown["weighted kappa with the truth"] = ["(the truth)" if s == "truth" else kappa[s] for s in shown.index]
        tables.append(captioned(shown.rename_axis(source).reset_index(), caption))
    return done(fig), tables[0], tables[1]


def _users(n: float, largest: int) -> str:
    return "-" if np.isnan(n) else f"{n:.0f}" if np.isfinite(n) else f"more than {largest}"


def _gaps(run: detect.DetectionRun, measure: str) -> pd.DataFrame:
    """One metric's gap per judge, the truth first (source, noise, value, low, high, n, users_for_95%; index 0..)."""
    table = run.reevaluation.table
    return table.loc[table["measure"] == measure].reset_index(drop=True)


def reevaluation(run: detect.DetectionRun, caption: str) -> tuple[Figure, Figure, Styler]:
    """The two gaps per judge against the true gap; the share of samples ordering the two RSs as the truth does."""
    order, k = run.reevaluation.ordering, detect.reevaluation_config(run.config).top_k
    a, b = run.reevaluation.gaps.attrs["recommenders"]
    metrics = {"avg": f"Avg.Score@{k}", "p_ser": f"P_ser@{k}"}
    by_metric = {m: _gaps(run, m) for m in metrics}
    gaps, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, (m, metric) in zip(axes, metrics.items(), strict=True):
        truth, noisy = by_metric[m].iloc[0], by_metric[m].iloc[1:]
        ax.axhspan(truth["low"], truth["high"], color="0.85", label="truth's 95 % CI")
        ax.axhline(0, color="0.5", lw=0.8)
        series = [(noisy["value"], noisy["low"], noisy["high"], "measured (95 % CI over users)")]
        _panel(ax, noisy["noise"], series, float(truth["value"]), "truth (scored by g)")
        _labelled(ax, "score noise σ", f"{metric} gap ({a} − {b})")
    gaps.suptitle(f"The gap between {a} and {b} as judge noise grows ({SIM_PREFIX})")
    ordering, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    noises = list(dict.fromkeys(order["noise"]))
    for ax, (m, metric) in zip(axes, metrics.items(), strict=True):
        for j, s in enumerate(noises):
            g = order[(order["metric"] == m) & (order["noise"] == s)]
            ax.plot(g["users"], g["correct_order"], MARKERS[j % len(MARKERS)] + "-", color=palette(len(noises))[j],
                    label=f"σ = {s:g}")  # fmt: skip
        ax.axhline(0.95, **TRUTH_STYLE, label="95 %")
        _log_ticks(ax, sorted(set(order.loc[order["metric"] == m, "users"])))
        ax.set(xlabel="judged users per sample (log scale)", title=metric, ylim=(0, 1.02))
        ax.legend(fontsize=8)
    axes[0].set_ylabel("share ordering them as the truth does")
    ordering.suptitle(f"Judged users to order {a} and {b} as the truth does ({SIM_PREFIX})")
    largest = max(run.config.user_sizes)
    rows = [
        [avg["source"] if avg["source"] == "truth" else f"{SIM_PREFIX}, σ = {avg['noise']:g}", _row_ci(avg),
         _row_ci(p_ser), _users(avg["users_for_95%"], largest), _users(p_ser["users_for_95%"], largest)]
        for (_, avg), (_, p_ser) in zip(by_metric["avg"].iterrows(), by_metric["p_ser"].iterrows(), strict=True)
    ]  # fmt: skip
    return (
        done(gaps),
        done(ordering),
        rows_table(caption, ["judge", f"Avg.Score@{k} gap [95 % CI]", f"P_ser@{k} gap [95 % CI]",
                             "users for 95 % correct order (Avg.Score)", "users for 95 % correct order (P_ser)"], rows),
    )  # fmt: skip


def panels(run: detect.DetectionRun, caption: str) -> tuple[Figure, Styler]:
    """One judge against two panels of three: each measure with its CI and the calls each asked."""
    p = run.panels
    x = pd.concat([p.loc[p["measure"] == m].assign(label=_PANEL_NAMES[m]) for m in _PANEL])
    fig = forest_plot(x, group="condition", xlabel="estimate (95 % CI): shares, kappa, and the mean error in levels",
                      reference=0.0, reference_label="mean error 0: no offset")  # fmt: skip
    fig.axes[0].set_title(f"What a panel of three buys ({SIM_PREFIX})", fontsize=10)
    by = p.set_index(["condition", "measure"])
    cells = [[c, *(estimate_cell(Estimate.of_row(by.loc[(c, m)]), digits=digits, scale=scale)
                   for m, (digits, scale) in _PANEL.items()),
              f"{int(by.loc[(c, 'calls'), 'value']):,} ({by.loc[(c, 'cost_multiple'), 'value']:.1f} ×)"]
             for c in dict.fromkeys(p["condition"])]  # fmt: skip
    columns = ["judge", "3-class accuracy % [95 % CI]", "weighted kappa [95 % CI]", "position consistency % [95 % CI]",
               "mean error, score − g [95 % CI]", "calls (× one judge's)"]  # fmt: skip
    return done(fig), rows_table(caption, columns, cells)


def _panel_takeaways(run: detect.DetectionRun) -> list[str]:
    p, (one, ind, shared) = run.panels.set_index(["condition", "measure"]), detect.PANEL_CONDITIONS
    e = {(c, m): Estimate.of_row(p.loc[(c, m)], name=_PANEL_NAMES[m]) for c in dict.fromkeys(run.panels["condition"])
         for m in _PANEL}  # fmt: skip
    vs = {k: "overlap" if not apart(x, e[one, k[1]]) else "above" if x.value > e[one, k[1]].value else "below"
          for k, x in e.items()}  # fmt: skip
    words = {c: {w: and_join([e[c, m].name for m in ms if vs[c, m] == w]) for w in ("above", "below", "overlap")}
             for c, ms in ((ind, [*_PANEL][:3]), (shared, [*_PANEL][:2]))}  # fmt: skip
    cells = [(e[ind, m].name, estimate_cell(e[ind, m], digits=digits, scale=scale),
              estimate_cell(e[one, m], digits=digits, scale=scale), scale)
             for m, (digits, scale) in [*_PANEL.items()][:3]]  # fmt: skip
    kept = apart(bias := e[shared, "bias"], x := e[ind, "bias"]) and bias.value > x.value and side(bias, 0) == "above"
    return [T("takeaways.panel_noise", cells=cells, **words[ind]),
            T("takeaways.panel_bias", offset=f"{run.config.panel_offset:g}", shared=estimate_cell(bias), kept=kept,
              independent=estimate_cell(x), **words[shared])]  # fmt: skip


def forest_figure(run: detect.DetectionRun) -> Figure:
    """The chapter's headline detection rates with their Wilson CIs, each beside the value its error model implies."""
    rates = [(f"adversarial detected, c = {r.Index:g}", r.correct, r.low, r.high, r.expected)
             for r in run.saer.detection.itertuples()]  # fmt: skip
    rates += [(f"swap consistency, b = {r.Index:g}", r.value, r.low, r.high, r.expected)
              for r in _consistencies(run).itertuples()]  # fmt: skip
    rows = [row for label, v, lo, hi, t in rates for row in
            ((label, "measured (95 % CI)", v, lo, hi), (label, "truth (error model)", t, None, None))]  # fmt: skip
    frame = pd.DataFrame(rows, columns=["label", "series", "value", "low", "high"])
    frame[["value", "low", "high"]] = 100 * frame[["value", "low", "high"]].astype(float)
    fig = forest_plot(frame, group="series", xlabel="% of pairs (95 % CI)", width=8.0)
    fig.axes[0].set_title(f"What SAER's safeguards detect ({SIM_PREFIX})", fontsize=10)
    return done(fig)


def _coverage_takeaway(interval: str, grp: pd.DataFrame) -> str:
    metric, _, method = interval.partition(", ")
    low = [r for r in grp.itertuples() if _where(r.value, r.low, r.high, 0.95) == "below"]
    worst = min(low, key=lambda r: r.value) if low else None
    return T("takeaways.coverage", metric=metric, method=method, low=", ".join(str(int(r.pairs)) for r in low),
             sizes=", ".join(str(int(n)) for n in grp["pairs"]), worst_n=worst and int(worst.pairs),
             worst=worst and _ci(worst.value, worst.low, worst.high, True))  # fmt: skip


def _gap_takeaway(run: detect.DetectionRun, k: int) -> str:
    avg, (a, b) = _gaps(run, "avg"), run.reevaluation.gaps.attrs["recommenders"]
    truth, noisy = avg.iloc[0], avg.iloc[1:]
    sides = {f"{r.noise:g}": _where(r.value, r.low, r.high, 0.0, 1e-9) for r in noisy.itertuples()}
    wrong = dict(zip(sides, np.sign(noisy["value"]) != np.sign(truth["value"]), strict=True))
    return T("takeaways.gap", k=k, a=a, b=b, truth=_row_ci(truth),
             unresolved=", ".join(s for s, w in sides.items() if w == "contains"),
             reversed=", ".join(s for s, w in sides.items() if w != "contains" and wrong[s]),
             sigmas=list(sides), widths=[f"{w:.3f}" for w in noisy["high"] - noisy["low"]])  # fmt: skip


def takeaways_items(run: detect.DetectionRun) -> list[str]:
    """The chapter's findings from this run, each claiming only what its CI allows."""
    sep, a, det, cons = run.separation, run.arena, run.saer.detection, _consistencies(run)
    held = detect.implied_in_ci(run.noise)
    worst = a[a["bias"] == a["bias"].max()].set_index("protocol")
    biased = [r for r in cons.itertuples() if r.Index > 0]
    detected = [r for r in biased if _where(r.value, r.low, r.high, 1.0) == "below"]
    swap = detected[:1] or biased[-1:]
    return [
        T("takeaways.mae", held=int(held.sum()), levels=len(held),
          missed=", ".join(f"σ = {s:g}" for s in held.index[~held])),
        *(_coverage_takeaway(str(i), grp) for i, grp in _coverages(run).groupby("interval", sort=False)),
        T("takeaways.power", n80=f"{sep.n80_statsmodels:,.0f}", d=f"{sep.effect_size:.2f}",
          paper=f"{detect.PAPER_PAIRS:,}", fewer=sep.n80_statsmodels < detect.PAPER_PAIRS),
        T("takeaways.arena", b=f"{a['bias'].max():g}", truth=_ci(a.attrs["true_q"]),
          single=_q(worst.loc[detect.ARENA_PROTOCOLS[0]]), adjudicated=_q(worst.loc[detect.ARENA_PROTOCOLS[1]])),
        T("takeaways.adversarial", held=int(det["held"].sum()), levels=len(det), c=[f"{c:g}" for c in det.index],
          shares=[_ci(r.correct, r.low, r.high, True) for r in det.itertuples()]),
        *(T("takeaways.swap", detected=bool(detected), b=f"{r.Index:g}", share=_ci(r.value, r.low, r.high, True))
          for r in swap),
        _gap_takeaway(run, detect.reevaluation_config(run.config).top_k),
        *_panel_takeaways(run),
    ]  # fmt: skip
