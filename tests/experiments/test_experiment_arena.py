"""RecSys Arena's experiment (``arena.run``) and the transparency experiment (``transparency.run``) with the shared
scripted judge: numbers equal to those of the code before the one-experiment-shape refactor (recorded from it), CIs
as numbers, and what a position-biased judge shows; the statistics the chapter's report lays out (the Wilson intervals
of every share, the 'A wins' share, Figure 6's normalisation, the check of the paper's Table 3) against statsmodels,
scikit-learn and scipy."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from claims import numbers_in
from scipy import stats
from sklearn.preprocessing import MinMaxScaler
from statsmodels.stats.proportion import proportion_confint
from test_notebook_parameters import parameters

from recjudge_utils.answer_formats.arena_verdicts import OVERALL, aspect_key
from recjudge_utils.data import Dataset
from recjudge_utils.experiments import arena, transparency
from recjudge_utils.experiments.results import read_results, write_run_results
from recjudge_utils.judge.types import JudgeRequest
from recjudge_utils.metrics.correlation import pearson_rounding_range
from recjudge_utils.paper_tables import paper_table
from recjudge_utils.protocols.arena import resolve_aspects
from recjudge_utils.reporting import arena as report

RECOMMENDERS = ("fm", "pop", "random", "bprmf")


def toy_dataset() -> Dataset:
    """12 users with 18 interactions each over 30 items, and user attributes for the feature models."""
    rng = np.random.default_rng(0)
    rows = [
        (u, int(i), 4.0, 1000 * u + t)
        for u in range(1, 13)
        for t, i in enumerate(rng.choice(np.arange(1, 31), 18, replace=False))
    ]
    inter = pd.DataFrame(rows, columns=["user", "item", "rating", "timestamp"])
    items = pd.DataFrame(
        {
            "item": range(1, 31),
            "title": [f"M{i}" for i in range(1, 31)],
            "genres": [["Drama"], ["Comedy"], ["Action", "Drama"]] * 10,
        }
    )
    users = pd.DataFrame(
        {
            "user": range(1, 13),
            "age": [18, 25, 35, 45] * 3,
            "gender": ["M", "F"] * 6,
            "occupation": ["writer", "artist", "student"] * 4,
        }
    )
    return Dataset("toy", inter, items, users, label="toy", is_real=False, source="test")


def evidence_judge(req: JudgeRequest) -> str:
    """Follows the held-out evidence; on equal evidence names A for odd users (a position bias), else a tie;
    Inspiration is always a tie; the absolute score is the held-out share."""
    truth: object = req.truth
    if req.template_id == "arena/absolute":
        return json.dumps({"analysis": "ok", "score": round(truth.value, 3)})  # type: ignore[attr-defined]
    first, second = truth.first, truth.second  # type: ignore[attr-defined]
    user = int(req.metadata["user"])  # type: ignore[index,arg-type]
    v = "A wins" if first > second else "B wins" if second > first else ("A wins" if user % 2 else "Tie")
    keys = [k for k in req.json_schema["properties"] if k != OVERALL]  # type: ignore[index]
    obj: dict[str, object] = {k: {"analysis": "fine", "verdict": "Tie" if k == "inspiration" else v} for k in keys}
    obj[OVERALL] = v
    return json.dumps(obj)


def versus_all(run: arena.ArenaRun, key: str = OVERALL, kind: str = "vs_baseline") -> pd.DataFrame:
    """The run's outcome rows of every judged source (machine columns), source by source."""
    return pd.concat([run.versus(s, key, kind) for s in run.config.sources], ignore_index=True)


