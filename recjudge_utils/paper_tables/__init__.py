"""The papers' own numbers, transcribed once in ``recjudge_utils/paper_tables/*.csv`` (lines starting with ``#``
are comments naming the table and page). Every "beside the paper" table reads them through :func:`paper_table`.
"""

from __future__ import annotations

from importlib import resources

import pandas as pd

__all__ = ["paper_table"]


def paper_table(name: str) -> pd.DataFrame:
    """``paper_tables/<name>.csv``, e.g. ``"serendipity_table1"``, ``"arena_table2"``, ``"saer_table3"``."""
    res = resources.files("recjudge_utils").joinpath("paper_tables", f"{name}.csv")
    if not res.is_file():
        known = sorted(
            p.name.removesuffix(".csv") for p in resources.files("recjudge_utils").joinpath("paper_tables").iterdir()
        )
        raise FileNotFoundError(f"no paper table {name!r}; known: {', '.join(known)}")
    with res.open("r", encoding="utf-8") as fh:
        return pd.read_csv(fh, comment="#")
