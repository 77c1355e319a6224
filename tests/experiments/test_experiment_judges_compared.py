"""Chapter 6's numbers: runs read back with their manifest's judge, the agreement between judges on the items both
labelled (Krippendorff's alpha, checked against the krippendorff package; kappa with g against scikit-learn), the
bootstrap over (user, item) pairs where templates repeat them, the headline measures in order, and each run's
health."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from recjudge_utils.experiments import judges_compared as jc
from recjudge_utils.experiments.results import USAGE_FILE, write_results
from recjudge_utils.experiments.run import result
from recjudge_utils.judge.types import JudgeRequest
from recjudge_utils.metrics.agreement import (
    krippendorff_alpha,
    krippendorff_alpha_ci,
    raw_agreement_ci,
    weighted_kappa_ci,
)

NOTEBOOK = "01_serendipity_prompt_selection"


def judged_run(
    scripted_judge,
    runs: Path,
    name: str,
    model: str,
    scores: list[Any],
    finished: bool | None,
    manifest_judge: str | None = None,
) -> None:
    """A run folder with one notebook's results.json and usage.json (``scores[i]`` is item i's label; None: not
    parsed), and the runner's manifest: the final one (``finished``), the one it writes before the first notebook
    (False), or none (None)."""
    judge = scripted_judge(lambda request: json.dumps({"score": scores[int(request.metadata["item"])]}), model=model)
    requests = [
        JudgeRequest(({"role": "user", "content": f"item {i}"},), "serendipity/cot", "1", metadata={"item": i})
        for i in range(len(scores))
    ]
    judged = judge.judge_many(requests, lambda text: json.loads(text)["score"])
    items = [{"template": "cot", "item": i, "label": r.value} for i, r in enumerate(judged)]
    results = [result("mae", 1.0, 0.5, 1.5, len(scores), "95% percentile bootstrap", template="cot")]
    write_results(NOTEBOOK, "prompt_selection", judge, "toy data", results, {"scores": items}, runs / name / NOTEBOOK)
    judge_dict = {"name": manifest_judge or model, "backend": "openai", "model": manifest_judge or model}
    if finished:
        final = {"run": name, "judge": judge_dict, "scale": "paper", "parameters": {}, "status": "ok", "seconds": 90}
        (runs / name / "manifest.json").write_text(json.dumps(final))
    elif finished is False:  # the runner's manifest before its first notebook: judge, scale, -p parameters
        started = {"run": name, "judge": judge_dict, "scale": "demo", "parameters": {"top_k": 10}, "status": "running"}
        (runs / name / "manifest.json").write_text(json.dumps(started | {"seconds": 0.0}))


def stored_run(name: str, results: dict[str, list[Any]], kind: str = "llm", **extra: Any) -> jc.StoredRun:
    """A run held in memory: ``results`` maps a notebook to its results (Result objects), ``extra`` adds keys to each
    notebook's results.json (``items``, ``judgments``, ``data``)."""
    res = {
        nb: {"data": "toy data", "judge": {"kind": kind, "model_name": f"model-{name}", "name": name}, **extra,
             "results": [r.record() for r in rows]}
        for nb, rows in results.items()
    }  # fmt: skip
    return jc.StoredRun(name, {"judge": {"name": name, "model": f"model-{name}"}}, res, shown_as=f"model-{name}")


