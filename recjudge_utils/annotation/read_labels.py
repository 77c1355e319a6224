"""People's labels back in: a Label Studio JSON export or the CSV sheet, as one tidy frame (task_id, annotator,
label), checked against the run's sample before anything is computed.

* several annotators per task: one row each;
* a skipped task (Label Studio: a cancelled annotation; the sheet: an annotator's row with no label) is left out
  and counted in :attr:`Labels.skipped`;
* a relabelled task: an annotator's last annotation counts (Label Studio: the latest ``updated_at``, else
  ``created_at``, else the annotation id; the sheet: the later row), counted in :attr:`Labels.relabelled`.

Refused with :class:`~recjudge_utils.data._common.DataFormatError`, naming the file, the task or line and the
problem: an empty file, an export of another project (a task without the sample's id field, another kind, or a
result from a control this kind's configuration does not have), a task id not in the run's sample, a label outside
the rubric, an annotation or row without an annotator.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from recjudge_utils.annotation.kinds import kind_named
from recjudge_utils.annotation.label_studio import KIND_FIELD, TASK_FIELD
from recjudge_utils.annotation.sample import AnnotationSample
from recjudge_utils.data._common import DataFormatError

__all__ = ["LABEL_COLUMNS", "Labels", "read_label_studio", "read_labels", "read_sheet"]

LABEL_COLUMNS = ("task_id", "annotator", "label")


@dataclass(frozen=True)
class Labels:
    """The labels read from ``source``: one row per (task, annotator), and what was left out or replaced."""

    frame: pd.DataFrame
    source: Path
    skipped: int
    relabelled: int

    @property
    def annotators(self) -> list[str]:
        return sorted(self.frame["annotator"].unique())

    @property
    def simulated(self) -> bool:
        """Every annotator is a simulated one (their names say so): never to be shown as people's labels."""
        return bool(len(self.frame)) and all(name.startswith("SIMULATED") for name in self.annotators)


def _tidy(rows: list[tuple[str, str, str]], source: Path, skipped: int, relabelled: int) -> Labels:
    frame = pd.DataFrame(rows, columns=list(LABEL_COLUMNS)).astype(str)
    return Labels(frame.sort_values(["task_id", "annotator"], ignore_index=True), source, skipped, relabelled)


def _check(
    path: Path, where: str, task_id: str, label: str, sample: AnnotationSample, allowed: tuple[str, ...]
) -> None:
    if task_id not in sample.task_ids:
        raise DataFormatError(
            f"{path}: {where}: task {task_id!r} is not in the run's sample ({sample.run}/{sample.notebook}, "
            f"{sample.kind}, {len(sample.tasks)} tasks)"
        )
    if label not in allowed:
        raise DataFormatError(
            f"{path}: {where}: task {task_id!r}: label {label!r} is outside the rubric {list(allowed)}"
        )


def _annotator(annotation: dict[str, Any]) -> str | None:
    """The annotator of a Label Studio annotation: its user's email when the export expands it, else the user id."""
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        who = who.get("email") or who.get("id")
    return None if who in (None, "") else str(who)


def _choice(annotation: dict[str, Any], control: str, path: Path, where: str) -> str | None:
    """The chosen label of an annotation (None: no result), refusing a result of another project's control."""
    for result in annotation.get("result") or []:
        if result.get("from_name") != control:
            raise DataFormatError(
                f"{path}: {where}: a result from control {result.get('from_name')!r}, not {control!r}: an export of "
                "another project's labelling configuration"
            )
        value = result.get("value") or {}
        chosen = value.get("choices")
        if isinstance(chosen, list) and chosen:
            return str(chosen[0])
        if "rating" in value:
            return str(value["rating"])
    return None


