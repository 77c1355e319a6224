"""Tasks out (issue 44 item 1): a stratified sample of a run's judgments, recorded in the run, as a Label Studio
import with its labelling configuration and as a CSV sheet, through the command line."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from annotation_world import JUDGE_MARK, NOTEBOOK, SYSTEMS, TOP_K, make_run

from recjudge_utils.annotation import KINDS, export_tasks, read_sample, sample_path
from recjudge_utils.annotation.__main__ import main
from recjudge_utils.annotation.sample import load_units

KIND_NAMES = sorted(KINDS)


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return make_run(tmp_path)


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_each_stratum_is_a_seeded_simple_random_sample_with_its_inclusion_probability(run: Path, kind: str) -> None:
    per_system = 4
    done = export_tasks(run, NOTEBOOK, kind, per_system=per_system, seed=3, out_dir=run / "out")
    sample = done.sample
    assert done.sample_path == sample_path(run, NOTEBOOK, kind) and done.sample_path.is_file()
    for stratum, members in sample.members.items():
        drawn = [t for t in sample.tasks if stratum in t.strata]
        info = sample.strata[stratum]
        assert len(drawn) == info["sampled"] == min(per_system, len(members))
        assert {t.task_id for t in drawn} <= set(members)
        for task in drawn:
            assert task.inclusion_probability[stratum] == pytest.approx(len(drawn) / len(members))
    assert read_sample(done.sample_path).task_ids == sample.task_ids
    again = export_tasks(run, NOTEBOOK, kind, per_system=per_system, seed=3, out_dir=run / "out2").sample
    assert again.task_ids == sample.task_ids
    with pytest.raises(ValueError, match="already records another sample"):
        export_tasks(run, NOTEBOOK, kind, per_system=per_system, seed=4, out_dir=run / "out3")
    other = export_tasks(run, NOTEBOOK, kind, per_system=per_system, seed=4, out_dir=run / "out3", replace=True)
    assert other.sample.task_ids != sample.task_ids
    assert read_sample(done.sample_path).task_ids == other.sample.task_ids


def test_a_pair_counts_for_every_system_whose_top_k_list_holds_it(run: Path) -> None:
    _, units = load_units(run, NOTEBOOK, "scores")
    lists: dict[str, set[str]] = {}
    for system in SYSTEMS:
        for line in (run / "lists" / "fold0" / f"{system}.trec").read_text().splitlines():
            user, _, item, rank, *_ = line.split()
            if int(rank) <= TOP_K:
                lists.setdefault(f"scores:u{user}:i{item}", set()).add(system)
    assert {u.task_id: set(u.strata) for u in units} == lists


def test_unparsed_judgments_are_in_no_population_and_counted(run: Path) -> None:
    _, units = load_units(run, NOTEBOOK, "lists")
    sample = export_tasks(run, NOTEBOOK, "lists", per_system=2, seed=0, out_dir=run / "out").sample
    for system in SYSTEMS:
        unparsed = [u for u in units if system in u.strata and u.judge_label is None]
        assert unparsed, "the world leaves some judgments unparsed"
        assert sample.strata[system]["unparsed"] == len(unparsed)
        assert not {u.task_id for u in unparsed} & set(sample.members[system])


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_the_files_show_the_rubric_and_case_as_the_judge_saw_them_never_its_answer(run: Path, kind: str) -> None:
    done = export_tasks(run, NOTEBOOK, kind, per_system=3, seed=0, out_dir=run / "out")
    for path in (done.tasks_path, done.config_path, done.sheet_path):
        assert JUDGE_MARK not in path.read_text(encoding="utf-8"), path
    imported = json.loads(done.tasks_path.read_text(encoding="utf-8"))
    with open(done.sheet_path, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [t["data"]["recjudge_task"] for t in imported] == [r["recjudge_task"] for r in rows]
    for task, row in zip(imported, rows, strict=True):
        assert task["data"]["rubric"].startswith("Rubric of") and "example" not in task["data"]["case"]
        assert {k: str(v) for k, v in task["data"].items()} == {k: row[k] for k in task["data"]}
        assert row["annotator"] == row["label"] == ""


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_the_labelling_configuration_offers_exactly_the_rubrics_labels(run: Path, kind: str) -> None:
    done = export_tasks(run, NOTEBOOK, kind, per_system=2, seed=0, out_dir=run / "out")
    view = ET.fromstring(done.config_path.read_text(encoding="utf-8"))
    (choices,) = view.iter("Choices")
    assert choices.get("name") == KINDS[kind].control and choices.get("choice") == "single-radio"
    assert sorted(str(c.get("alias")) for c in choices.iter("Choice")) == sorted(KINDS[kind].labels)
    shown = {t.get("name"): t.get("value") for t in view.iter("Text")}
    assert shown == {"rubric": "$rubric", "case": "$case"}


def test_the_command_line_writes_the_sample_and_the_three_files(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = run / "to-label"
    code = main(
        [
            "export",
            str(run),
            "--notebook",
            NOTEBOOK,
            "--kind",
            "duels",
            "--per-system",
            "3",
            "--seed",
            "5",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["duels-config.xml", "duels-sheet.csv", "duels-tasks.json"]
    assert read_sample(sample_path(run, NOTEBOOK, "duels")).seed == 5
    assert "alpha vs beta" in capsys.readouterr().out


def test_the_command_line_says_what_is_missing(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "export",
            str(run),
            "--notebook",
            "02_nowhere",
            "--kind",
            "scores",
            "--per-system",
            "3",
            "--out",
            str(run / "x"),
        ]
    )
    assert code == 2
    assert "02_nowhere" in capsys.readouterr().err


def test_lists_that_are_not_the_judged_ones_are_refused(run: Path) -> None:
    with pytest.raises(ValueError, match="in no system's top-1 list"):
        load_units(run, NOTEBOOK, "scores", top_k=1)


def test_a_duels_judge_label_merges_both_orders_conservatively(run: Path) -> None:
    winners: dict[str, dict[str, str | None]] = {}
    for line in (run / NOTEBOOK / "judgments.jsonl").read_text().splitlines():
        record = json.loads(line)
        meta = record["metadata"]
        if record["template_id"] != "arena/pairwise":
            continue
        verdict = record["parsed"]["verdicts"]["overall"] if record["status"] == "parsed" else None
        winner = {"A wins": meta["A"], "B wins": meta["B"], "Tie": "Tie", None: None}[verdict]
        winners.setdefault(f"duels:u{meta['user']}:{meta['x']}|{meta['y']}", {})[meta["order"]] = winner
    _, units = load_units(run, NOTEBOOK, "duels")
    assert {u.task_id for u in units} == set(winners)
    for unit in units:
        assert unit.shown["A"] == unit.task_id.split(":")[2].split("|")[0]  # list A is x: the x-first order is shown
        parsed = [w for w in winners[unit.task_id].values() if w is not None]
        merged = None if not parsed else parsed[0] if len(set(parsed)) == 1 else "Tie"
        expected = {None: None, "Tie": "Tie", unit.shown["A"]: "A", unit.shown["B"]: "B"}[merged]
        assert unit.judge_label == expected, unit.task_id
