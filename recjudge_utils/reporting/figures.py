"""Figures every chapter draws the same way: a forest plot of headline estimates with their CIs.

Colours come from seaborn's colour-blind palette and every series also differs by marker shape, so a figure reads
in grey scale too.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from recjudge_utils.reporting.display import error_bars

__all__ = ["MARKERS", "empty_figure", "forest_plot", "palette"]

#: one marker per series, in order, so series stay apart without colour
MARKERS = ("o", "s", "D", "^", "v", "P", "X", "*")


def palette(n: int) -> list[tuple[float, float, float]]:
    """``n`` colours from seaborn's colour-blind-safe palette."""
    return list(sns.color_palette("colorblind", n))


def empty_figure(text: str = "nothing to plot: no parsed judgment", width: float = 7.0) -> Figure:
    """A figure that says why it has nothing to show, where a chapter's judge returned nothing usable: the page
    keeps its figure (and its caption's number) and the reader sees the reason instead of a blank or a crash."""
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
    """One row per estimate, its CI as a horizontal bar; ``group`` (optional) colours and shapes the series, and
    ``reference`` draws a vertical line (chance, no difference, the paper's value). Rows without an interval are
    drawn as a point alone. Returns the closed figure (display it, or glue it); with no row, an
    :func:`empty_figure` that says so."""
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
            v, y, xerr=error_bars(v, lo, hi), fmt=MARKERS[k % len(MARKERS)], color=colours[k], capsize=3,
            label=None if g is None else str(g),
        )  # fmt: skip
    if reference is not None:
        ax.axvline(reference, color="0.4", linestyle="--", linewidth=1, label=reference_label or None)
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)
    if group or reference_label:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    plt.close(fig)
    return fig