def test_runs_are_read_with_their_manifests_judge_and_usage(scripted_judge, isolated_runs: Path) -> None:
    judged_run(scripted_judge, isolated_runs, "finished", "judge-a", [1, 2, 3, 4, 5, 5], finished=True)
    judged_run(scripted_judge, isolated_runs, "running", "judge-b", [1, 2, 3, 4, 4, 5], finished=False)
    judged_run(scripted_judge, isolated_runs, "no-manifest", "judge-c", [1, 2], finished=None)
    (isolated_runs / "empty").mkdir()  # a folder without results is no run
    runs = {r.name: r for r in jc.load_runs()}
    assert list(runs) == ["finished", "no-manifest", "running"]
    assert (runs["finished"].status, runs["running"].status, runs["no-manifest"].status) == (
        "ok",
        "running",
        "no manifest",
    )
    assert runs["running"].profile == "judge-b" and runs["running"].judge == "scripted judge (judge-b)"
    assert runs["no-manifest"].judge == jc.UNKNOWN_JUDGE  # not guessed from whichever results.json comes first
    usage = runs["finished"].usage()
    assert usage["calls"] == usage["api_calls"] == 6 and usage["cost_usd"] == 0.0
    written = isolated_runs / "finished" / NOTEBOOK / USAGE_FILE
    written.write_text(json.dumps(json.loads(written.read_text()) | {"cost_usd": None}))
    assert runs["finished"].usage()["cost_usd"] is None  # no notebook priced: no cost at all, not $0
    failed = jc.StoredRun(
        "old", {"judge": {"name": "x"}, "notebooks": [{"notebook": "03_y.ipynb", "status": "failed"}]}
    )
    assert failed.status == "failed" and failed.failed == ["03_y.ipynb"]  # a manifest from before statuses


def test_results_of_another_judge_are_left_out_and_listed(scripted_judge, isolated_runs: Path) -> None:
    # the runner's manifest says gpt; the one results.json present was written by judge-a (an older run's)
    judged_run(scripted_judge, isolated_runs, "mixed", "judge-a", [1, 2, 3], finished=True, manifest_judge="gpt")
    judged_run(scripted_judge, isolated_runs, "clean", "judge-b", [1, 2, 3], finished=True)
    assert [r.name for r in jc.load_runs()] == ["clean"]  # nothing of "mixed" is its judge's
    (isolated_runs / "mixed" / "other").mkdir()
    results = json.loads((isolated_runs / "clean" / NOTEBOOK / "results.json").read_text())
    results["judge"] = {"name": "gpt", "model_name": "gpt (remote)", "kind": "llm"}
    (isolated_runs / "mixed" / "other" / "results.json").write_text(json.dumps(results))
    mixed = next(r for r in jc.load_runs() if r.name == "mixed")
    assert list(mixed.results) == ["other"] and mixed.foreign == {NOTEBOOK: "judge-a"} and mixed.judge == "gpt (remote)"


