"""Estimates that use both people and the judge (issue 44 item 4): human-only, judge-only and prediction-powered
(PPI++ via ppi-python), the effective number of labels, the labels-needed curve, and by simulation with a known
truth: the prediction-powered 95 % CI covers it for a good judge and a near-random one, and is narrower than the
human-only CI for the good judge."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import ppi_py
import pytest
from annotation_world import NOTEBOOK, make_run

from recjudge_utils.annotation import KINDS, export_tasks, read_labels
from recjudge_utils.annotation.ppi import ESTIMATE_COLUMNS, estimate, labels_needed_curve, system_estimates
from recjudge_utils.annotation.simulated_annotators import simulate_labels, write_simulated_export

POPULATION, LABELLED, SAMPLES = 1000, 100, 200


def _world(rng: np.random.Generator, judge: str) -> tuple[np.ndarray, np.ndarray]:
    """(people's values, judge's values) of a population of 5-level scores: a good judge is off by one level a
    fifth of the time, a near-random one answers uniformly at random."""
    truth = np.clip(np.rint(rng.normal(2.6, 1.1, POPULATION)), 1, 5)
    if judge == "good":
        off = rng.random(POPULATION) < 0.2
        return truth, np.clip(truth + off * rng.choice([-1, 1], POPULATION), 1, 5)
    return truth, rng.integers(1, 6, POPULATION).astype(float)


@pytest.mark.parametrize("judge", ["good", "near-random"])
def test_the_prediction_powered_ci_covers_the_truth_at_its_nominal_rate(judge: str) -> None:
    rng = np.random.default_rng(44)
    covered, ppi_width, human_width = [], [], []
    for _ in range(SAMPLES):
        truth, judged = _world(rng, judge)
        labelled = rng.choice(POPULATION, LABELLED, replace=False)
        rest = np.setdiff1d(np.arange(POPULATION), labelled)
        est = estimate(truth[labelled], judged[labelled], judged[rest])
        covered.append(est.ppi.low <= truth.mean() <= est.ppi.high)
        ppi_width.append(est.ppi.high - est.ppi.low)
        human_width.append(est.human.high - est.human.low)
    assert np.mean(covered) >= 0.9
    if judge == "good":
        assert np.mean(ppi_width) < 0.8 * np.mean(human_width)
    else:  # PPI++ weighs a useless judge down: no narrower than the people alone, and not much wider
        assert np.mean(ppi_width) == pytest.approx(np.mean(human_width), rel=0.1)


def test_the_estimate_is_ppi_pythons_power_tuned_one() -> None:
    rng = np.random.default_rng(0)
    truth, judged = _world(rng, "good")
    y, yhat, rest = truth[:80], judged[:80], judged[80:]
    est = estimate(y, yhat, rest, ci=0.9)
    low, high = ppi_py.ppi_mean_ci(y, yhat, rest, alpha=0.1)
    assert (est.ppi.low, est.ppi.high) == pytest.approx((low[0], high[0]))
    assert est.ppi.value == pytest.approx(ppi_py.ppi_mean_pointestimate(y, yhat, rest)[0])
    assert (est.human.low, est.human.high) == pytest.approx(ppi_py.classical_mean_ci(y, alpha=0.1))
    assert est.judge.value == pytest.approx(judged.mean()) and 0 < est.lam <= 1
    width = (est.human.high - est.human.low) / (est.ppi.high - est.ppi.low)
    assert est.effective_labels == pytest.approx(80 * width**2) and est.effective_labels > 80


def test_a_judge_with_one_answer_adds_nothing() -> None:
    y = np.array([1.0, 2, 4, 5, 3, 3, 2])
    est = estimate(y, np.full(7, 3.0), np.full(50, 3.0))
    assert est.lam == 0 and (est.ppi.value, est.ppi.low, est.ppi.high) == pytest.approx(
        (est.human.value, est.human.low, est.human.high)
    )


def test_the_labels_needed_curve_narrows_with_labels_and_the_good_judge_helps() -> None:
    truth, judged = _world(np.random.default_rng(1), "good")
    curve = labels_needed_curve(truth[:60], judged[:60], judged[60:], sizes=[10, 30, 60], reps=50, seed=0)
    assert curve["n"].tolist() == [10, 30, 60]
    assert curve["human_width"].is_monotonic_decreasing and curve["ppi_width"].is_monotonic_decreasing
    assert (curve["ppi_width"] < curve["human_width"]).all()


@pytest.mark.parametrize("kind", ["lists", "scores"])  # a scores unit can count for several systems
def test_system_estimates_of_simulated_annotators_on_a_run(tmp_path: Path, kind: str) -> None:
    sample = export_tasks(make_run(tmp_path), NOTEBOOK, kind, per_system=6, seed=0, out_dir=tmp_path / "o").sample
    path = write_simulated_export(sample, simulate_labels(sample, (0.5, 0.8), seed=0), tmp_path / "e.json")
    table = system_estimates(read_labels(path, sample), sample)
    assert list(table.columns) == ESTIMATE_COLUMNS and sorted(table["system"]) == sorted(sample.members)
    for _, row in table.iterrows():
        members = sample.members[row["system"]]
        assert row["n_labelled"] == sample.strata[row["system"]]["sampled"] and row["n_judged"] == len(members)
        judge = np.mean([KINDS[kind].value(sample.judge_labels[t]) for t in members])
        assert row["judge"] == pytest.approx(judge)
        assert row["human_low"] <= row["human"] <= row["human_high"] and row["ppi_low"] <= row["ppi"] <= row["ppi_high"]
