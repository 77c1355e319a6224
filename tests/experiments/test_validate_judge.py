"""Chapter 8 (issue 44 items 3-6) as package calls, on the annotation tests' tiny run: the sample drawn and written
for people, simulated annotators through both files, people's labels against the recorded sample, refusals, and the
sentences the intervals choose."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from annotation_world import NOTEBOOK, make_run

from recjudge_utils.annotation import export_tasks, read_labels
from recjudge_utils.annotation.agreement_with_people import consensus
from recjudge_utils.annotation.kinds import KINDS
from recjudge_utils.annotation.read_labels import LABEL_COLUMNS, Labels
from recjudge_utils.annotation.sample import Task
from recjudge_utils.annotation.simulated_annotators import (
    expected_consensus_means,
    simulate_labels,
    write_simulated_export,
)
from recjudge_utils.book.notebooks import asks_judge
from recjudge_utils.data._common import DataFormatError
from recjudge_utils.experiments.validate_judge import (
    NOTEBOOK as CHAPTER,
)
from recjudge_utils.experiments.validate_judge import (
    ValidateJudgeConfig,
    simulated_people_means,
    validate,
)
from recjudge_utils.paths import RUN_DIR_ENV
from recjudge_utils.reporting import validate_judge as report

CONFIG = ValidateJudgeConfig(notebook=NOTEBOOK, kind="scores", per_system=8, n_boot=200)


def _rescore(run: Path, score_of: Callable[[dict[str, Any]], int | None]) -> Path:
    """The world's serendipity judgments answered ``score_of(record)`` (None: the record left as it is)."""
    log = run / NOTEBOOK / "judgments.jsonl"
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    for r in records:
        score = score_of(r) if r["template_id"].startswith("serendipity/") else None
        if score is not None:
            r["status"], r["parsed"] = "parsed", {"score": score}
    log.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return run


def _constant_judge(run: Path, score: int = 3) -> Path:
    """Every parsed score alike: a judge that tells nothing apart."""
    return _rescore(run, lambda r: score if r["status"] == "parsed" else None)


def _truthful_judge(run: Path) -> Path:
    """Every score the recorded truth: a judge as good as the people's centre."""
    return _rescore(run, lambda r: int(r["truth"]["levels"]["score"]))


@pytest.mark.parametrize("kind", ["scores", "lists", "duels"])
def test_without_labels_simulated_annotators_go_through_both_files(tmp_path: Path, kind: str) -> None:
    run = make_run(tmp_path)
    v = validate(run, ValidateJudgeConfig(notebook=NOTEBOOK, kind=kind, per_system=5, n_boot=100))
    folder = run / CHAPTER / "annotation"
    export, sheet = v.label_files
    assert (
        export.parent == folder and sheet.parent == folder and "SIMULATED" in export.name and "SIMULATED" in sheet.name
    )
    assert v.simulated and all(name.startswith("SIMULATED") for name in v.labels.annotators)
    pd.testing.assert_frame_equal(read_labels(sheet, v.sample).frame, v.labels.frame)
    assert all(p.is_file() for p in v.task_files)
    assert sorted(v.estimates["system"]) == sorted(v.sample.members)
    assert (v.judge["scope"] == "all systems").any() and set(v.sample.members) <= set(v.judge["scope"])
    assert (v.ratings is None) == (kind != "scores")
    tables = (report.agreement_table(v, "T"), report.per_system_table(v, "T"), report.estimates_table(v, "T"))
    assert all(table.caption == "T · labels of SIMULATED annotators, not people's" for table in tables)
    compared = [table.caption for table in report.comparisons_tables(v, "{what}, {estimate}, {family} tests")]
    what = "each pair's win rate against 0.5" if kind == "duels" else "every two systems compared"
    assert all(caption.startswith(f"{what}, ") for caption in compared)


