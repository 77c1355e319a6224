"""Tables for people (headers in words, an estimate and its interval in one cell, no index): one way to caption a
frame (:func:`captioned`), one way to lay out rows under the caller's headers and caption (:func:`rows_table`), one way
to say a table is empty, the judge's usage table. Machines read the run's frames and ``results.json``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd
from pandas.io.formats.style import Styler

from recjudge_utils.judge.types import Judge
from recjudge_utils.reporting.callouts import Callout
from recjudge_utils.reporting.cells import usage_cells

__all__ = ["captioned", "rows_table", "shown", "usage_footer", "usage_table_for_people"]

_SPACED = [
    {"selector": "th", "props": "padding: 0.2em 0.8em;"},
    {"selector": "td", "props": "padding: 0.2em 0.8em;"},
]


def captioned(
    frame: pd.DataFrame,
    caption: str,
    precision: int = 1,
    *,
    nowrap_intervals: bool = False,
    spaced: bool = False,
    escape: bool = False,
) -> Styler:
    """The frame as a captioned table without index, missing cells as ``-``. ``nowrap_intervals``: CI columns' cells on
    one line; ``spaced``: padded columns; ``escape``: HTML-escaped cells (a judge's raw answer)."""
    styler = frame.style.set_caption(caption).format(precision=precision, na_rep="-").hide(axis="index")
    if escape:
        styler = styler.format(escape="html", na_rep="-")
    intervals = [c for c in frame.columns if "CI" in str(c)]
    if nowrap_intervals and intervals:
        styler = styler.set_properties(subset=intervals, **{"white-space": "nowrap"})
    return styler.set_table_styles(_SPACED, overwrite=False) if spaced else styler


def rows_table(caption: str, columns: Sequence[str], rows: Iterable[Sequence[object]], *, precision: int = 1) -> Styler:
    """``rows`` under ``columns``, captioned (:func:`captioned`): the caller writes the caption and the headers."""
    return captioned(pd.DataFrame(list(rows), columns=list(columns)), caption, precision=precision)


def shown(frame: pd.DataFrame, caption: str, empty: str = "no run has results for this table yet") -> Styler | Callout:
    """:func:`captioned`, or a sentence saying why when there is nothing to show."""
    if frame.empty:
        return Callout(f"*{caption}*: {empty}.")
    return captioned(frame, caption)


def usage_footer(client: Judge) -> pd.DataFrame:
    """The judge's usage table of this notebook (calls, cache hits, tokens, cost, seconds), titled with the judge."""
    usage_summary = getattr(client, "usage_summary", None)
    usage = usage_summary() if callable(usage_summary) else pd.DataFrame()
    print(f"Usage - judge {client.model_name} (cache hits cost nothing; seconds = summed call latency)")
    return usage


def usage_table_for_people(usage: pd.DataFrame) -> Styler:
    """A judge's usage table (:func:`usage_footer`) in words: one row per prompt and one for all of them."""
    rows = [
        {
            "prompt": "all prompts" if row["template_id"] == "TOTAL" else row["template_id"],
            **usage_cells(row),
            "seconds": f"{float(row['seconds']):.1f}" if pd.notna(row.get("seconds")) else "-",
        }
        for row in usage.to_dict("records")
    ]
    columns = ["prompt", "judgments", "paid calls", "unparsed / errors", "tokens in / out", "cost (US$)", "seconds"]
    return pd.DataFrame(rows, columns=columns).style.hide(axis="index")
