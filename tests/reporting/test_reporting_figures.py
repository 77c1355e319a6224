"""The shared forest plot: one row per estimate, CIs as bars, series apart by colour and marker."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest
from matplotlib.colors import to_hex

from recjudge_utils.reporting.figures import MARKERS, forest_plot, palette


def test_forest_plot_draws_one_bar_per_estimate_and_a_reference() -> None:
    rows = pd.DataFrame(
        {
            "label": ["cot", "cot", "base", "base"],
            "judge": ["a", "b", "a", "b"],
            "value": [0.8, 1.1, 1.2, None],
            "low": [0.6, 0.9, 1.0, None],
            "high": [1.0, 1.3, 1.4, None],
        }
    )
    fig = forest_plot(rows, group="judge", reference=1.0, reference_label="chance")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["cot", "base"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["chance", "a", "b"]
    markers = {line.get_marker() for line in ax.get_lines() if line.get_marker() not in ("None", "|", None)}
    assert set(MARKERS[:2]) <= markers


#: seaborn's "colorblind" palette (Okabe & Ito's colour-blind-safe colours, as seaborn orders them)
COLOUR_BLIND = (
    "#0173b2", "#de8f05", "#029e73", "#d55e00", "#cc78bc", "#ca9161", "#fbafe4", "#949494", "#ece133", "#56b4e9"
)  # fmt: skip


def test_forest_plot_without_rows_is_a_figure_saying_so() -> None:
    fig = forest_plot(pd.DataFrame(columns=["label", "value", "low", "high"]))
    assert [t.get_text() for t in fig.axes[0].texts] == ["nothing to plot: no parsed judgment"]
    assert not fig.axes[0].lines  # no estimate drawn


@pytest.mark.parametrize("n", range(1, len(COLOUR_BLIND) + 1))
def test_palette_is_the_colour_blind_palette_with_distinct_colours(n: int) -> None:
    colours = [to_hex(c) for c in palette(n)]
    assert colours == list(COLOUR_BLIND[:n])  # the colour-blind-safe colours, in their order, not another palette
    assert len(set(colours)) == n  # n series, n colours
    assert [to_hex(c) for c in palette(n)] == colours  # the same n, the same colours, every time


def test_the_forest_plot_draws_its_series_in_the_palettes_colours() -> None:
    rows = pd.DataFrame({"label": ["x"] * 3, "judge": ["a", "b", "c"], "value": [1.0, 2.0, 3.0]})
    ax = forest_plot(rows, group="judge").axes[0]
    drawn = [to_hex(line.get_color()) for line in ax.get_lines() if line.get_marker() in MARKERS]
    assert drawn == list(COLOUR_BLIND[:3])
