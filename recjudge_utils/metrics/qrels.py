"""The judge's item labels as TREC qrels, so any IR evaluation tool computes ranking metrics on judged relevance.

A qrels line is ``query 0 document relevance`` (the second column is unused and 0 by convention, as trec_eval,
ir_measures and ranx read it); here the query is the user and the document the item, the way LLM-made qrels
(UMBRELA's) stand in for human ones in IR. Unlabelled (unparsed) judgments are left out: a qrels file has no way to
say "judged, no answer", and an absent line is what an unjudged item is.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

__all__ = ["qrels_lines", "write_qrels"]


def qrels_lines(labels: pd.DataFrame) -> list[str]:
    """One ``user 0 item label`` line per row of ``labels`` (columns user, item, label; integers), sorted by user
    then item; rows without a label are left out, and a (user, item) given twice is refused."""
    frame = labels.dropna(subset=["label"])
    if frame.duplicated(["user", "item"]).any():
        raise ValueError("qrels: a (user, item) has two labels; give one per pair")
    frame = frame.sort_values(["user", "item"])
    return [
        f"{int(u)} 0 {int(i)} {int(v)}" for u, i, v in zip(frame["user"], frame["item"], frame["label"], strict=True)
    ]


def write_qrels(labels: pd.DataFrame, path: str | Path) -> Path:
    """Write :func:`qrels_lines` to ``path`` (parents created); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    lines = qrels_lines(labels)
    target.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
    return target
