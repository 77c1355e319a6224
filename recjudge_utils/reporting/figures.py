"""Figures by kind, drawn the same way in every chapter: forest plots, series measured against a truth, stacked
shares, grouped bars, count grids, and a figure that says why it is empty. Colours are seaborn's colour-blind palette
and every series also differs by marker or hatch, so a figure reads in grey scale too. Each function draws on the axes
it is given (or returns a closed figure), so a chapter composes its panels and keeps only its labels.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure

__all__ = [
    "MARKERS",
    "TRUTH_STYLE",
    "count_grid",
    "done",
    "empty_figure",
    "error_bars",
    "forest_plot",
    "grouped_bars",
    "legend_below",
    "measured",
    "palette",
    "stacked_bars",
    "titled",
    "whisker",
]

#: one marker per series, in order, so series stay apart without colour
MARKERS = ("o", "s", "D", "^", "v", "P", "X", "*")
#: one hatch per bar series or segment, in order
_HATCHES = ("", "//", "..", "xx", "\\\\", "++", "--", "oo")
#: the line a figure draws for the truth a measurement is held against
TRUTH_STYLE: dict[str, Any] = {"color": "k", "linestyle": "--", "linewidth": 1.2}


def error_bars(value: Any, low: Any, high: Any) -> np.ndarray:
    """Matplotlib ``yerr``/``xerr`` for intervals around ``value``: a bound on the wrong side of the estimate (a
    rounding error of a bootstrap or Wilson bound, which matplotlib rejects) or a missing one draws no bar."""
    value, low, high = (np.asarray(x, dtype=float) for x in (value, low, high))
    below = np.nan_to_num(np.clip(value - low, 0.0, None))
    above = np.nan_to_num(np.clip(high - value, 0.0, None))
    return np.vstack([below, above])


def done(fig: Figure, rect: tuple[float, float, float, float] = (0, 0, 1, 1)) -> Figure:
    """Lay the figure out within ``rect`` and close it (a notebook displays or glues it; pyplot keeps none)."""
    fig.tight_layout(rect=rect)
    plt.close(fig)
    return fig


def titled(ax: Axes, head: str, tag: str, width: int = 95) -> None:
    """A figure's title: what it shows, then the run it comes from, wrapped to the figure's width."""
    ax.set_title(f"{head}\n{textwrap.fill(tag, width)}", fontsize=8)


def legend_below(fig: Figure, rows: int) -> None:
    """Move a one-axes figure's legend under the axes, so the plot keeps the figure's width."""
    ax = fig.axes[0]
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles, labels, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    fig.set_figheight(fig.get_figheight() + 0.25 * rows + 0.4)
    fig.tight_layout()


def measured(ax: Axes, x: Any, y: Any, low: Any, high: Any, k: int, label: str, line: str = "") -> None:
    """Series ``k`` of measured estimates with their CIs as vertical bars: its marker (plus ``line``, e.g. "-") and
    its colour-blind-safe colour."""
    ax.errorbar(
        x, y, yerr=error_bars(y, low, high), fmt=MARKERS[k] + line, color=palette(k + 1)[k], capsize=3, label=label
    )


def whisker(ax: Axes, x: float, y: float, low: float, high: float, horizontal: bool = True) -> None:
    """A black interval whisker around ``x`` at height ``y`` (nothing for a missing estimate)."""
    if np.isnan(x):
        return
    err = [[max(x - low, 0.0)], [max(high - x, 0.0)]]
    options: dict[str, Any] = {"fmt": "none", "ecolor": "black", "elinewidth": 1.2, "capsize": 4}
    if horizontal:
        ax.errorbar(x, y, xerr=err, **options)
    else:
        ax.errorbar(y, x, yerr=err, **options)


def stacked_bars(
    ax: Axes,
    y: Sequence[float],
    shares: Sequence[Sequence[float]],
    styles: Sequence[tuple[Any, str]],
    labels: Sequence[str] = (),
    *,
    edgecolor: str = "0.25",
    height: float = 0.8,
    annotate_from: float | None = None,
) -> None:
    """Horizontal 100 % bars, one per ``y``: ``shares[i][k]`` is row i's segment k (percent, NaN drawn as 0), in
    colour and hatch ``styles[k]`` and named ``labels[k]`` in the legend. ``annotate_from``: segments at least this
    wide carry their value."""
    left = np.zeros(len(y))
    for k, (colour, hatch) in enumerate(styles):
        values = np.nan_to_num(np.array([row[k] for row in shares], dtype=float))
        label = labels[k] if labels else None
        ax.barh(y, values, left=left, color=colour, hatch=hatch, edgecolor=edgecolor, height=height, label=label)
        if annotate_from is not None:
            box = {"boxstyle": "round,pad=0.15", "facecolor": "white", "alpha": 0.8, "lw": 0}
            for yi, start, share in zip(y, left, values, strict=True):
                if share >= annotate_from:
                    ax.text(start + share / 2, yi, f"{share:.0f}", ha="center", va="center", fontsize=8, bbox=box)
        left += values


def grouped_bars(
    ax: Axes,
    categories: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    colours: Sequence[Any] | None = None,
    hatches: Sequence[str] = _HATCHES,
    edgecolor: str = "white",
    width: float = 0.8,
    intervals: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
) -> None:
    """Vertical bars, one group per category and one bar per series (colour and hatch per series, NaN drawn as 0);
    ``intervals`` gives (low, high) for the series that have them, drawn as black whiskers."""
    colours = list(colours) if colours is not None else palette(len(series))
    x = np.arange(len(categories))
    step = width / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        pos = x + (i - (len(series) - 1) / 2) * step
        v = np.asarray(values, dtype=float)
        ax.bar(
            pos,
            np.nan_to_num(v),
            step,
            color=colours[i],
            hatch=hatches[i % len(hatches)],
            edgecolor=edgecolor,
            label=name,
        )
        if intervals and name in intervals:
            lo, hi = intervals[name]
            ax.errorbar(pos, v, yerr=error_bars(v, lo, hi), fmt="none", ecolor="black", capsize=3, linewidth=1)
    ax.set_xticks(x, list(categories))


def count_grid(panels: Mapping[str, pd.DataFrame], xlabel: str, ylabel: str, title: str, ncols: int = 2) -> Figure:
    """One matrix of counts per panel (a confusion matrix, say), titled by its key, ``ncols`` to a row: greys read by
    lightness with the counts written in, so it reads the same in grey scale. Returns the closed figure."""
    ncols = min(ncols, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.3 * ncols, 3.6 * nrows + 0.4), squeeze=False)
    for ax, (head, counts) in zip(axes.flat, panels.items(), strict=False):
        sns.heatmap(counts, annot=True, fmt="d", cmap="Greys", cbar=False, ax=ax, linewidths=0.5, linecolor="0.8")
        ax.set_title(head, fontsize=10)
        ax.set(xlabel=xlabel, ylabel=ylabel)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_axis_off()
    fig.suptitle(title, fontsize=8)
    return done(fig)


def palette(n: int) -> list[tuple[float, float, float]]:
    """``n`` colours from seaborn's colour-blind-safe palette."""
    return list(sns.color_palette("colorblind", n))


