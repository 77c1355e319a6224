"""Chapter 1 selects its prompt template on people's labels (the ``labels`` parameter), as the paper selects on
Serendipity-2018's user-annotated g: the sample of the chapter's judged pairs (one stratum, one task per pair though
four templates judged it), simulated annotators of noise 0 selecting exactly as the data's labels of the same pairs
do, labels equal to one template's own answers selecting that template, and bad labels refused before any judge
call. The simulated judge judges; no kernel runs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from test_protocol_pointwise_score import make_items, make_pairs

from recjudge_utils.annotation import export_tasks, read_sample, sample_path
from recjudge_utils.annotation.__main__ import main
from recjudge_utils.annotation.sample import ALL_PAIRS
from recjudge_utils.annotation.simulated_annotators import simulate_labels, write_simulated_export
from recjudge_utils.data import SerendipityPairs
from recjudge_utils.data._common import DataFormatError
from recjudge_utils.experiments import prompt_selection
from recjudge_utils.experiments.prompt_selection import (
    NOTEBOOK,
    PromptSelectionConfig,
    PromptSelectionRun,
    read_reference,
    save_selection,
    select_template,
)
from recjudge_utils.judge.loading import load_profile
from recjudge_utils.metrics import judge_scores as js
from recjudge_utils.protocols.pointwise_score import TEMPLATES
from recjudge_utils.reporting import prompt_selection as report

#: a simulated judge noisy enough that the four templates answer differently (one seeded draw per request)
SIM = {"name": "sim-labels", "backend": "sim", "model": "sim", "options": {"noise": 0.9, "seed": 0}}
CONFIG = PromptSelectionConfig(n_pairs=None, n_boot=200)
PER_SYSTEM = 15
#: Table 1's measures, each compared (value, interval, n) between the selection on people's labels and on the data's
NUMBERS = ["mae", "acc3", "kappa_qw", "unparsed_rate", "mae_selection"]


def toy_data() -> SerendipityPairs:
    """Toy pairs, each (user, item) once (the toy generator draws a few twice, with two g's)."""
    pairs = make_pairs(n_users=20, per_user=4, with_aux=True).drop_duplicates(["user", "item"], ignore_index=True)
    return SerendipityPairs(pairs, make_items(), "toy pairs", False, "test")


def judge_chapter(run_dir: Path, data: SerendipityPairs, config: PromptSelectionConfig = CONFIG, **kw: Any):
    """Chapter 1 with the simulated judge, its judgments logged in the run folder as the notebook's are."""
    with load_profile(SIM).open_client(run_dir=run_dir / NOTEBOOK, progress=False) as client:
        return prompt_selection.run(client, data, config, **kw)


class NoCalls:
    """A judge that must not be asked: a refusal comes before any judge call."""

    model_name = "a judge that must not be called"

    def judge_many(self, *args: object, **kwargs: object) -> list[Any]:
        raise AssertionError("the judge was called")


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Any]:
    """A run whose chapter 1 judged every pair with the four templates, and a sample of its pairs exported."""
    run_dir, data = tmp_path / "ch1run", toy_data()
    judged = judge_chapter(run_dir, data)
    exported = export_tasks(run_dir, NOTEBOOK, "scores", per_system=PER_SYSTEM, seed=0, out_dir=tmp_path / "to-label")
    return {"run_dir": run_dir, "data": data, "judged": judged, "sample": exported.sample, "tmp": tmp_path}


def _pairs(frame: pd.DataFrame) -> list[tuple[int, int]]:
    return list(zip(frame["user"].astype(int), frame["item"].astype(int), strict=True))


def _task(pair: tuple[int, int]) -> str:
    return f"scores:u{pair[0]}:i{pair[1]}"


def _on_data_labels(judged: PromptSelectionRun, pairs: set[tuple[int, int]]) -> pd.DataFrame:
    """Table 1 recomputed by hand from the run judged without labels, on ``pairs`` only, against the data's g."""
    on = np.array([p in pairs for p in _pairs(judged.eval_pairs)])
    truth = judged.eval_pairs.loc[on, "g"].to_numpy(dtype=float)
    scores = {t: f[on].reset_index(drop=True) for t, f in judged.scores.items()}
    summary = js.summarize_templates(scores, truth, n_boot=CONFIG.n_boot, seed=CONFIG.seed)
    selection = [(t, "mae_selection", js.mae_unparsed_at_worst(f["score"], truth), np.nan, np.nan, len(f))
                 for t, f in scores.items()]  # fmt: skip
    return pd.concat([summary, pd.DataFrame(selection, columns=summary.columns)], ignore_index=True)