def measure(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """The rows of one measure of a long frame (``measure``, ``value``, ``low``, ``high``, ``n``), in order."""
    return frame[frame["measure"] == name].reset_index(drop=True)


def _ci_holds(frame: pd.DataFrame, value: str = "value", low: str = "low", high: str = "high") -> None:
    ok = frame[[value, low, high]].dropna()
    assert len(ok) and ((ok[low] <= ok[value] + 1e-9) & (ok[value] <= ok[high] + 1e-9)).all()


def test_run_gives_the_numbers_of_the_old_code_with_cis_as_numbers(scripted_judge):
    ds = toy_dataset()
    config = arena.ArenaConfig(recommenders=RECOMMENDERS, baseline="fm", n_users=6)
    run = arena.run(scripted_judge(evidence_judge), ds, config)
    assert run.sample.users == [1, 3, 4, 5, 6, 8] and run.closest_pair == ("bprmf", "random")
    assert set(run.timings) == {"train fm", "train pop", "train random", "train bprmf", "offline metrics"} | {
        "judge pairwise",
        "judge absolute",
    }
    assert run.offline["auc"].tolist() == pytest.approx(
        [0.5215277777777777, 0.578125, 0.48333333333333334, 0.48819444444444443]
    )
    t2 = versus_all(run)
    assert t2["measure"].tolist() == ["win", "tie", "lose", "Q"] * 9  # one row per comparison and measure
    q, win = measure(t2, "Q"), measure(t2, "win")
    assert q["source"].tolist() == ["x_first"] * 3 + ["y_first"] * 3 + ["adjudicated"] * 3
    assert q["x"].tolist() == ["pop", "random", "bprmf"] * 3
    assert q["value"].tolist() == pytest.approx([4 / 3, 1.0, 0.5, 0.75, 0.2, 0.2, 1.0, 0.6, 0.4])
    assert q["low"].tolist() == pytest.approx([0.4, 0.2, 0.0, 1 / 6, 0.0, 0.0, 1 / 3, 1 / 6, 0.0])
    assert q["high"].tolist() == pytest.approx([6.0, 5.0, 2.0, 3.0, 1.0, 1.0, 3.0, 1.5, 4 / 3])
    assert win["value"].tolist() == pytest.approx(
        [50.0, 50.0, 100 / 3, 100 / 3, 100 / 6, 100 / 6, 100 / 3, 100 / 6, 100 / 6]
    )
    assert win["low"].iloc[0] == pytest.approx(18.76163064826506)
    assert q["rank"].tolist() == [1, 2, 3, 1, 2, 2, 1, 2, 3]
    assert (t2.groupby(["source", "x"])["rank"].nunique() == 1).all()  # every row of a comparison has its rank
    _ci_holds(run.outcomes)
    # inspiration is a tie whatever the lists: Q = 1 for every model (Table 4)
    assert (measure(run.versus("adjudicated", key="inspiration"), "Q")["value"] == 1.0).all()
    close = versus_all(run, kind="close_pair")
    assert measure(close, "Q")["value"].tolist() == pytest.approx([1.0, 0.5, 0.75])
    pc = run.consistency.set_index(["x", "y", "measure"])
    assert pc.loc[("all", "all", "consistency"), "n"] == 24
    assert pc.loc[("all", "all", "consistency"), "value"] == pytest.approx(19 / 24)
    assert pc.loc[("all", "all", "a_wins_share"), "value"] == pytest.approx(14 / 24)
    assert pc.loc[("all", "all", "consistency"), "low"] == pytest.approx(0.5952954674681133)
    _ci_holds(run.consistency)
    assert run.correlation["r"].tolist() == pytest.approx([0.7749827960164102, 0.9290269772692432])
    sep = run.separation.set_index("measure")
    # Q by its share s = Q / (1 + Q): bprmf 0.4 / 1.4 = 2/7 minus random 0.6 / 1.6 = 3/8 (no resample dropped)
    assert sep["difference"].tolist() == pytest.approx([0.004861111111111094, -0.06666666666666671, 2 / 7 - 3 / 8])
    assert sep["low"].tolist() == pytest.approx([-0.11736111111111108, -1 / 3, -0.2777777777777778])
    assert sep["high"].tolist() == pytest.approx([0.125, 0.16749999999999557, 0.0])
    assert sep.index[-1] == arena.Q_SHARE_MEASURE
    _ci_holds(run.separation, "difference", "low", "high")
    results = run.results()
    assert len(results) == 28
    for e in (r.estimate for r in results):
        if e.has_ci:
            assert e.known and e.low <= e.value + 1e-9 <= e.high + 2e-9
    assert len(run.items()["pairwise"]) == len(run.raw) == 4 * 6 * 2
    setup = report.setup_table(run, "The setting").data.set_index("setting")["this run"]
    users, history = setup["users per comparison"], setup["history shown"]
    assert numbers_in(users)[:3] == [6, 0, 12] and "random" in users  # 6 of the 12 users, seed 0
    assert numbers_in(history) == [10] and "most recent" in history
    assert setup["orders"].startswith("both orders")


def test_single_order_has_no_adjudication_and_no_consistency(scripted_judge):
    config = arena.ArenaConfig(
        recommenders=RECOMMENDERS, baseline="fm", n_users=6, both_orders=False, absolute=False, n_boot=200
    )
    run = arena.run(scripted_judge(evidence_judge), toy_dataset(), config)
    assert set(run.raw["order"]) == {"x_first"} and run.adjudicated.empty and run.absolute.empty
    assert measure(versus_all(run), "Q")["value"].tolist() == pytest.approx([4 / 3, 1.0, 0.5])
    consistency = next(r.estimate for r in run.results() if r.metric == "position_consistency")
    assert not consistency.known and not consistency.has_ci and consistency.n == 0
    with pytest.raises(ValueError, match="not judged"):
        run.versus("adjudicated")


def test_transparency_run_gives_the_numbers_of_the_old_code(scripted_judge):
    ds = toy_dataset()
    # its own config has no aspects: the transparency experiment always asks the full six-aspect prompt
    config = transparency.TransparencyConfig(n_users=6)
    client = scripted_judge(evidence_judge)
    run = transparency.run(client, ds, config)
    six = {aspect_key(a) for a in resolve_aspects()}
    assert len(six) == 6 and "transparency" in six
    asked = [r for _, reqs in client.calls for r in reqs]
    assert asked and all(set(r.json_schema["properties"]) == six | {OVERALL} for r in asked)  # type: ignore[index]
    assert all("Transparency" in r.messages[-1]["content"] and "Accuracy" in r.messages[-1]["content"] for r in asked)
    assert {f"verdict_{k}" for k in six} <= set(run.raw)
    assert run.sample.users == [1, 3, 4, 5, 6, 8]
    assert set(run.timings) == {"train deepfm+features", "train deepfm-ids", "judge pairwise"}
    table = measure(run.outcomes, "Q")
    assert table["aspect"].tolist() == ["transparency"] * 3 + [OVERALL] * 3
    assert table["source"].tolist() == ["x_first", "y_first", "adjudicated"] * 2
    assert table["value"].tolist() == pytest.approx([5.0, 2.0, 2.5] * 2)
    assert table["low"].tolist() == pytest.approx([1.0, 0.5, 0.75] * 2)
    assert np.isinf(table["high"]).all()
    _ci_holds(measure(run.outcomes, "win"))
    assert "analysis_transparency" in run.raw and len(report.transparency_examples(run, "Analyses").data) == 2
    assert {r.group["source"] for r in run.results()} == {"x_first", "y_first", "adjudicated"}


def test_run_end_to_end_with_a_position_biased_judge(scripted_judge):
    ds = toy_dataset()
    keys = [aspect_key(a) for a in resolve_aspects()]
    answer = json.dumps({**{k: {"analysis": "fine", "verdict": "A wins"} for k in keys}, OVERALL: "A wins"})
    client = scripted_judge(lambda req: answer)
    config = arena.ArenaConfig(recommenders=RECOMMENDERS, baseline="fm", n_users=3, n_boot=200)
    run = arena.run(client, ds, config)
    # 3 vs FM + 1 close pair, 3 users, 2 orders; absolute for the 3 non-baseline models
    assert len(run.raw) == 4 * 3 * 2 and len(run.absolute) == 3 * 3
    t2 = versus_all(run).set_index(["source", "measure"])["value"]
    assert (t2.loc[("x_first", "win")] == 100).all() and (t2.loc[("y_first", "lose")] == 100).all()
    assert (t2.loc[("adjudicated", "tie")] == 100).all() and (t2.loc[("adjudicated", "Q")] == 1.0).all()
    assert run.consistency.iloc[0][["measure", "value"]].tolist() == ["consistency", 0.0]
    assert set(run.versus("adjudicated", key="inspiration")["x"]) == {"pop", "random", "bprmf"}
    aspects = report.aspect_table(run, "Q per aspect").data
    assert len(aspects) == 7 and list(aspects.columns) == ["aspect", "pop", "random", "bprmf"]
    unparsed = report.unparsed_summary(run, "Unparsed answers").data.set_index("answers")
    assert unparsed.loc["absolute", "unparsed %"] == "100.0"  # the fake answers give no score
    counts = run.unparsed().set_index("answers")
    assert counts.loc["pair-wise", ["calls", "unusable", "pct"]].tolist() == [24, 0, 0.0]
    assert counts.loc["pair-wise", "reasons"] == [] and counts.loc["pair-wise", "example"] is None
    absolute = counts.loc["absolute"]
    assert (absolute["calls"], absolute["unusable"], absolute["pct"]) == (9, 9, 100.0)
    assert [k for _, k in absolute["reasons"]] == [9]  # one reason, counted 9 times
    assert absolute["example"] is None  # absolute scores keep no raw answer (pair-wise ones do)
    assert run.relative_vs_absolute()["absolute"].isna().all()
    assert run.separation["measure"].iloc[0].startswith("AUC")


def test_every_share_carries_its_wilson_interval_from_the_counts(scripted_judge):
    config = arena.ArenaConfig(recommenders=RECOMMENDERS, baseline="fm", n_users=6, n_boot=200)
    run = arena.run(scripted_judge(evidence_judge), toy_dataset(), config)
    judged = run.outcomes[run.outcomes["n"] > 0]
    assert len(judged) > 4 * 20
    high = {}
    for part in ("win", "tie", "lose"):
        rows = measure(judged, part)
        counts = np.round(rows["value"] * rows["n"] / 100).astype(int)
        low, high[part] = proportion_confint(counts, rows["n"], alpha=0.05, method="wilson")
        assert rows["low"].to_numpy() == pytest.approx(100 * low.to_numpy(), abs=1e-9)
        assert rows["high"].to_numpy() == pytest.approx(100 * high[part].to_numpy(), abs=1e-9)
    # the three shares of a comparison are not the same numbers: ties and losses get intervals of their own
    assert (high["tie"] != high["lose"]).any() and (high["tie"] != high["win"]).any()


def test_overall_rows_and_unreadable_answers(scripted_judge):
    config = arena.ArenaConfig(recommenders=RECOMMENDERS, baseline="fm", n_users=6, n_boot=200)
    run = arena.run(scripted_judge(evidence_judge), toy_dataset(), config)
    consistency, a_wins = run.overall()
    assert consistency is not None
    assert (consistency["x"], consistency["measure"], consistency["n"]) == ("all", "consistency", 24)
    assert (a_wins["x"], a_wins["y"]) == ("all", "all") and a_wins["value"] == run.a_wins.set_index("x").loc[
        "all", "value"
    ]
    assert run.unreadable() is None  # every verdict parsed
    single = arena.run(scripted_judge(evidence_judge), toy_dataset(), replace(config, both_orders=False))
    assert single.overall()[0] is None  # one order: no consistency to report
    unread = arena.run(scripted_judge(lambda req: "no idea"), toy_dataset(), config)
    health = unread.unreadable()
    assert health is not None and health.parsed == 0
    assert health.n == len(unread.raw) + len(unread.absolute) > len(unread.raw)  # the absolute scores counted too


def test_a_wins_share_counts_only_verdicts_naming_a_winner(scripted_judge):
    config = arena.ArenaConfig(recommenders=RECOMMENDERS, baseline="fm", n_users=6, n_boot=200)
    run = arena.run(scripted_judge(evidence_judge), toy_dataset(), config)
    a = run.a_wins.set_index(["x", "y"])
    verdicts = run.raw.loc[run.raw["status"] == "parsed", f"verdict_{OVERALL}"]
    k, n = int((verdicts == "A wins").sum()), int(verdicts.isin(["A wins", "B wins"]).sum())
    assert n < len(verdicts)  # the evidence judge ties on equal evidence for even users: those are left out
    overall = a.loc[("all", "all")]
    assert (overall["measure"], overall["n"], overall["value"]) == ("a_share", n, pytest.approx(k / n))
    assert (overall["low"], overall["high"]) == pytest.approx(proportion_confint(k, n, alpha=0.05, method="wilson"))
    pairs = {tuple(p) for p in run.comparisons[["x", "y"]].drop_duplicates().to_numpy()}
    assert set(a.index) == {("all", "all")} | pairs
    assert a.drop(index=("all", "all"))["n"].sum() == n


def test_figure6_normalisation_is_min_max_over_the_finite_values(scripted_judge):
    config = arena.ArenaConfig(recommenders=RECOMMENDERS, baseline="fm", n_users=6, n_boot=200)
    run = arena.run(scripted_judge(evidence_judge), toy_dataset(), config)
    data = run.relative_vs_absolute("x_first")
    assert data["model"].tolist() == ["pop", "random", "bprmf"]
    assert data["Q"].tolist() == pytest.approx([4 / 3, 1.0, 0.5])  # the paper's order, as in Table 2
    assert data["absolute"].notna().all() and data["absolute"].nunique() > 1
    for col in ("AUC", "Q", "absolute"):
        expected = MinMaxScaler().fit_transform(data[[col]].to_numpy(dtype=float)).ravel()
        assert data[f"{col} (normalised)"].to_numpy() == pytest.approx(expected)

    # an infinite Q is left out of the scale (NaN), the others still span [0, 1]; one finite value has no span
    def with_q(values: list[float]) -> arena.ArenaRun:  # the run with Q set per recommender
        o, q = run.outcomes, pd.Series(values, index=["pop", "random", "bprmf"])
        q_values = o["value"].mask(o["measure"] == "Q", o["x"].map(q).fillna(1.0))
        return dataclasses.replace(run, outcomes=o.assign(value=q_values))

    scaled = with_q([np.inf, 2.0, 0.5]).relative_vs_absolute("x_first")["Q (normalised)"].tolist()
    assert np.isnan(scaled[0]) and scaled[1:] == [1.0, 0.0]
    assert with_q([np.inf, np.inf, 0.5]).relative_vs_absolute("x_first")["Q (normalised)"].isna().all()


def test_paper_correlations_recompute_the_papers_r_and_its_rounding_range():
    p1, p2, p3 = paper_table("arena_table1"), paper_table("arena_table2"), paper_table("arena_table3")
    table = arena.paper_correlations(draws=200, seed=1)
    assert table[["llm", "dataset", "r", "p"]].equals(p3[["llm", "dataset", "r", "p"]])
    rng = np.random.default_rng(1)  # one stream across the groups, in the order of Table 2
    for row, ((llm, dataset), block) in zip(
        table.to_dict("records"), p2.groupby(["llm", "dataset"], sort=False), strict=True
    ):
        assert (row["llm"], row["dataset"]) == (llm, dataset)
        auc = block["rs"].map(p1[p1["dataset"] == dataset].set_index("rs")["auc"]).to_numpy(float)
        reference = stats.pearsonr(auc, block["q"].to_numpy(float))
        assert (row["r_recomputed"], row["p_recomputed"]) == pytest.approx((reference.statistic, reference.pvalue))
        low, high = pearson_rounding_range(auc, block["q"].to_numpy(float), draws=200, seed=rng)
        assert (row["r_low"], row["r_high"]) == (low, high)
        assert row["r_low"] <= row["r_recomputed"] <= row["r_high"]
    # rounding explains the printed r on MIND but not on MovieLens (the chapter's finding, at the chapter's draws)
    inside = arena.paper_correlations().pipe(lambda t: (t["r_low"] <= t["r"]) & (t["r"] <= t["r_high"]))
    assert inside.tolist() == [False] * 3 + [True] * 3


def test_transparency_config_is_chapter_3s_parameters():
    fields = {f.name: f.default for f in dataclasses.fields(transparency.TransparencyConfig)}
    arena_defaults = {f.name: f.default for f in dataclasses.fields(arena.ArenaConfig)}
    assert set(fields) <= parameters("03_recsys_arena")
    assert fields == {name: arena_defaults[name] for name in fields}  # the same defaults as chapter 3's run
    steps = transparency.TransparencyConfig(n_users=5, seed=3, top_k=4).arena()
    assert (steps.aspects, steps.both_orders, steps.n_users, steps.seed, steps.top_k) == (None, True, 5, 3, 4)


def test_chapter_3_writes_both_runs_into_one_results_file(scripted_judge, tmp_path):
    ds, client = toy_dataset(), scripted_judge(evidence_judge)
    run = arena.run(client, ds, arena.ArenaConfig(recommenders=RECOMMENDERS, baseline="fm", n_users=3, n_boot=100))
    seen = transparency.run(client, ds, transparency.TransparencyConfig(n_users=3, n_boot=100))
    written = read_results(write_run_results("03_recsys_arena", run, client, tmp_path, also=[seen]))
    assert written["experiment"] == "arena" and set(written["items"]) == {"pairwise", "transparency"}
    assert len(written["items"]["transparency"]) == len(seen.raw) == 3 * 2
    metrics = [r["metric"] for r in written["results"]]
    assert metrics[: len(run.results())] == [r.metric for r in run.results()]  # chapter 3's own rows, unchanged
    assert metrics[len(run.results()) :] == ["transparency_win_pct", "transparency_Q"] * 6
    # chapter 6 reads win_pct and Q by name: the transparency rows never join them
    assert all("x" in r["group"] for r in written["results"] if r["metric"] in ("win_pct", "Q"))
    with pytest.raises(ValueError, match="items of kind"):
        write_run_results("03_recsys_arena", run, client, tmp_path, also=[run])
