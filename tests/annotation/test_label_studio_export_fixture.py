"""Exports a real Label Studio wrote, read back (the fast lane's stand-in for
tests/annotation/test_label_studio_server.py, which needs a Label Studio): ``tests/fixtures/label_studio/`` holds
the project's files, the sample they were drawn as, and two JSON exports of the project after two people labelled it
through the API (one relabelled a task, the other skipped one), with what each submitted (``label_studio.json``, which
names the Label Studio version)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from locations import FIXTURES
from sklearn.metrics import cohen_kappa_score

from recjudge_utils.annotation import AnnotationSample, Labels, kind_named, read_labels, read_sample
from recjudge_utils.annotation.agreement_with_people import human_agreement, judge_agreement
from recjudge_utils.annotation.label_studio import labelling_config, task_data
from recjudge_utils.annotation.read_labels import LABEL_COLUMNS
from recjudge_utils.data._common import DataFormatError

FIXTURES = FIXTURES / "label_studio"
KIND = "scores"
N_BOOT = 200
RECORD: dict[str, Any] = json.loads((FIXTURES / "label_studio.json").read_text(encoding="utf-8"))
#: the Data Manager's Export > JSON (annotators as user ids), and a snapshot with them expanded (by email)
EXPORTS = {"ids": FIXTURES / f"{KIND}-export.json", "emails": FIXTURES / f"{KIND}-export-emails.json"}


@pytest.fixture
def sample() -> AnnotationSample:
    return read_sample(FIXTURES / f"{KIND}-sample.json")


def _name(email: str, by: str) -> str:
    return email if by == "emails" else RECORD["user_ids"][email]


def _submitted(by: str) -> set[tuple[str, str, str]]:
    return {(t, _name(email, by), lab) for email, labels in RECORD["submitted"].items() for t, lab in labels.items()}


def test_the_fixture_is_label_studios_own_export_of_the_projects_files(sample: AnnotationSample) -> None:
    assert RECORD["label_studio"]["label-studio"].startswith("1.23.")
    assert (FIXTURES / f"{KIND}-config.xml").read_text(encoding="utf-8") == labelling_config(KIND)
    imported = json.loads((FIXTURES / f"{KIND}-tasks.json").read_text(encoding="utf-8"))
    assert imported == [{"data": task_data(t, KIND)} for t in sample.tasks]
    for by, path in EXPORTS.items():
        tasks = json.loads(path.read_text(encoding="utf-8"))
        assert [t["data"] for t in tasks] == [i["data"] for i in imported]  # the data come back as imported
        first = tasks[0]["annotations"][0]
        assert {"unique_id", "result_count", "lead_time"} <= set(first)  # fields only Label Studio writes
        assert isinstance(first["completed_by"], dict if by == "emails" else int)


@pytest.mark.parametrize("by", sorted(EXPORTS))
def test_a_real_export_reads_back_the_labels_submitted(sample: AnnotationSample, by: str) -> None:
    read = read_labels(EXPORTS[by], sample)
    assert read.annotators == sorted(_name(email, by) for email in RECORD["submitted"])
    assert set(read.frame.itertuples(index=False, name=None)) == _submitted(by)
    # the skip is a cancelled annotation; a relabelling updates the annotation in place, so nothing is replaced
    assert (read.skipped, read.relabelled) == (1, 0) and not read.simulated


@pytest.mark.parametrize("by", sorted(EXPORTS))
def test_the_agreement_from_a_real_export_is_that_of_the_labels_submitted(sample: AnnotationSample, by: str) -> None:
    read = read_labels(EXPORTS[by], sample)
    frame = pd.DataFrame(sorted(_submitted(by)), columns=list(LABEL_COLUMNS)).astype(str)
    direct = Labels(frame.sort_values(["task_id", "annotator"], ignore_index=True), Path("submitted"), 0, 0)
    people = human_agreement(read, KIND, n_boot=N_BOOT)
    pd.testing.assert_frame_equal(people, human_agreement(direct, KIND, n_boot=N_BOOT))
    pd.testing.assert_frame_equal(
        judge_agreement(read, sample, n_boot=N_BOOT), judge_agreement(direct, sample, n_boot=N_BOOT)
    )
    first, second = (RECORD["submitted"][email] for email in sorted(RECORD["submitted"]))
    both = sorted(set(first) & set(second))
    kappa = people.set_index("statistic").loc["quadratic-weighted kappa"]
    reference = cohen_kappa_score(
        [first[t] for t in both], [second[t] for t in both], labels=list(kind_named(KIND).labels), weights="quadratic"
    )
    assert kappa["value"] == pytest.approx(reference) and kappa["n"] == len(both) == len(sample.tasks) - 1
    assert kappa["value"] < 1  # the second annotator is one level off on every other task


def test_a_real_export_is_refused_against_another_sample(sample: AnnotationSample) -> None:
    dropped = sample.tasks[0].task_id
    sample.tasks = sample.tasks[1:]
    with pytest.raises(DataFormatError, match=f"{dropped!r} is not in the run's sample"):
        read_labels(EXPORTS["ids"], sample)
