"""The judge's labels as TREC qrels: the lines, and ranx reading them back (when ranx is installed)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from recjudge_utils.metrics.qrels import qrels_lines, write_qrels

LABELS = pd.DataFrame({"user": [2, 1, 1, 3], "item": [7, 9, 4, 5], "label": [3, 0, 4, None]})


def test_lines_are_user_0_item_label_sorted_without_missing_labels() -> None:
    assert qrels_lines(LABELS) == ["1 0 4 4", "1 0 9 0", "2 0 7 3"]
    with pytest.raises(ValueError, match="two labels"):
        qrels_lines(pd.concat([LABELS, LABELS.iloc[:1]]))


def test_ranx_reads_the_qrels(tmp_path: Path) -> None:
    ranx = pytest.importorskip("ranx")
    path = write_qrels(LABELS, tmp_path / "judge.qrels")
    qrels = ranx.Qrels.from_file(str(path), kind="trec")
    assert qrels.to_dict() == {"1": {"4": 4, "9": 0}, "2": {"7": 3}}