def read_label_studio(path: str | Path, sample: AnnotationSample) -> Labels:
    """Labels from a Label Studio JSON export (``Export`` > ``JSON``) of the project made from ``sample``."""
    path = Path(path)
    spec = kind_named(sample.kind)
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    if not text.strip():
        raise DataFormatError(f"{path}: empty file: no Label Studio export in it")
    try:
        tasks = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataFormatError(f"{path}: line {exc.lineno}: not JSON ({exc.msg})") from exc
    if not isinstance(tasks, list) or not tasks:
        raise DataFormatError(f"{path}: no task: a Label Studio JSON export is a non-empty list of tasks")
    latest: dict[tuple[str, str], tuple[tuple[str, str, int], str]] = {}
    skipped = relabelled = 0
    for number, task in enumerate(tasks, start=1):
        data = task.get("data") if isinstance(task, dict) else None
        where = f"task {task.get('id', number) if isinstance(task, dict) else number}"
        if not isinstance(data, dict) or TASK_FIELD not in data:
            raise DataFormatError(
                f"{path}: {where}: no {TASK_FIELD!r} in its data: an export of another project, not of this sample"
            )
        task_id = str(data[TASK_FIELD])
        where = f"{where} ({task_id})"
        if data.get(KIND_FIELD) != sample.kind:
            raise DataFormatError(
                f"{path}: {where}: a task of kind {data.get(KIND_FIELD)!r}, not {sample.kind!r}: an export of "
                "another project's labelling configuration"
            )
        for order, annotation in enumerate(task.get("annotations") or []):
            annotator = _annotator(annotation)
            if annotator is None:
                raise DataFormatError(f"{path}: {where}: annotation {annotation.get('id', order + 1)} has no annotator")
            if annotation.get("was_cancelled"):
                skipped += 1
                continue
            label = _choice(annotation, spec.control, path, where)
            if label is None:
                skipped += 1
                continue
            _check(path, where, task_id, label, sample, spec.labels)
            when = (str(annotation.get("updated_at") or ""), str(annotation.get("created_at") or ""), order)
            key = (task_id, annotator)
            if key in latest:
                relabelled += 1
                if when < latest[key][0]:
                    continue
            latest[key] = (when, label)
    rows = [(task_id, annotator, label) for (task_id, annotator), (_, label) in latest.items()]
    return _tidy(rows, path, skipped, relabelled)


#: where csv.DictReader puts the fields of a row beyond the header's
_EXTRA_FIELDS = "\0extra"


def _sheet_rows(reader: csv.DictReader[str], path: Path) -> Iterator[dict[str, Any]]:
    """The sheet's rows, refusing one with fewer or more fields than the header (a row cut short, a stray comma) and
    a quoted field left open at the end of the file, naming the line."""
    width = len(reader.fieldnames or [])
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise DataFormatError(f"{path}: line {reader.line_num}: not a CSV row ({exc}): a file cut short?") from exc
        fields = width - sum(v is None for v in row.values()) + len(row.get(_EXTRA_FIELDS) or [])
        if fields != width:
            raise DataFormatError(
                f"{path}: line {reader.line_num}: {fields} fields where the header has {width}: a row cut short or a "
                "field with an unquoted comma"
            )
        yield row


def read_sheet(path: str | Path, sample: AnnotationSample) -> Labels:
    """Labels from the CSV sheet (:mod:`~recjudge_utils.annotation.sheet`): rows with an annotator and a label.

    A row with neither is a task nobody took (not counted); an annotator with no label skipped it."""
    path = Path(path)
    spec = kind_named(sample.kind)
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    if not text.strip():
        raise DataFormatError(f"{path}: empty file: no sheet in it")
    latest: dict[tuple[str, str], str] = {}
    skipped = relabelled = 0
    with open(path, encoding="utf-8", newline="") as fh:
        # strict: a quoted field left open at the end (a file cut short) is an error, not one field holding the rest
        reader = csv.DictReader(fh, restkey=_EXTRA_FIELDS, strict=True)
        missing = {TASK_FIELD, *("annotator", "label")} - set(reader.fieldnames or [])
        if missing:
            raise DataFormatError(
                f"{path}: line 1: no column {', '.join(sorted(missing))}: not a sheet of this sample (or of another "
                "project)"
            )
        for row in _sheet_rows(reader, path):
            where = f"line {reader.line_num}"
            task_id = (row.get(TASK_FIELD) or "").strip()
            annotator, label = (row.get("annotator") or "").strip(), (row.get("label") or "").strip()
            if KIND_FIELD in row and (row.get(KIND_FIELD) or "").strip() not in ("", sample.kind):
                raise DataFormatError(
                    f"{path}: {where}: task {task_id!r} is of kind {row[KIND_FIELD]!r}, not {sample.kind!r}: a sheet "
                    "of another project"
                )
            if not annotator and not label:
                continue
            if not annotator:
                raise DataFormatError(f"{path}: {where}: task {task_id!r}: label {label!r} has no annotator")
            if not label:
                skipped += 1
                continue
            _check(path, where, task_id, label, sample, spec.labels)
            relabelled += (task_id, annotator) in latest
            latest[(task_id, annotator)] = label
    if not latest:
        raise DataFormatError(f"{path}: no labelled row (every row's annotator and label are empty)")
    rows = [(task_id, annotator, label) for (task_id, annotator), label in latest.items()]
    return _tidy(rows, path, skipped, relabelled)


def read_labels(path: str | Path, sample: AnnotationSample) -> Labels:
    """Labels from a Label Studio JSON export (``.json``) or the CSV sheet (any other file)."""
    path = Path(path)
    return read_label_studio(path, sample) if path.suffix.lower() == ".json" else read_sheet(path, sample)
