"""Labels in (issue 44 item 2) and simulated annotators (item 5): a Label Studio export or a filled sheet read back
as (task_id, annotator, label), several annotators, skipped and relabelled tasks, and every bad file refused with
its file, its task or line and the problem named."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from annotation_world import NOTEBOOK, make_run

from recjudge_utils.annotation import AnnotationSample, export_tasks, read_label_studio, read_labels, read_sheet
from recjudge_utils.annotation.simulated_annotators import (
    simulate_labels,
    write_simulated_export,
    write_simulated_sheet,
)
from recjudge_utils.data._common import DataFormatError

NOISES = (0.0, 0.6, 1.2)


@pytest.fixture(params=["scores", "lists", "duels"])
def sample(request: pytest.FixtureRequest, tmp_path: Path) -> AnnotationSample:
    run = make_run(tmp_path)
    return export_tasks(run, NOTEBOOK, request.param, per_system=4, seed=2, out_dir=tmp_path / "out").sample


@pytest.fixture
def lists_sample(tmp_path: Path) -> AnnotationSample:
    return export_tasks(make_run(tmp_path), NOTEBOOK, "lists", per_system=4, seed=2, out_dir=tmp_path / "o").sample


def _export(sample: AnnotationSample, path: Path) -> list[dict[str, Any]]:
    write_simulated_export(sample, simulate_labels(sample, NOISES, seed=1), path)
    return json.loads(path.read_text(encoding="utf-8"))


def _save(tasks: list[dict[str, Any]], path: Path) -> Path:
    path.write_text(json.dumps(tasks), encoding="utf-8")
    return path


def test_simulated_labels_read_back_the_same_through_the_export_and_the_sheet(
    sample: AnnotationSample, tmp_path: Path
) -> None:
    labels = simulate_labels(sample, NOISES, seed=1)
    export = write_simulated_export(sample, labels, tmp_path / "export.json")
    sheet = write_simulated_sheet(sample, labels, tmp_path / "sheet.csv")
    from_export, from_sheet = read_labels(export, sample), read_labels(sheet, sample)
    assert from_export.frame.equals(from_sheet.frame)
    expected = {(t, a, lab) for a, by_task in labels.items() for t, lab in by_task.items()}
    assert set(from_export.frame.itertuples(index=False, name=None)) == expected
    assert len(from_export.annotators) == len(NOISES) and from_export.simulated
    assert all(name.startswith("SIMULATED") for name in from_sheet.annotators)
    noiseless = labels[from_export.annotators[0]]
    assert noiseless == {t.task_id: sample.truth[t.task_id] for t in sample.tasks}  # noise 0 gives the truth


def test_more_noise_moves_more_labels_off_the_truth(lists_sample: AnnotationSample) -> None:
    many = simulate_labels(lists_sample, (0.3, 2.0), seed=0)
    off = [sum(lab != lists_sample.truth[t] for t, lab in by_task.items()) for by_task in many.values()]
    assert off[0] < off[1]


def test_skipped_annotations_are_left_out_and_counted(lists_sample: AnnotationSample, tmp_path: Path) -> None:
    tasks = _export(lists_sample, tmp_path / "e.json")
    tasks[0]["annotations"][0]["was_cancelled"] = True
    tasks[1]["annotations"][1]["result"] = []
    read = read_label_studio(_save(tasks, tmp_path / "skipped.json"), lists_sample)
    assert read.skipped == 2
    assert len(read.frame) == len(lists_sample.tasks) * len(NOISES) - 2


def test_an_annotators_last_annotation_counts(lists_sample: AnnotationSample, tmp_path: Path) -> None:
    tasks = _export(lists_sample, tmp_path / "e.json")
    first = tasks[0]["annotations"][0]
    relabel = json.loads(json.dumps(first))
    old = first["result"][0]["value"]["choices"][0]
    new = next(lab for lab in ("Poor Match", "Good Match") if lab != old)
    relabel["result"][0]["value"]["choices"] = [new]
    relabel["updated_at"] = "2026-02-01T00:00:00Z"
    tasks[0]["annotations"].insert(0, relabel)  # the later one listed first: the time decides, not the order
    read = read_label_studio(_save(tasks, tmp_path / "relabelled.json"), lists_sample)
    who = first["completed_by"]["email"]
    row = read.frame[(read.frame["task_id"] == tasks[0]["data"]["recjudge_task"]) & (read.frame["annotator"] == who)]
    assert row["label"].tolist() == [new] and read.relabelled == 1


def test_the_sheets_later_row_relabels_and_an_empty_label_is_a_skip(
    lists_sample: AnnotationSample, tmp_path: Path
) -> None:
    path = write_simulated_sheet(lists_sample, simulate_labels(lists_sample, NOISES, seed=1), tmp_path / "s.csv")
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    again = dict(rows[0], label="Good Match" if rows[0]["label"] != "Good Match" else "Poor Match")
    skipped = dict(rows[1], annotator="someone", label="")
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows([*rows, again, skipped])
    read = read_sheet(path, lists_sample)
    mine = read.frame[
        (read.frame["task_id"] == rows[0]["recjudge_task"]) & (read.frame["annotator"] == rows[0]["annotator"])
    ]
    assert mine["label"].tolist() == [again["label"]]
    assert (read.relabelled, read.skipped) == (1, 1)


# -- refused files: each message names the file, the task or line, and the problem -------------------------------
def _refused(path: Path, sample: AnnotationSample, *named: str) -> str:
    with pytest.raises(DataFormatError) as caught:
        read_labels(path, sample)
    message = str(caught.value)
    assert str(path) in message
    for part in named:
        assert part in message, (part, message)
    return message


@pytest.mark.parametrize("suffix", [".json", ".csv"])
def test_an_empty_file_is_refused(lists_sample: AnnotationSample, tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"empty{suffix}"
    path.write_text("\n", encoding="utf-8")
    _refused(path, lists_sample, "empty file")


def test_a_task_not_in_the_runs_sample_is_refused(lists_sample: AnnotationSample, tmp_path: Path) -> None:
    tasks = _export(lists_sample, tmp_path / "e.json")
    tasks[2]["data"]["recjudge_task"] = "lists:u999:elsewhere"
    _refused(
        _save(tasks, tmp_path / "stranger.json"),
        lists_sample,
        f"task {tasks[2]['id']}",
        "lists:u999:elsewhere",
        "not in the run's sample",
    )


def test_a_label_outside_the_rubric_is_refused(lists_sample: AnnotationSample, tmp_path: Path) -> None:
    tasks = _export(lists_sample, tmp_path / "e.json")
    tasks[1]["annotations"][0]["result"][0]["value"]["choices"] = ["Excellent"]
    _refused(
        _save(tasks, tmp_path / "label.json"),
        lists_sample,
        f"task {tasks[1]['id']}",
        tasks[1]["data"]["recjudge_task"],
        "'Excellent'",
        "outside the rubric",
    )


def test_an_annotation_without_annotator_is_refused(lists_sample: AnnotationSample, tmp_path: Path) -> None:
    tasks = _export(lists_sample, tmp_path / "e.json")
    del tasks[3]["annotations"][0]["completed_by"]
    _refused(_save(tasks, tmp_path / "nobody.json"), lists_sample, f"task {tasks[3]['id']}", "no annotator")


def test_another_projects_control_is_refused(lists_sample: AnnotationSample, tmp_path: Path) -> None:
    tasks = _export(lists_sample, tmp_path / "e.json")
    tasks[0]["annotations"][0]["result"][0]["from_name"] = "sentiment"
    _refused(
        _save(tasks, tmp_path / "other.json"), lists_sample, f"task {tasks[0]['id']}", "'sentiment'", "another project"
    )


def test_another_projects_tasks_are_refused(lists_sample: AnnotationSample, tmp_path: Path) -> None:
    tasks = _export(lists_sample, tmp_path / "e.json")
    foreign = _save([{"id": 7, "data": {"text": "a review"}, "annotations": []}], tmp_path / "foreign.json")
    _refused(foreign, lists_sample, "task 7", "recjudge_task", "another project")
    tasks[0]["data"]["recjudge_kind"] = "duels"
    _refused(_save(tasks, tmp_path / "kind.json"), lists_sample, f"task {tasks[0]['id']}", "'duels'", "another project")


def _sheet_with(sample: AnnotationSample, tmp_path: Path, change: dict[str, str]) -> tuple[Path, int]:
    """The simulated sheet with ``change`` made to its third row; (path, that row's line in the file)."""
    path = write_simulated_sheet(sample, simulate_labels(sample, NOISES, seed=1), tmp_path / "sheet.csv")
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        rows, ends = [], []
        for row in reader:
            rows.append(row)
            ends.append(reader.line_num)
    rows[2].update(change)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path, ends[2]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"recjudge_task": "lists:u999:elsewhere"}, "not in the run's sample"),
        ({"label": "Excellent"}, "outside the rubric"),
        ({"annotator": ""}, "no annotator"),
        ({"recjudge_kind": "scores"}, "another project"),
    ],
)
def test_a_bad_sheet_row_is_refused_with_its_line(
    lists_sample: AnnotationSample, tmp_path: Path, change: dict[str, str], problem: str
) -> None:
    path, line = _sheet_with(lists_sample, tmp_path, change)
    _refused(path, lists_sample, f"line {line}", problem)