def _numbers(summary: pd.DataFrame) -> pd.DataFrame:
    return summary[summary["measure"].isin(NUMBERS)].sort_values(["template", "measure"], ignore_index=True)


# -- (a) the sample of chapter 1's judgments ----------------------------------------------------------------------


def test_chapter_1s_pairs_are_one_stratum_one_task_per_pair(world: dict[str, Any], capsys) -> None:
    sample, judged = world["sample"], world["judged"]
    pairs = set(_pairs(judged.eval_pairs))
    assert len(pairs) == len(judged.eval_pairs) > PER_SYSTEM  # every pair judged by each of the four templates
    ls = judged.scores["ls"]  # no template named: the first judged of SHOWN_FIRST, LS (every level described)
    parsed = {_task(p) for p, s in zip(_pairs(ls), ls["score"], strict=True) if not np.isnan(s)}
    assert sample.template == "serendipity/ls"
    assert list(sample.strata) == [ALL_PAIRS] and set(sample.members[ALL_PAIRS]) == parsed
    assert sample.strata[ALL_PAIRS]["population"] == len(parsed)
    assert sample.strata[ALL_PAIRS]["unparsed"] == len(pairs) - len(parsed)
    assert len(sample.tasks) == len(sample.task_ids) == PER_SYSTEM  # a pair once, though four templates judged it
    assert all(t.strata == [ALL_PAIRS] for t in sample.tasks)
    assert all(t.inclusion_probability == {ALL_PAIRS: PER_SYSTEM / len(parsed)} for t in sample.tasks)
    # what people see is the pair as LS showed it to the judge: its rubric and the pair, no example and no answer
    for task in sample.tasks:
        assert "5 = very serendipitous" in task.rubric and "step" not in task.rubric.lower()
        assert task.case.startswith("The user's last") and "score" not in task.case.lower()
    # the judge label is LS's answer, the truth the data's g
    g = dict(zip(map(_task, _pairs(judged.eval_pairs)), judged.eval_pairs["g"], strict=True))
    assert all(sample.truth[t] == str(g[t]) for t in sample.task_ids)
    by_ls = dict(zip(map(_task, _pairs(ls)), ls["score"], strict=True))
    assert all(sample.judge_labels[t] == str(int(by_ls[t])) for t in sample.task_ids)
    # the command line of the chapter's page, another template named: its rubric shown
    out = world["tmp"] / "cot-tasks"
    code = main(["export", str(world["run_dir"]), "--notebook", NOTEBOOK, "--kind", "scores", "--per-system", "5",
                 "--template", "serendipity/cot", "--out", str(out), "--replace"])  # fmt: skip
    assert code == 0 and f"{ALL_PAIRS}: 5 of " in capsys.readouterr().out
    cot = read_sample(sample_path(world["run_dir"], NOTEBOOK, "scores"))
    assert cot.template == "serendipity/cot" and len(cot.tasks) == 5 and "unexpectedness" in cot.tasks[0].rubric


# -- (b) simulated annotators of noise 0 select as the data's labels of the same pairs ------------------------------


def test_noise_free_annotators_select_as_the_data_labels_of_the_same_pairs(world: dict[str, Any]) -> None:
    sample, judged = world["sample"], world["judged"]
    path = write_simulated_export(sample, simulate_labels(sample, noises=(0, 0)), world["tmp"] / "export.json")
    reference = read_reference(path, world["run_dir"])
    assert reference.n_annotators == 2 and reference.n_labels == 2 * PER_SYSTEM and reference.simulated
    people = judge_chapter(world["run_dir"], world["data"], reference=reference)
    # every pair judged again, from the cache; the numbers on the labelled pairs only
    assert (people.judging["cache_hits"] == people.judging["calls"]).all()
    assert len(people.judged) == len(judged.eval_pairs) and len(people.eval_pairs) == PER_SYSTEM
    assert {_task(p) for p in _pairs(people.eval_pairs)} == sample.task_ids
    assert (people.eval_pairs["g"] == people.eval_pairs["data_g"]).all()  # noise 0: the consensus is the truth
    expected = _on_data_labels(judged, set(_pairs(people.eval_pairs)))
    pd.testing.assert_frame_equal(_numbers(people.summary), _numbers(expected), check_dtype=False)
    assert people.selected == select_template(expected)[0]
    assert len(people.items()["scores"]) == len(TEMPLATES) * PER_SYSTEM
    # the page says what the numbers are against: the file, the pairs, the annotators, SIMULATED
    lines = "\n".join(report.reference_lines(people))
    assert "export.json" in lines and f"on {PER_SYSTEM} of the {len(judged.eval_pairs)} judged pairs" in lines
    assert "2 SIMULATED annotators" in lines and f"equals the consensus on {PER_SYSTEM} of them" in lines
    [warning] = report.reference_notes(people)
    assert "SIMULATED annotators" in warning.text and not report.reference_notes(judged)
    assert report.reference_lines(judged) == [
        f"reference: the data's g (toy pairs [STAND-IN]) of all {len(judged.eval_pairs)} judged pairs "
        "(no labels file given)"
    ]
    assert "2 SIMULATED annotators" in report.table1(people, "Table 1.").caption
    assert report.takeaways_items(people)[0].startswith("Selected on people's labels, not the data's g")
    assert report.sample_size_lines(people)[0].startswith(f"judged pairs: n = {len(judged.eval_pairs)};")
    assert people.selected is not None
    assert report.selection_lines(people)[1].startswith("selected on the consensus of 2 SIMULATED annotators")
    saved = json.loads(save_selection(people, world["tmp"] / "selected.json").read_text())
    assert saved["n_pairs"] == PER_SYSTEM and saved["n_judged"] == len(judged.eval_pairs)
    assert saved["reference"]["annotators"] == 2 and saved["reference"]["simulated"] is True


