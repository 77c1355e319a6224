"""A chapter's judgments as its latest execution left them: records an earlier execution appended to the same log
are not this one's, and a pair counts only for the systems (and the fold) the chapter judged."""

from __future__ import annotations

import json
from pathlib import Path

from annotation_world import NOTEBOOK, SYSTEMS, make_run

from recjudge_utils.annotation.chapter_record import chapter_parameters, judgment_records
from recjudge_utils.annotation.sample import load_units


def _manifest(run: Path, **entry: object) -> None:
    path = run / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest["notebooks"][0].update(entry)
    path.write_text(json.dumps(manifest), encoding="utf-8")


def test_an_earlier_executions_judgments_are_not_this_ones(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    log = run / NOTEBOOK / "judgments.jsonl"
    first = log.read_text(encoding="utf-8").splitlines()
    earlier = json.loads(first[0])
    earlier["metadata"] = {**earlier["metadata"], "user": 999}  # a user only an earlier execution judged
    lines = [json.dumps(earlier), *first]
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert any(r["metadata"].get("user") == 999 for r in judgment_records(run, NOTEBOOK))  # no record: all lines
    _manifest(run, judgments_from=1)
    records = judgment_records(run, NOTEBOOK)
    assert len(records) == len({(r["template_id"], json.dumps(r["metadata"], sort_keys=True)) for r in records})
    assert not any(r["metadata"].get("user") == 999 for r in records)
    assert len(records) == len(judgment_records(make_run(tmp_path / "fresh"), NOTEBOOK))


def test_a_pair_counts_only_for_the_systems_the_chapter_judged(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    _, every = load_units(run, NOTEBOOK, "scores")
    assert {s for u in every for s in u.strata} == set(SYSTEMS)
    judged = list(SYSTEMS[:2])
    listed = {
        (int(user), int(item))
        for system in judged
        for user, _, item, *_ in (line.split() for line in (run / "lists" / "fold0" / f"{system}.trec").open())
    }
    log = run / NOTEBOOK / "judgments.jsonl"
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    kept = [
        r for r in records if "item" not in r["metadata"] or (r["metadata"]["user"], r["metadata"]["item"]) in listed
    ]
    assert len(kept) < len(records)  # the chapter judged the two systems' pairs only
    log.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
    _manifest(run, parameters={"top_k": 3, "systems": judged, "fold": 0})
    assert chapter_parameters(run, NOTEBOOK)[0]["systems"] == judged
    _, units = load_units(run, NOTEBOOK, "scores")
    assert {s for u in units for s in u.strata} <= set(judged)
    by_id = {u.task_id: u for u in every}
    assert all(u.strata == [s for s in by_id[u.task_id].strata if s in judged] for u in units if u.strata)