def test_a_sheet_of_another_project_is_refused(lists_sample: AnnotationSample, tmp_path: Path) -> None:
    path = tmp_path / "other.csv"
    path.write_text("id,text,sentiment\n1,a review,positive\n", encoding="utf-8")
    _refused(path, lists_sample, "line 1", "recjudge_task")


def test_simulating_needs_a_recorded_truth(lists_sample: AnnotationSample) -> None:
    lists_sample.truth.clear()
    with pytest.raises(ValueError, match="no recorded truth"):
        simulate_labels(lists_sample)


def test_an_export_naming_annotators_by_user_id_reads_them_by_id(
    lists_sample: AnnotationSample, tmp_path: Path
) -> None:
    tasks = _export(lists_sample, tmp_path / "e.json")
    for task in tasks:  # Label Studio's JSON export gives completed_by as the user's id
        for annotation in task["annotations"]:
            annotation["completed_by"] = annotation["completed_by"]["id"]
    read = read_label_studio(_save(tasks, tmp_path / "ids.json"), lists_sample)
    assert read.annotators == ["1", "2", "3"] and not read.simulated


def _sheet_text(sample: AnnotationSample, tmp_path: Path) -> str:
    path = write_simulated_sheet(sample, simulate_labels(sample, NOISES, seed=1), tmp_path / "sheet.csv")
    return path.read_text(encoding="utf-8")


