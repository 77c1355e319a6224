"""The shared forest plot: one row per estimate, CIs as bars, series apart by colour and marker."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest

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


def test_forest_plot_refuses_no_rows_and_palette_is_colour_blind_safe() -> None:
    with pytest.raises(ValueError):
        forest_plot(pd.DataFrame(columns=["label", "value", "low", "high"]))
    assert len(palette(3)) == 3
