"""Agreement with people (issue 44 item 3): annotators among themselves against the krippendorff package and
scikit-learn, and the judge against the human consensus over all systems and per system."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import pytest
from annotation_world import NOTEBOOK, make_run
from sklearn.metrics import cohen_kappa_score, mean_absolute_error

from recjudge_utils.annotation import KINDS, AnnotationSample, Labels, export_tasks, read_labels
from recjudge_utils.annotation.agreement_with_people import (
    ALL_SYSTEMS,
    consensus,
    human_agreement,
    judge_agreement,
    label_table,
)
from recjudge_utils.annotation.simulated_annotators import simulate_labels, write_simulated_export

N_BOOT = 200


def _labelled(
    tmp_path: Path, kind: str, noises: tuple[float, ...] = (0.4, 0.8, 1.2)
) -> tuple[AnnotationSample, Labels]:
    sample = export_tasks(make_run(tmp_path), NOTEBOOK, kind, per_system=6, seed=0, out_dir=tmp_path / "o").sample
    path = write_simulated_export(sample, simulate_labels(sample, noises, seed=3), tmp_path / "export.json")
    return sample, read_labels(path, sample)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_humans_among_themselves_match_krippendorff_and_scikit_learn(tmp_path: Path, kind: str) -> None:
    _, labels = _labelled(tmp_path, kind)
    table = human_agreement(labels, kind, n_boot=N_BOOT)
    order = KINDS[kind].labels
    wide = label_table(labels)
    codes = wide.apply(lambda col: col.map(order.index)).to_numpy(dtype=float).T  # raters x tasks
    alpha = table[table["statistic"].str.startswith("Krippendorff")].iloc[0]
    assert alpha["value"] == pytest.approx(krippendorff.alpha(codes, level_of_measurement="ordinal"))
    assert alpha["low"] <= alpha["value"] <= alpha["high"]
    kappas = table[table["statistic"] == "quadratic-weighted kappa"]
    assert len(kappas) == len(list(combinations(wide.columns, 2)))
    for (a, b), (_, row) in zip(combinations(wide.columns, 2), kappas.iterrows(), strict=True):
        reference = cohen_kappa_score(wide[a], wide[b], labels=list(order), weights="quadratic")
        assert row["between"] == f"{a} vs {b}" and row["value"] == pytest.approx(reference)


def test_the_consensus_is_the_median_label() -> None:
    frame = pd.DataFrame(
        [("t1", "a", "Good Match"), ("t1", "b", "Good Match"), ("t1", "c", "Poor Match"),
         ("t2", "a", "Poor Match"), ("t2", "b", "Good Match"), ("t3", "a", "Partial Match")],
        columns=["task_id", "annotator", "label"],
    )  # fmt: skip
    agreed = consensus(Labels(frame, Path("x"), 0, 0), "lists")
    assert agreed.to_dict() == {"t1": "Good Match", "t2": "Poor Match", "t3": "Partial Match"}


def test_the_judge_against_the_consensus_on_scores_matches_scikit_learn(tmp_path: Path) -> None:
    sample, labels = _labelled(tmp_path, "scores")
    table = judge_agreement(labels, sample, n_boot=N_BOOT)
    agreed = consensus(labels, "scores")
    ids = [t.task_id for t in sample.tasks]
    judge = np.array([int(sample.judge_labels[i]) for i in ids])
    people = np.array([int(agreed[i]) for i in ids])
    overall = table[table["scope"] == ALL_SYSTEMS].set_index("statistic")
    assert overall.loc["MAE", "value"] == pytest.approx(mean_absolute_error(people, judge))
    assert overall.loc["quadratic-weighted kappa", "value"] == pytest.approx(
        cohen_kappa_score(judge, people, weights="quadratic", labels=[1, 2, 3, 4, 5])
    )
    assert overall.loc["3-class accuracy", "value"] == pytest.approx(np.mean(np.sign(judge - 3) == np.sign(people - 3)))
    assert (overall["n"] == len(ids)).all()
    for system, members in sample.members.items():
        rows = table[table["scope"] == system].set_index("statistic")
        labelled = [t.task_id for t in sample.tasks if system in t.strata]
        assert set(labelled) <= set(members) and rows.loc["MAE", "n"] == len(labelled)


def test_duels_report_agreement_without_ties_and_both_tie_rates(tmp_path: Path) -> None:
    sample, labels = _labelled(tmp_path, "duels")
    table = judge_agreement(labels, sample, n_boot=N_BOOT)
    overall = table[table["scope"] == ALL_SYSTEMS]
    agreed = consensus(labels, "duels")
    judge = np.array([sample.judge_labels[t.task_id] for t in sample.tasks])
    people = np.array([agreed[t.task_id] for t in sample.tasks])
    decided = (judge != "Tie") & (people != "Tie")
    row = overall[overall["statistic"] == "agreement excluding ties"].iloc[0]
    assert row["n"] == decided.sum() and row["value"] == pytest.approx(np.mean(judge[decided] == people[decided]))
    ties = overall[overall["statistic"] == "tie rate"].set_index("between")["value"]
    assert ties.to_dict() == pytest.approx(
        {"judge": np.mean(judge == "Tie"), "human consensus": np.mean(people == "Tie")}
    )
    assert set(table["scope"]) == {ALL_SYSTEMS, *sample.members}


def test_a_judge_giving_the_truth_agrees_fully_with_noiseless_people(tmp_path: Path) -> None:
    sample, _ = _labelled(tmp_path, "lists")
    sample.judge_labels.update(sample.truth)  # the judge and both people give the truth
    path = write_simulated_export(sample, simulate_labels(sample, (0.0, 0.0), seed=0), tmp_path / "exact.json")
    table = judge_agreement(read_labels(path, sample), sample, n_boot=N_BOOT)
    overall = table[table["scope"] == ALL_SYSTEMS].set_index("statistic")
    assert overall.loc["agreement", "value"] == 1.0 and overall.loc["quadratic-weighted kappa", "value"] == 1.0