# -- (c) labels that make another template best select it ---------------------------------------------------------


def test_labels_equal_to_one_templates_answers_select_that_template(world: dict[str, Any]) -> None:
    sample, judged = world["sample"], world["judged"]
    labelled = {tuple(int(x) for x in t.task_id.removeprefix("scores:u").split(":i")) for t in sample.tasks}
    on_data = select_template(_on_data_labels(judged, labelled))[0]
    # a template neither the data's labels of these pairs nor of every judged pair select
    other = next(t for t in TEMPLATES if t not in (on_data, judged.selected))
    answers = judged.scores[other]
    own = {_task(p): s for p, s in zip(_pairs(answers), answers["score"], strict=True)}
    assert all(not np.isnan(own[t]) for t in sample.task_ids)
    labels = {"annotator-1": {t: str(int(own[t])) for t in sample.task_ids}}
    path = write_simulated_export(sample, labels, world["tmp"] / "its-own-answers.json")
    people = judge_chapter(world["run_dir"], world["data"], reference=read_reference(path, world["run_dir"]))
    assert people.selected == other != on_data
    assert people.measure("mae").loc[other, "value"] == 0.0 and people.measure("acc3").loc[other, "value"] == 1.0
    assert (people.measure("mae_selection").drop(index=other)["value"] > 0).all()


# -- (d) bad labels are refused before any judge call ---------------------------------------------------------------


def test_labels_of_tasks_not_in_the_sample_are_refused_before_any_judge_call(world: dict[str, Any]) -> None:
    sample = world["sample"]
    strangers = [dataclasses.replace(t, task_id=f"scores:u{900 + k}:i1") for k, t in enumerate(sample.tasks)]
    other = dataclasses.replace(sample, tasks=strangers)
    path = write_simulated_export(other, {"someone": {t.task_id: "4" for t in strangers}}, world["tmp"] / "bad.json")
    with pytest.raises(DataFormatError) as refused:
        prompt_selection.run(NoCalls(), world["data"], CONFIG, reference=read_reference(path, world["run_dir"]))
    message = str(refused.value)
    assert str(path) in message and "'scores:u900:i1' is not in the run's sample" in message


def test_labels_without_a_recorded_sample_are_refused_with_the_command_to_draw_one(world: dict[str, Any]) -> None:
    sample = world["sample"]
    path = write_simulated_export(sample, simulate_labels(sample, noises=(0,)), world["tmp"] / "export.json")
    elsewhere = world["tmp"] / "another-run"
    elsewhere.mkdir()
    with pytest.raises(DataFormatError, match="the run records no sample of chapter 1's pairs") as refused:
        read_reference(path, elsewhere)
    assert f"--notebook {NOTEBOOK} --kind scores" in str(refused.value)
    with pytest.raises(DataFormatError, match="no such labels file"):
        read_reference(world["tmp"] / "missing.json", world["run_dir"])


def test_labelled_pairs_this_execution_does_not_judge_are_refused_before_any_judge_call(
    world: dict[str, Any],
) -> None:
    sample = world["sample"]
    path = write_simulated_export(sample, simulate_labels(sample, noises=(0,)), world["tmp"] / "export.json")
    reference = read_reference(path, world["run_dir"])
    fewer = dataclasses.replace(CONFIG, n_pairs=5)  # another execution: five pairs judged, not the labelled ones
    with pytest.raises(ValueError, match=r"labelled pairs are not among the 5 pairs this execution judges") as refused:
        prompt_selection.run(NoCalls(), world["data"], fewer, reference=reference)
    assert "n_pairs=5" in str(refused.value) and "export.json" in str(refused.value)
