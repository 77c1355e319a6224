"""Tests for recjudge_utils.metrics.judge_scores against hand-computed values and scikit-learn."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score, confusion_matrix, mean_absolute_error

from recjudge_utils.metrics import judge_scores as jm
from recjudge_utils.reporting.prompt_selection import table1_side_by_side

NAN = float("nan")


def test_mae_ignores_unparsed_and_matches_hand_value():
    pred = [1, 2, NAN, 5]
    truth = [2, 2, 3, 1]
    assert jm.mae(pred, truth) == pytest.approx((1 + 0 + 4) / 3)


def test_three_class_boundaries():
    out = jm.three_class([1, 2.5, 2.999, 3, 3.001, 5, NAN])
    assert out[:6].tolist() == [-1, -1, -1, 0, 1, 1]
    assert np.isnan(out[6])


def measures(summary: pd.DataFrame) -> pd.DataFrame:
    return summary.set_index("measure")


def test_three_class_accuracy_hand_value():
    pred = [1, 2, NAN, 4, 3]
    truth = [2, 4, 3, 5, 2]
    # classes: pred -1,-1,(nan),+1,0 ; truth -1,+1,0,+1,-1 -> matches 1,0,-,1,0 -> 2/4
    assert measures(jm.summarize_predictions(pred, truth, n_boot=50)).loc["acc3", "value"] == pytest.approx(0.5)


def test_unparsed_rate():
    assert jm.unparsed_rate([1, NAN, NAN, 4]) == pytest.approx(0.5)
    assert jm.unparsed_rate([1, 2]) == 0.0


def test_metrics_match_sklearn_on_random_data():
    rng = np.random.default_rng(3)
    truth = rng.integers(1, 6, size=200).astype(float)
    pred = rng.integers(1, 6, size=200).astype(float)
    pred[rng.choice(200, size=17, replace=False)] = NAN
    ok = ~np.isnan(pred)
    assert jm.mae(pred, truth) == pytest.approx(mean_absolute_error(truth[ok], pred[ok]))
    acc = accuracy_score(np.sign(truth[ok] - 3), np.sign(pred[ok] - 3))
    row = measures(jm.summarize_predictions(pred, truth, n_boot=200))
    assert row.loc["acc3", "value"] == pytest.approx(acc)
    kappa = cohen_kappa_score(truth[ok].astype(int), pred[ok].astype(int), labels=[1, 2, 3, 4, 5], weights="quadratic")
    assert row.loc["kappa_qw", "value"] == pytest.approx(kappa)
    # n: the parsed pairs a measure rests on, every pair for the unparsed rate
    assert row.loc["unparsed_rate", "n"] == 200 and (row.loc[["mae", "acc3", "kappa_qw"], "n"] == 183).all()
    assert row.loc["unparsed_rate", "value"] == pytest.approx(17 / 200)
    cm = jm.confusion_frame(pred, truth)
    expect = confusion_matrix(truth[ok].astype(int), pred[ok].astype(int), labels=[1, 2, 3, 4, 5])
    np.testing.assert_array_equal(cm[[1, 2, 3, 4, 5]].to_numpy(), expect)
    assert cm["unparsed"].sum() == 17
    assert cm.to_numpy().sum() == 200


def test_confusion_frame_rows_are_truth_columns_are_predictions():
    cm = jm.confusion_frame([5, 5, NAN], [1, 1, 2])
    assert cm.loc[1, 5] == 2
    assert cm.loc[2, "unparsed"] == 1
    assert cm.to_numpy().sum() == 3
    no_unparsed = jm.confusion_frame([5, 5, NAN], [1, 1, 2], include_unparsed=False)
    assert "unparsed" not in no_unparsed.columns
    assert no_unparsed.to_numpy().sum() == 2


def test_confusion_frame_rejects_non_levels():
    with pytest.raises(ValueError):
        jm.confusion_frame([2.5], [3])


def test_summarize_predictions_ci_brackets_point_and_expected_scores():
    truth = np.array([1, 2, 2, 3, 4, 2, 1, 5, 3, 2], dtype=float)
    pred = np.array([2, 2, 3, 3, NAN, 1, 1, 4, 3, 2], dtype=float)
    expected = np.array([1.5, 2.1, NAN, 3.0, 3.9, 1.4, 1.2, 4.5, 2.8, 2.0])
    summary = jm.summarize_predictions(pred, truth, expected, n_boot=500, seed=1)
    assert tuple(summary.columns) == jm.MEASURE_COLUMNS and tuple(summary["measure"]) == jm.MEASURES
    row = measures(summary)
    for m in ("mae", "acc3", "kappa_qw"):
        assert row.loc[m, "low"] <= row.loc[m, "value"] <= row.loc[m, "high"], m
    assert row.loc["mae", "value"] == pytest.approx(jm.mae(pred, truth))
    # expected-score MAE on pairs where both the argmax and the expected score exist (8 pairs)
    both = ~np.isnan(pred) & ~np.isnan(expected)
    assert row.loc["mae_expected", "n"] == 8 and row.loc["mae_argmax_same", "n"] == 8
    assert row.loc["mae_expected", "value"] == pytest.approx(np.abs(expected[both] - truth[both]).mean())
    assert row.loc["mae_argmax_same", "value"] == pytest.approx(np.abs(pred[both] - truth[both]).mean())


def test_all_unparsed_gives_nan_metrics_not_a_default():
    row = measures(jm.summarize_predictions([NAN, NAN], [1, 2], n_boot=10))
    assert row.loc["unparsed_rate", "value"] == 1.0
    assert row.loc[["mae", "acc3", "kappa_qw"], ["value", "low", "high"]].isna().all().all()
    assert np.isnan(jm.mae([NAN], [3]))


def test_bad_inputs_raise():
    with pytest.raises(ValueError):
        jm.mae([1, 2], [1])
    with pytest.raises(ValueError):
        jm.mae([1], [NAN])


def test_constant_predictions():
    truth = [1, 2, 2, 3, 3]
    assert jm.constant_predictions(truth).tolist() == [2.0] * 5  # tie 2/3 -> lower level
    assert jm.constant_predictions(truth, 4).tolist() == [4.0] * 5
    with pytest.raises(ValueError):
        jm.constant_predictions(truth, 7)


def test_summarize_templates_one_row_per_template():
    truth = pd.Series([1, 2, 3])
    frames = {
        "base": pd.DataFrame(
            {
                "score": [1, NAN, 3],
                "expected_score": [NAN, NAN, NAN],
                "n_calls": [1, 1, 1],
                "prompt_tokens": [10, 10, 10],
                "completion_tokens": [2, 2, 2],
                "cost_usd": [0.0, 0.0, 0.0],
                "latency_s": [0.5, 0.5, 1.0],
            }
        ),
        "ltm": pd.DataFrame({"score": [2, 2, 2], "n_calls": [3, 3, 3]}),
    }
    table = jm.summarize_templates(frames, truth, n_boot=50)
    assert list(table.columns) == ["template", *jm.MEASURE_COLUMNS]
    assert list(dict.fromkeys(table["template"])) == ["base", "ltm"]
    assert "calls" not in set(table["measure"])  # what the templates used: recjudge_utils.judge.usage.template_usage
    mae = jm.measure_by(table, "mae", "template")
    assert mae.loc["base", "n"] == 2  # one unparsed answer of three
    assert mae.loc["ltm", "value"] == pytest.approx(2 / 3)
    assert mae.loc["base", "value"] == pytest.approx(0.0)
    with pytest.raises(ValueError):
        jm.summarize_templates({"x": pd.DataFrame({"score": [1]})}, truth)


def test_table1_side_by_side_and_score_distribution():
    truth = np.array([1, 2, 2, 3, 4], dtype=float)
    frames = {
        "cot": pd.DataFrame({"score": [1, 2, 3, NAN, 4], "n_calls": [1] * 5}),
        "zero": pd.DataFrame({"score": [NAN] * 5}),
    }
    summary = jm.summarize_templates(frames, truth, n_boot=50)
    paper = pd.DataFrame(
        {"template": ["cot", "base"], "model": ["GPT", "GPT"], "mae": [0.847, 1.473], "accuracy_pct": [46.98, 20.79]}
    )
    t = table1_side_by_side(summary, paper, "ours")
    assert list(t.index) == ["CoT", "zero"]
    assert t.loc["CoT", ("MAE", "paper, GPT")] == "0.847"
    assert t.loc["zero", ("MAE", "paper, GPT")] == "—"
    assert t.loc["CoT", ("MAE", "ours (95 % CI)")].startswith("0.25 [")  # |1-1|+|2-2|+|3-2|+|4-4| over 4 parsed
    assert t.loc["CoT", ("3-class accuracy %", "ours (95 % CI)")].startswith("75.0 [")
    assert t.loc["zero", ("MAE", "ours (95 % CI)")] == "no parsed judgment"  # marked, not a number
    assert t.loc["CoT", ("", "parsed / judged")] == "4 / 5"
    d = jm.score_distribution(frames, truth)
    assert set(d["source"]) == {"g (truth)", "cot", "zero"}
    assert d.groupby("source")["share"].sum().round(9).eq(1.0).all()
    assert d.query("source == 'zero' and score == 'unparsed'")["count"].item() == 5
    assert d.query("source == 'g (truth)' and score == '2'")["count"].item() == 2
