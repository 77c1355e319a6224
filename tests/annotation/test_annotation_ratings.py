"""The judge against the users' own held-out ratings: which pairs are used (the cut the run records), the statistics
against scipy's, and the cases with nothing to compare."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from recjudge_utils.annotation.ratings import (
    PAIR_COLUMNS,
    RATINGS_COLUMNS,
    REFERENCE,
    RELEVANCE,
    SCORE,
    RatingsComparison,
    judge_against_ratings,
)
from recjudge_utils.data import Dataset
from recjudge_utils.splitting.export import temporal_fold

CH7 = "07_your_recommenders"
CH2 = "02_rs_reevaluation"
#: judged users whose item is rated after every cut: user u rates item 500 + u at 10_000 + u
AFTER = tuple(range(1, 31))
BEFORE = (31, 531)  # rated at time 5: before every cut
NEVER = (32, 532)  # never rated
BETWEEN = (33, 533)  # rated between fold 0's cut and fold 1's (a rating below 4: the split is unchanged)


def _rating(user: int) -> float:
    return float(1 + user % 5)


def _dataset() -> Dataset:
    """200 positives of a filler user (times 10 .. 2000) set the cuts; the judged users' own ratings come before
    them (time 5) or after (10_000 + user); one negative rating falls between the cuts of folds 0 and 1."""
    rows = [(100, 1000 + k, 5.0, 10 * (k + 1)) for k in range(200)]
    rows += [(u, 500 + u, _rating(u), 10_000 + u) for u in AFTER]
    rows.append((*BEFORE, 5.0, 5))
    frame = pd.DataFrame(rows, columns=["user", "item", "rating", "timestamp"])
    plain = _make(frame)
    cut0, cut1 = temporal_fold(plain, 0).train_end, temporal_fold(plain, 1).train_end
    between = pd.DataFrame([(*BETWEEN, 2.0, (cut0 + cut1) // 2)], columns=frame.columns)
    out = _make(pd.concat([frame, between], ignore_index=True))
    assert (temporal_fold(out, 0).train_end, temporal_fold(out, 1).train_end) == (cut0, cut1)
    assert 5 < cut0 < (cut0 + cut1) // 2 < cut1 < 10_000
    return out


def _make(frame: pd.DataFrame, ratings: bool = True) -> Dataset:
    frame = frame.assign(rating=frame["rating"] if ratings else 1.0)
    items = pd.DataFrame({"item": sorted(frame["item"].unique())})
    items["title"] = [f"item {i}" for i in items["item"]]
    items["genres"] = [["Drama"] for _ in items["item"]]
    return Dataset("tiny", frame, items, None, "a tiny dataset", False, "tests")


def _record(user: int, item: int, parsed: dict[str, object] | None, template: str = "cot") -> dict[str, object]:
    stage = template if template != "ltm" else "ltm/serendipity"
    return {
        "template_id": f"serendipity/{stage}",
        "metadata": {"user": user, "item": item, "template": template, "stage": stage},
        "status": "parsed" if parsed is not None else "unparsed",
        "parsed": parsed,
        "messages_hash": f"{user:032d}{item:032d}",
    }


def _write_run(
    root: Path,
    judge: Callable[[float], int],
    *,
    notebook: str = CH7,
    parameters: dict[str, object] | None = None,
    template: str = "cot",
    records: list[dict[str, object]] | None = None,
) -> Path:
    """A run folder with ``notebook``'s judgments of every test pair: score ``judge(rating)`` (3 for the unrated
    ones); CoT's relevance step is the rating itself."""
    run = root / "run"
    folder = run / notebook
    folder.mkdir(parents=True, exist_ok=True)
    if records is None:
        records = []
        pairs = [(u, 500 + u, _rating(u)) for u in AFTER] + [(*BEFORE, 5.0), (*NEVER, 3.0), (*BETWEEN, 2.0)]
        for user, item, rating in pairs:
            parsed: dict[str, object] = {"score": judge(rating)}
            if template == "cot":
                parsed |= {"relevance": int(rating), "unexpectedness": 3}
            records.append(_record(user, item, parsed, template))
    with open(folder / "judgments.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)
    params = {"fold": 0, "dataset": "tiny"} if parameters is None else parameters
    manifest = {"notebooks": [{"notebook": f"{notebook}.ipynb", "parameters": params}]}
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return run


def _pairs(result: RatingsComparison) -> set[tuple[int, int]]:
    return set(zip(result.pairs["user"].tolist(), result.pairs["item"].tolist(), strict=True))


def test_the_pairs_are_exactly_the_ones_rated_after_the_cut(tmp_path: Path) -> None:
    ds = _dataset()
    result = judge_against_ratings(_write_run(tmp_path, lambda r: int(r)), CH7, dataset=ds, n_boot=50)
    assert result.compared and result.why_not is None
    # the pair rated between the cuts is after fold 0's cut: held out for fold 0
    assert _pairs(result) == {(u, 500 + u) for u in AFTER} | {BETWEEN}
    assert BEFORE not in _pairs(result) and NEVER not in _pairs(result)
    assert list(result.pairs.columns) == PAIR_COLUMNS and list(result.table.columns) == RATINGS_COLUMNS
    assert result.cuts == {0: temporal_fold(ds, 0).train_end}
    assert (result.pairs["rated_at"] > result.pairs["cut"]).all()
    assert result.pairs.set_index("user").loc[7, "rating"] == _rating(7)
    coverage = result.statistic("coverage")
    assert (coverage["value"], coverage["n"]) == (31 / 33, 33) and coverage["interval"] == "Wilson"
    assert set(result.table["reference"]) == {REFERENCE}


def test_the_cut_is_the_fold_the_run_records(tmp_path: Path) -> None:
    ds = _dataset()
    # chapter 7 at fold 1: the pair rated between the cuts was rated before its cut
    run = _write_run(tmp_path, lambda r: int(r), parameters={"fold": 1, "dataset": "tiny"})
    result = judge_against_ratings(run, CH7, dataset=ds, n_boot=20)
    assert result.cuts == {1: temporal_fold(ds, 1).train_end}
    assert _pairs(result) == {(u, 500 + u) for u in AFTER}
    # folds= overrides the record
    assert BETWEEN in _pairs(judge_against_ratings(run, CH7, dataset=ds, folds=0, n_boot=20))


def test_the_executed_notebook_s_parameters_count_when_the_manifest_has_none(tmp_path: Path) -> None:
    run = _write_run(tmp_path, lambda r: int(r), parameters={})
    cells = [
        {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": ['fold = 0  # "a" fold\n', "x = f()\n"]},
        {"cell_type": "code", "metadata": {"tags": ["injected-parameters"]}, "source": "fold = 1\n"},
    ]
    (run / "executed").mkdir()
    (run / "executed" / f"{CH7}.ipynb").write_text(json.dumps({"cells": cells}), encoding="utf-8")
    result = judge_against_ratings(run, CH7, dataset=_dataset(), n_boot=20)
    assert result.folds == (1,) and BETWEEN not in _pairs(result)


def test_chapter_2_s_folds_take_the_latest_cut_of_the_lists_holding_the_pair(tmp_path: Path) -> None:
    ds = _dataset()
    run = _write_run(tmp_path, lambda r: int(r), notebook=CH2, parameters={"folds": 2, "dataset": "tiny"})
    for fold, users in ((0, [*AFTER, BETWEEN[0]]), (1, list(AFTER))):
        folder = run / "lists" / f"fold{fold}"
        folder.mkdir(parents=True)
        lines = [f"{u} Q0 {500 + u} 1 1.0 pop\n" for u in users]
        (folder / "pop.trec").write_text("".join(lines), encoding="utf-8")
    result = judge_against_ratings(run, CH2, dataset=ds, n_boot=20)
    assert result.folds == (0, 1)
    # only fold 0's lists hold the pair rated between the cuts: its cut is fold 0's, so it is held out
    assert BETWEEN in _pairs(result)
    assert set(result.pairs.loc[result.pairs["user"] == BETWEEN[0], "fold"]) == {0}
    assert set(result.pairs.loc[result.pairs["user"] != BETWEEN[0], "fold"]) == {1}
    (run / "lists" / "fold1" / "pop.trec").write_text(f"{BETWEEN[0]} Q0 {BETWEEN[1]} 1 1.0 pop\n", encoding="utf-8")
    assert BETWEEN not in _pairs(judge_against_ratings(run, CH2, dataset=ds, n_boot=20))


def test_rho_and_its_interval_are_scipy_s_on_the_same_pairs(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    noisy = {r: int(np.clip(r + rng.integers(-2, 3), 1, 5)) for r in (1.0, 2.0, 3.0, 4.0, 5.0)}
    scores = {u: int(np.clip(_rating(u) + rng.integers(-2, 3), 1, 5)) for u in AFTER}
    records = [_record(u, 500 + u, {"score": scores[u]}, "ls") for u in AFTER]
    records.append(_record(*BETWEEN, {"score": noisy[2.0]}, "ls"))
    run = _write_run(tmp_path, lambda r: 0, template="ls", records=records)
    n_boot, seed = 400, 11
    result = judge_against_ratings(run, CH7, dataset=_dataset(), n_boot=n_boot, seed=seed)
    x = result.pairs["score"].to_numpy(float)
    y = result.pairs["rating"].to_numpy(float)
    assert len(x) == 31
    rho = result.statistic("Spearman")
    assert rho["value"] == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12) and rho["n"] == 31
    boot = stats.bootstrap(
        (x, y),
        lambda a, b: stats.spearmanr(a, b).statistic,
        n_resamples=n_boot,
        paired=True,
        vectorized=False,
        method="percentile",
        random_state=np.random.default_rng(seed),
    )
    assert (rho["low"], rho["high"]) == pytest.approx(
        (boot.confidence_interval.low, boot.confidence_interval.high), abs=1e-12
    )
    liked = y >= 4
    assert result.statistic("mean judge answer, rating >= 4")["value"] == pytest.approx(x[liked].mean())
    assert result.statistic("mean judge answer, rating < 4")["value"] == pytest.approx(x[~liked].mean())
    difference = result.statistic("difference of means")
    assert difference["value"] == pytest.approx(x[liked].mean() - x[~liked].mean())
    assert difference["low"] <= difference["value"] <= difference["high"]
    # no relevance step in LS: the score stands in for it, and the table says so
    assert set(result.table["what"]) == {"judged pairs", result.statistic("Spearman")["what"]}
    assert "no relevance step" in rho["what"]


@pytest.mark.parametrize(("judge", "expected"), [(lambda r: int(r), 1.0), (lambda r: 6 - int(r), -1.0)])
def test_a_judge_equal_to_the_rating_gives_rho_one_and_a_reversed_one_minus_one(
    tmp_path: Path, judge: Callable[[float], int], expected: float
) -> None:
    result = judge_against_ratings(_write_run(tmp_path, judge), CH7, dataset=_dataset(), n_boot=100)
    rho = result.statistic("Spearman", SCORE)
    assert rho["value"] == pytest.approx(expected) and (rho["low"], rho["high"]) == pytest.approx((expected,) * 2)
    assert math.copysign(1, result.statistic("difference", SCORE)["value"]) == expected
    # CoT's relevance step (the rating itself here) is compared too
    assert result.statistic("Spearman", RELEVANCE)["value"] == pytest.approx(1.0)


def test_ltm_s_relevance_stage_is_its_relevance_step(tmp_path: Path) -> None:
    records = []
    for u in AFTER:
        records.append(_record(u, 500 + u, {"score": 3 if u % 2 else 4}, "ltm"))
        step = _record(u, 500 + u, {"relevance": 6 - int(_rating(u))}, "ltm")
        step["template_id"] = "serendipity/ltm/relevance"
        step["metadata"] = {"user": u, "item": 500 + u, "template": "ltm", "stage": "ltm/relevance"}
        records.append(step)
    run = _write_run(tmp_path, lambda r: 0, records=records)
    result = judge_against_ratings(run, CH7, dataset=_dataset(), n_boot=50)
    assert result.template == "serendipity/ltm/serendipity"
    assert result.statistic("Spearman", RELEVANCE)["value"] == pytest.approx(-1.0)
    assert result.pairs["relevance"].notna().all()


def test_nothing_to_compare_says_why(tmp_path: Path) -> None:
    ds = _dataset()
    unrated = [_record(*NEVER, {"score": 3}, "ls"), _record(*BEFORE, {"score": 4}, "ls")]
    result = judge_against_ratings(_write_run(tmp_path / "a", lambda r: 0, records=unrated), CH7, dataset=ds)
    assert not result.compared and "none of the 2 judged pairs" in str(result.why_not)
    assert result.pairs.empty and result.statistic("coverage", "judged pairs")["value"] == 0.0

    duel: dict[str, object] = {"template_id": "arena/pairwise", "metadata": {"user": 1, "A": "x"}, "status": "parsed"}
    result = judge_against_ratings(_write_run(tmp_path / "b", lambda r: 0, records=[duel]), CH7, dataset=ds)
    assert not result.compared and "no serendipity scores" in str(result.why_not) and "duels" in str(result.why_not)
    assert result.table.empty

    implicit = _make(ds.interactions, ratings=False)  # every rating 1: implicit feedback
    result = judge_against_ratings(_write_run(tmp_path / "c", lambda r: int(r)), CH7, dataset=implicit)
    assert not result.compared and "has no ratings" in str(result.why_not)

    unparsed = [_record(u, 500 + u, None, "ls") for u in AFTER]
    result = judge_against_ratings(_write_run(tmp_path / "d", lambda r: 0, records=unparsed), CH7, dataset=ds)
    assert not result.compared and "unparsed" in str(result.why_not)


def test_a_bad_run_or_notebook_is_a_value_error_naming_the_path(tmp_path: Path) -> None:
    run = _write_run(tmp_path, lambda r: int(r))
    with pytest.raises(ValueError, match=str(run / "08_nothing" / "judgments.jsonl")):
        judge_against_ratings(run, "08_nothing", dataset=_dataset())
    with pytest.raises(ValueError, match=str(tmp_path / "nowhere")):
        judge_against_ratings(tmp_path / "nowhere", CH7)
    (run / "manifest.json").unlink()
    with pytest.raises(ValueError, match="pass folds="):
        judge_against_ratings(run, CH7, dataset=_dataset())