def test_peoples_labels_are_read_against_the_sample_the_run_records(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    sample = export_tasks(run, NOTEBOOK, "scores", per_system=6, seed=3, out_dir=tmp_path / "out").sample
    people = simulate_labels(sample, (0.0, 0.5), seed=0)
    named = dict(zip(("alice@lab", "bob@lab"), people.values(), strict=True))
    path = write_simulated_export(sample, named, tmp_path / "export.json")
    v = validate(run, CONFIG, labels=path)  # CONFIG's per_system 8 and seed 0 are not the recorded sample's
    assert not v.simulated and v.labels.annotators == ["alice@lab", "bob@lab"]
    assert v.sample.task_ids == sample.task_ids and v.label_files == [path]
    assert "SIMULATED" not in report.estimates_table(v, "Table 8.5").to_html()


def test_labels_without_a_recorded_sample_say_how_to_draw_one(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"records no sample of scores.*annotation export"):
        validate(run, CONFIG, labels=tmp_path / "export.json")


def test_a_bad_labels_file_is_refused_before_anything_is_computed(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    sample = export_tasks(run, NOTEBOOK, "scores", per_system=4, seed=0, out_dir=tmp_path / "out").sample
    path = write_simulated_export(sample, simulate_labels(sample, (0.5,), seed=0), tmp_path / "export.json")
    tasks = json.loads(path.read_text(encoding="utf-8"))
    tasks[1]["data"]["recjudge_task"] = "scores:u999:i999"
    path.write_text(json.dumps(tasks), encoding="utf-8")
    with pytest.raises(
        DataFormatError, match=r"export\.json: task 2 .*: task 'scores:u999:i999' is not in the run's sample"
    ):
        validate(run, CONFIG, labels=path)
    assert not list((run / CHAPTER / "annotation").glob("*"))  # no task file written for a refused labels file


def test_judgments_changed_since_the_sample_are_refused(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    sample = export_tasks(run, NOTEBOOK, "scores", per_system=4, seed=0, out_dir=tmp_path / "out").sample
    path = write_simulated_export(sample, simulate_labels(sample, (0.5,), seed=0), tmp_path / "export.json")
    _constant_judge(run, score=5)
    with pytest.raises(ValueError, match="changed since this sample was drawn"):
        validate(run, CONFIG, labels=path)


def test_another_judge_and_no_run_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = make_run(tmp_path)
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    (run / "manifest.json").write_text(json.dumps({**manifest, "judge": {"name": "sim"}}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"judge 'embedded' did not judge run 'world'.*names 'sim'"):
        validate(run, CONFIG, judge="embedded")
    assert validate(run, CONFIG, judge={"name": "sim"}).sample.tasks
    monkeypatch.delenv(RUN_DIR_ENV, raising=False)
    with pytest.raises(ValueError, match="run=None validates the run executing this chapter, and none is"):
        validate(None, CONFIG)
    with pytest.raises(ValueError, match="no run 'nowhere'"):
        validate("nowhere", CONFIG)


def test_a_judge_that_tells_nothing_apart_cannot_replace_people_and_adds_nothing(tmp_path: Path) -> None:
    v = validate(_constant_judge(make_run(tmp_path)), ValidateJudgeConfig(NOTEBOOK, "scores", 8, noises=(0.0, 0.3)))
    agreement = report.agreement_sentences(v).text
    assert "cannot be told apart from 0" in agreement and "the judge cannot replace them" in agreement
    estimates = report.estimates_sentences(v).text
    assert "the judge's labels added nothing" in estimates
    assert (v.estimates["lam"].fillna(0) == 0).all()  # the prediction-powered estimate is the people's


def test_a_truthful_judge_narrows_every_interval(tmp_path: Path) -> None:
    v = validate(_truthful_judge(make_run(tmp_path)), ValidateJudgeConfig(NOTEBOOK, "scores", 8, noises=(0.0,)))
    estimates = report.estimates_sentences(v).text
    usable = v.estimates[v.estimates["n_judged"] > v.estimates["n_labelled"]]
    narrower = (usable["ppi_high"] - usable["ppi_low"]) < (usable["human_high"] - usable["human_low"])
    assert narrower.all() and f"for {len(usable)} of {len(usable)} systems" in estimates
    kappa = v.judge[(v.judge["scope"] == "all systems") & (v.judge["statistic"] == "quadratic-weighted kappa")]
    assert float(kappa["value"].iloc[0]) == pytest.approx(1.0)


def test_the_simulated_peoples_mean_is_what_their_consensus_averages(tmp_path: Path) -> None:
    sample = export_tasks(make_run(tmp_path), NOTEBOOK, "scores", per_system=4, seed=0, out_dir=tmp_path / "o").sample
    spec = KINDS["scores"]
    exact = expected_consensus_means(sample, noises=(0.0,), reps=3)
    for system, members in sample.members.items():  # noise 0: the truth's own mean
        assert exact[system] == pytest.approx(np.mean([spec.value(sample.truth[t]) for t in members]))
    noisy = expected_consensus_means(sample, noises=(0.6, 0.8, 1.0), reps=400, seed=1)
    # against the road people's labels take: simulate every unit, take the consensus, average over fresh panels
    whole = replace(sample, tasks=[Task(t, [], {}, 0, "", "", None) for t in sorted(sample.judge_labels)])
    means: dict[str, list[float]] = {s: [] for s in sample.members}
    for seed in range(60):
        drawn = simulate_labels(whole, (0.6, 0.8, 1.0), seed=seed)
        rows = [(t, a, label) for a, by_task in drawn.items() for t, label in by_task.items()]
        agreed = consensus(Labels(pd.DataFrame(rows, columns=list(LABEL_COLUMNS)), Path("drawn"), 0, 0), "scores")
        for s, members in sample.members.items():
            means[s].append(np.mean([spec.value(agreed[t]) for t in members]))
    for s in sample.members:
        assert noisy[s] == pytest.approx(np.mean(means[s]), abs=0.05)


def test_simulated_peoples_means_only_for_simulated_annotators(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    v = validate(run, ValidateJudgeConfig(NOTEBOOK, "lists", 5, n_boot=100))
    assert list(v.people_means["system"]) == sorted(v.sample.members)
    v.labels.frame["annotator"] = "alice"
    assert simulated_people_means(v.sample, v.labels, v.config).empty


def test_chapter_8_asks_the_judge_nothing() -> None:
    names = {"judge", "run", "labels"}
    assert not asks_judge(Path("notebooks/08_validate_your_judge.ipynb"), names)
    assert asks_judge(Path("notebooks/07_your_recommenders.ipynb"), names)
    assert not asks_judge(Path("notebooks/05_protocols_detect.ipynb"), {"repeats"})