def test_a_sheet_cut_short_inside_a_quoted_field_is_refused(lists_sample: AnnotationSample, tmp_path: Path) -> None:
    text = _sheet_text(lists_sample, tmp_path)
    # the rubric and case fields hold line breaks inside quotes: cut inside the last row's first quoted field, as an
    # interrupted save does (a lenient reader takes the rest of the file for that one field and reads on)
    cut = text.index(',"', text.rindex("\n", 0, len(text) - 1)) + 3
    path = tmp_path / "cut.csv"
    path.write_text(text[:cut], encoding="utf-8")
    _refused(path, lists_sample, "line ", "not a CSV row (unexpected end of data)")


@pytest.mark.parametrize(("edit", "fields"), [("drop", "fewer"), ("add", "more")])
def test_a_row_with_another_number_of_fields_than_the_header_is_refused(
    lists_sample: AnnotationSample, tmp_path: Path, edit: str, fields: str
) -> None:
    path = write_simulated_sheet(lists_sample, simulate_labels(lists_sample, NOISES, seed=1), tmp_path / "s.csv")
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    rows[3] = rows[3][:-2] if edit == "drop" else [*rows[3], "stray"]
    with open(path, "w", encoding="utf-8", newline="") as fh:
        csv.writer(fh).writerows(rows)
    width = len(rows[0])
    _refused(
        path,
        lists_sample,
        "line 4: ",
        f"{width - 2 if edit == 'drop' else width + 1} fields where the header has {width}",
    )