def test_judge_names_are_short_and_unique(scripted_judge, isolated_runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert jc.short_judge_name("SmolLM2-135M-Instruct (Q4_1 GGUF, embedded llama.cpp)") == "SmolLM2-135M-Instruct"
    judged_run(scripted_judge, isolated_runs, "one", "same", [1, 2, 3], finished=True)
    judged_run(scripted_judge, isolated_runs, "two", "same", [1, 2, 3], finished=True)
    runs = jc.load_runs()
    assert [r.shown_as for r in runs] == ["scripted judge [run one]", "scripted judge [run two]"]
    assert [r.label for r in runs] == ["one: scripted judge", "two: scripted judge"]
    assert jc.this_run_folder() is None and not jc.compare(runs).is_current(runs[0])
    monkeypatch.setenv("RECJUDGE_RUN_DIR", str(isolated_runs / "two"))  # what the runner sets for its notebooks
    here = jc.compare(runs, jc.this_run_folder())
    assert [here.is_current(r) for r in runs] == [False, True]


def test_agreement_is_ordinal_alpha_on_the_items_both_labelled(scripted_judge, isolated_runs: Path) -> None:
    krippendorff = pytest.importorskip("krippendorff")
    a, b = [1, 2, 3, 4, 5, 5, 1, 2, 3], [1, 2, 3, 4, 4, 5, 2, 2]  # b never judged item 8; item 2 unparsed in c
    judged_run(scripted_judge, isolated_runs, "a", "judge-a", a, finished=True)
    judged_run(scripted_judge, isolated_runs, "b", "judge-b", b, finished=True)
    judged_run(scripted_judge, isolated_runs, "c", "judge-c", [1, 2, "three", 4, 5, 5, 1, 2], finished=True)
    c = jc.compare(jc.load_runs())
    assert set(c.items) == {f"{NOTEBOOK}/scores"} and list(c.items[f"{NOTEBOOK}/scores"]) == ["a: scripted judge",
           "b: scripted judge", "c: scripted judge"]  # fmt: skip
    ab = c.agreement.iloc[0]
    assert (ab["judge A"], ab["judge B"], ab["n both labelled"]) == ("a: scripted judge", "b: scripted judge", 8)
    assert ab["metric"] == "ordinal"  # serendipity levels: ranked, their spacing unknown
    ref = krippendorff.alpha(reliability_data=[a[:8], b], value_domain=[1, 2, 3, 4, 5], level_of_measurement="ordinal")
    assert ab["alpha"] == pytest.approx(ref, abs=1e-12)
    ci = krippendorff_alpha_ci([a[:8], b], [1, 2, 3, 4, 5], "ordinal", n_boot=2000, seed=0)  # no repeated unit
    assert (ab["alpha"], ab["low"], ab["high"], ab["se"], ab["dropped"]) == (ci.value, ci.low, ci.high, ci.se, 0)
    assert ab["raw_agreement"] == pytest.approx(6 / 8)
    assert (ab["raw_low"], ab["raw_high"]) == raw_agreement_ci(a[:8], b, n_boot=2000, seed=0)[1:]
    ac = c.agreement.iloc[1]  # "three" is no label of the order: that item is left out, never imputed
    assert ac["n both labelled"] == 7
    assert ac["alpha"] == 1.0 and ac["raw_agreement"] == 1.0


def test_arena_verdicts_are_nominal_and_repeated_units_are_resampled_whole() -> None:
    """Chapter 3's verdicts judged in both orders: each (user, x, y) twice. Alpha is nominal there, and its interval
    resamples the comparisons, each with both orders; chapter 1's (user, item) under several templates likewise."""
    verdicts = {"A": ["win", "tie", "lose", "win", "win", "tie", "lose", "lose", "win", "tie"] * 2,
                "B": ["win", "lose", "lose", "win", "tie", "tie", "lose", "win", "win", "tie"] * 2}  # fmt: skip
    items = {name: [{"user": u % 10, "x": "pop", "y": "fm", "order": ["x_first", "y_first"][u // 10], "label": v}
                    for u, v in enumerate(labels)] for name, labels in verdicts.items()}  # fmt: skip
    runs = [stored_run(name, {"03_recsys_arena": []}, items={"pairwise": rows}) for name, rows in items.items()]
    (row,) = jc.compare(runs).agreement.to_dict("records")
    assert (row["metric"], row["n both labelled"], row["units"]) == ("nominal", 20, 10)
    order = ["lose", "tie", "win"]
    units = [(u % 10, "pop", "fm") for u in range(20)]
    expected = krippendorff_alpha_ci(list(verdicts.values()), order, "nominal", n_boot=2000, seed=0, clusters=units)
    assert (row["alpha"], row["low"], row["high"]) == (expected.value, expected.low, expected.high)
    by_row = krippendorff_alpha_ci(list(verdicts.values()), order, "nominal", n_boot=2000, seed=0)
    assert expected.high - expected.low > by_row.high - by_row.low  # copies taken for independent cases: narrower
    index = pd.MultiIndex.from_tuples(
        [("base", 1, 7), ("cot", 1, 7), ("base", 2, 7)], names=["template", "user", "item"]
    )
    assert jc._units(index) == [(1, 7), (1, 7), (2, 7)]
    assert jc._units(index[[0, 2]]) is None  # every pair once: the row bootstrap is the pair bootstrap


def test_alpha_over_every_judge_needs_three_judges_and_takes_the_gaps(scripted_judge, isolated_runs: Path) -> None:
    labels = {"a": [1, 2, 3, 4, 5, 5, 1, 2], "b": [1, 2, 3, 4, 4, 5, 2], "c": [2, 2, 3, 5, 5, 5, 1, 3]}
    for name, scores in list(labels.items())[:2]:
        judged_run(scripted_judge, isolated_runs, name, f"judge-{name}", scores, finished=True)
    assert jc.compare(jc.load_runs()).all_judges.empty  # two judges: the pairwise table says it all
    judged_run(scripted_judge, isolated_runs, "c", "judge-c", labels["c"], finished=True)
    (row,) = jc.compare(jc.load_runs()).all_judges.to_dict("records")
    raters = [labels["a"], [*labels["b"], None], labels["c"]]  # b never judged item 7: alpha takes the gap
    expected = krippendorff_alpha_ci(raters, [1, 2, 3, 4, 5], "ordinal", n_boot=2000, seed=0)
    assert (row["judges"], row["n labelled twice"], row["metric"]) == (3, 8, "ordinal")
    assert (row["alpha"], row["low"], row["high"]) == (expected.value, expected.low, expected.high)
    assert row["alpha"] == pytest.approx(krippendorff_alpha(raters, [1, 2, 3, 4, 5], "ordinal")[0])


def test_measures_come_in_the_chapters_order_in_percent() -> None:
    ch1 = [result("acc3", 0.5, 0.3, 0.7, 10, template=t) for t in ("ltm", "base")] + [
        result("mae", 0.9, 0.6, 1.2, 10, template="base"),
        result("acc3", None, template="cot"),
    ]
    ch3 = [result("win_pct", 60.0, 50.0, 70.0, 100, x="nrms", y="fm", source=s) for s in ("x_first", "adjudicated")]
    prompts = {"v2": "rubric", "v1": "generic"}
    ch4 = [
        result("adversarial_correct_pct", 75.0, 40.0, 90.0, 4, evaluator=f"{n} prompt ({v})")
        for v, n in prompts.items()
    ]
    ch4.append(result("position_consistency_pct", 50.0, 20.0, 80.0, 4))
    runs = [stored_run("a", {NOTEBOOK: ch1, "04_saer": ch4}), stored_run("b", {"03_recsys_arena": ch3, NOTEBOOK: ch1})]
    head = jc.compare(runs).headlines
    assert head[["metric", "case", "judge"]].values.tolist() == [
        ["acc3", "base", "model-a"], ["acc3", "base", "model-b"],
        ["acc3", "ltm", "model-a"], ["acc3", "ltm", "model-b"],
        ["win_pct", "nrms", "model-b"],  # the adjudicated verdicts only
        ["position_consistency_pct", "", "model-a"], ["adversarial_correct_pct", "generic prompt (v1)", "model-a"],
        ["adversarial_correct_pct", "rubric prompt (v2)", "model-a"],
    ]  # fmt: skip
    assert head.loc[0, ["value", "low", "high"]].tolist() == [50.0, 30.0, 70.0]  # a share in %
    assert head["prompt"].tolist()[-2:] == ["v1", "v2"] and head.loc[4, "baseline"] == "fm"
    mae = jc.compare(runs).measures.query("metric == 'mae'")
    assert mae[["case", "value"]].values.tolist() == [["base", 0.9], ["base", 0.9]]  # MAE stays on its scale


def test_health_flags_more_than_a_fifth_unusable_and_stand_ins_are_found() -> None:
    def run(name: str, counts: dict[str, tuple[int, int]]) -> jc.StoredRun:
        stored = stored_run(name, {nb: [] for nb in counts})
        for nb, (parsed, n) in counts.items():
            stored.results[nb]["judgments"] = {"n": n, "parsed": parsed, "unparsed": n - parsed, "error": 0}
        return stored

    runs = [run("good", {"03_y": (32, 40), "01_x": (40, 40)}), run("bad", {"01_x": (0, 40), "03_y": (31, 40)})]
    runs[1].results["01_x"]["data"] = "a label [STAND-IN]"
    c = jc.compare(runs)
    assert c.health.values.tolist() == [
        ["good", "01_x", 40, 40, False], ["good", "03_y", 40, 32, False],  # exactly a fifth: not flagged
        ["bad", "01_x", 40, 0, True], ["bad", "03_y", 40, 31, True],
    ]  # fmt: skip
    assert c.stand_ins == {"01_x": ["a label [STAND-IN]"]}


@pytest.mark.parametrize(
    ("data", "datasets"), [("MIND small (real)", {"MIND"}), ("MovieLens-100K (real)", {"MovieLens"})]
)
def test_the_arena_papers_rows_follow_the_runs_dataset(data: str, datasets: set[str]) -> None:
    run = stored_run(
        "a", {"03_recsys_arena": [result("win_pct", 60.0, 50.0, 70.0, 100, x="nrms", y="fm", source="adjudicated")]}
    )
    run.results["03_recsys_arena"]["data"] = data
    assert set(jc.compare([run]).arena_paper("arena_table2")["dataset"]) == datasets
    assert set(jc.compare([]).arena_paper("arena_table3")["dataset"]) == {"MovieLens"}


def test_a_panels_members_are_set_beside_it_with_reference_statistics() -> None:
    g = [i % 5 + 1 for i in range(40)]
    members = {"m1": [min(5, v + (i % 4 == 0)) for i, v in enumerate(g)], "m2": [None, *g[1:]],
               "m3": [max(1, v - (i % 3 == 0)) for i, v in enumerate(g)]}  # fmt: skip
    panel = [round((a + b + c) / 3) if b else round((a + c) / 2) for a, b, c in zip(*members.values(), strict=True)]
    items = {"scores": [{"template": "base", "user": 1, "item": i, "label": v, "truth": g[i]} for i, v in
                        enumerate(panel)],
             "member_scores": [{"template": "base", "user": 1, "item": i, "member": m, "label": v, "truth": g[i],
                                "tokens": 100 + k} for k, (m, vs) in enumerate(members.items())
                               for i, v in enumerate(vs)]}  # fmt: skip
    runs = [stored_run("p", {NOTEBOOK: []}, "simulated", items=items), stored_run("one", {NOTEBOOK: []})]
    rows = jc.panel_members(runs)
    assert rows["labeler"].tolist() == ["m1", "m2", "m3", ""] and rows["panel"].tolist() == [False] * 3 + [True]
    assert set(rows["kind"]) == {"simulated"} and rows["n"].tolist() == [40, 39, 40, 40]
    for row, labels in zip(rows.itertuples(), [*members.values(), panel], strict=True):
        pairs = [(t, v) for t, v in zip(g, labels, strict=True) if v is not None]
        assert row.kappa == pytest.approx(cohen_kappa_score(*zip(*pairs, strict=True), weights="quadratic"))
        assert row.low <= row.kappa <= row.high
    assert rows["tokens"].tolist() == [4000, 4040, 4080, 12120]
    assert rows["tokens_x"].iloc[-1] == pytest.approx(3.0) and rows["tokens_x"].iloc[0] == pytest.approx(4000 / 4040)
    alpha, _ = krippendorff_alpha(list(members.values()), [1, 2, 3, 4, 5], "ordinal")
    (agreement,) = jc.panel_agreement(runs).to_dict("records")
    assert (agreement["run"], agreement["kind"]) == ("p", "simulated")
    assert agreement["alpha"] == pytest.approx(alpha) and agreement["n"] == 40
    assert agreement["low"] < alpha < agreement["high"]
    assert (agreement["units"], agreement["dropped"], agreement["n_boot"]) == (40, 0, 2000)
    assert jc.panel_members(runs[1:]).empty and jc.panel_agreement(runs[1:]).empty  # a run of one judge has no members
    c = jc.compare(runs)
    assert c.of_kind("members", "llm").empty and len(c.of_kind("members", "simulated")) == 4
    assert c.of_kind("panel_agreement", "llm").empty and len(c.of_kind("panel_agreement", "simulated")) == 1
    assert f"{NOTEBOOK}/member_scores" not in c.items  # members are no judges of their own in the agreement tables


def test_chapter_5s_results_are_not_a_judges_results(scripted_judge, isolated_runs: Path) -> None:
    # chapter 5 judges with simulated judges of its own in every run: its results.json is neither compared nor foreign
    judged_run(scripted_judge, isolated_runs, "clean", "judge-b", [1, 2, 3], finished=True)
    own = json.loads((isolated_runs / "clean" / NOTEBOOK / "results.json").read_text())
    (isolated_runs / "clean" / "05_protocols_detect").mkdir()
    own["judge"] = {"name": "sim", "model_name": "sim (noise 0)", "kind": "simulated"}
    (isolated_runs / "clean" / "05_protocols_detect" / "results.json").write_text(json.dumps(own))
    (run,) = jc.load_runs()
    assert list(run.results) == [NOTEBOOK] and run.foreign == {}


def test_a_panels_agreement_resamples_its_pairs_with_every_template() -> None:
    """Chapter 1 pools the templates: each (user, item) pair is scored under each of them. The members' alpha and
    each kappa with g resample the pairs, each with both templates' scores."""
    g = [i % 5 + 1 for i in range(30)]
    shifted = {"m1": 0, "m2": 1, "m3": -1}
    member_scores = [{"template": t, "user": i // 10, "item": i, "member": m, "label": min(5, max(1, v + (i % d == 0)
                      * s)), "truth": v, "tokens": 10} for t, d in (("base", 3), ("cot", 4)) for m, s in shifted.items()
                     for i, v in enumerate(g)]  # fmt: skip
    scores = [{"template": t, "user": i // 10, "item": i, "label": v, "truth": v} for t in ("base", "cot")
              for i, v in enumerate(g)]  # fmt: skip
    run = stored_run("p", {NOTEBOOK: []}, "simulated", items={"scores": scores, "member_scores": member_scores})
    rows = jc.panel_members([run])
    members = pd.DataFrame(member_scores)
    wide = members.pivot_table(index=["template", "user", "item"], columns="member", values="label", sort=False)
    pairs = [(u, i) for _, u, i in wide.index]
    expected = krippendorff_alpha_ci([wide[m].tolist() for m in wide.columns], [1, 2, 3, 4, 5], "ordinal",
                                     n_boot=2000, seed=0, clusters=pairs)  # fmt: skip
    (agreement,) = jc.panel_agreement([run]).to_dict("records")
    assert (agreement["n"], agreement["units"]) == (60, 30)
    assert (agreement["alpha"], agreement["low"], agreement["high"]) == (expected.value, expected.low, expected.high)
    m1 = members[members["member"] == "m1"]
    kappa = rows.iloc[0]
    ref = weighted_kappa_ci(m1["truth"], m1["label"], [1, 2, 3, 4, 5], n_boot=2000, seed=0,
                            clusters=list(zip(m1["user"], m1["item"], strict=True)))  # fmt: skip
    assert (kappa["n"], kappa["kappa"], kappa["low"], kappa["high"]) == (60, ref.value, ref.low, ref.high)


def test_runs_made_on_another_dataset_are_left_out_and_named(
    scripted_judge, isolated_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # judges are compared on the same items: a run on a books folder is no judge of MovieLens
    for name in ("default", "sim", "books"):
        judged_run(scripted_judge, isolated_runs, name, f"judge-{name}", [1, 2, 3], finished=True)
    manifest = isolated_runs / "books" / "manifest.json"
    manifest.write_text(json.dumps(json.loads(manifest.read_text()) | {"parameters": {"02:dataset": "/x/books"}}))
    assert [r.name for r in jc.load_runs()] == ["books", "default", "sim"]  # no run to compare with: every run
    assert [r.name for r in jc.load_runs(same_dataset_as=isolated_runs / "default")] == ["default", "sim"]
    assert "run books (.../books)" in capsys.readouterr().out  # no machine path in a page
    assert [r.name for r in jc.load_runs(same_dataset_as=isolated_runs / "books")] == ["books"]
