"""A sample as a CSV sheet for spreadsheet annotation: the fields of the Label Studio tasks, one row per task, and
two empty columns a person fills, ``annotator`` and ``label``. Several annotators add one row per task each (a copy
of the task's row with their name); a row relabelled later in the file replaces the annotator's earlier label."""

from __future__ import annotations

import csv
from pathlib import Path

from recjudge_utils.annotation.kinds import kind_named
from recjudge_utils.annotation.label_studio import task_data
from recjudge_utils.annotation.sample import AnnotationSample

__all__ = ["SHEET_LABEL_COLUMNS", "sheet_columns", "write_sheet"]

#: the columns an annotator fills
SHEET_LABEL_COLUMNS = ("annotator", "label")


def sheet_columns(kind: str) -> list[str]:
    """The sheet's columns for ``kind``: the task's fields, then the annotator's."""
    shown = ["list_a", "list_b"] if kind_named(kind).name == "duels" else []
    return ["recjudge_task", "recjudge_kind", "user", "systems", *shown, "rubric", "case", *SHEET_LABEL_COLUMNS]


def write_sheet(sample: AnnotationSample, out_dir: str | Path) -> Path:
    """``<kind>-sheet.csv`` in ``out_dir``, one row per task with ``annotator`` and ``label`` empty."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{sample.kind}-sheet.csv"
    columns = sheet_columns(sample.kind)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        for task in sample.tasks:
            writer.writerow({**task_data(task, sample.kind), "annotator": "", "label": ""})
    return path