def empty_figure(text: str = "nothing to plot: no parsed judgment", width: float = 7.0) -> Figure:
    """A figure saying why it has nothing to show: the page keeps its figure and the reader sees the reason."""
    fig, ax = plt.subplots(figsize=(width, 1.2))
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=11, color="0.3", transform=ax.transAxes)
    ax.set_axis_off()
    plt.close(fig)
    return fig


def forest_plot(
    rows: pd.DataFrame,
    label: str = "label",
    value: str = "value",
    low: str = "low",
    high: str = "high",
    group: str | None = None,
    xlabel: str = "estimate (95% CI)",
    reference: float | None = None,
    reference_label: str = "",
    width: float = 7.0,
) -> Figure:
    """One row per estimate, its CI as a horizontal bar (none: a point alone); ``group`` colours and shapes the series,
    ``reference`` draws a vertical line (chance, the paper's value). Closed; :func:`empty_figure` when empty."""
    if rows.empty:
        return empty_figure(width=width)
    labels = list(dict.fromkeys(rows[label].astype(str)))
    groups: Sequence[object] = list(dict.fromkeys(rows[group])) if group else [None]
    colours = palette(len(groups))
    height = 0.9 + 0.38 * len(labels) * max(1, len(groups)) ** 0.5
    fig, ax = plt.subplots(figsize=(width, height))
    step = 0.8 / max(1, len(groups))
    for k, g in enumerate(groups):
        part = rows if g is None else rows[rows[group] == g]
        y = np.array([labels.index(str(x)) for x in part[label]], dtype=float)
        y = y + (k - (len(groups) - 1) / 2) * step
        v = part[value].astype(float)
        lo = part[low].astype(float) if low in part else v
        hi = part[high].astype(float) if high in part else v
        ax.errorbar(
            v,
            y,
            xerr=error_bars(v, lo, hi),
            fmt=MARKERS[k % len(MARKERS)],
            color=colours[k],
            capsize=3,
            label=None if g is None else str(g),
        )
    if reference is not None:
        ax.axvline(reference, color="0.4", linestyle="--", linewidth=1, label=reference_label or None)
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)
    if group or reference_label:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return done(fig)
