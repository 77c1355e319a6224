"""Chapter 7's tables, figures and sentences: they lay out the run's numbers and claim only what the CIs support."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from claims import denies, interval_after, says_apart, says_higher, says_no_ranking
from matplotlib.figure import Figure
from pandas.io.formats.style import Styler
from test_experiment_your_recommenders import counted_run, judged, sim, toy_dataset, toy_lists

from recjudge_utils.answer_formats.arena_verdicts import OVERALL
from recjudge_utils.experiments import your_recommenders as ours
from recjudge_utils.lists import write_trec_runs
from recjudge_utils.metrics.rank_agreement import agreement_claim
from recjudge_utils.reporting import your_recommenders as report
from recjudge_utils.reporting.callouts import MySTText
from recjudge_utils.splitting.export import temporal_fold


@pytest.fixture
def run(tmp_path: Path) -> ours.YourRecommendersRun:
    ds = toy_dataset()
    fold = temporal_fold(ds, 0)
    write_trec_runs(toy_lists(ds, fold), tmp_path / "trec")
    world: dict[str, Any] = {"dataset": ds, "fold": fold, "trec": tmp_path / "trec", "tmp": tmp_path}
    return judged(world, tmp_path / "trec", sim(tmp_path, noise=0.8, unparseable=0.3))


def taus(*rows: tuple[str, str, float, float, float, int], systems: int = 5, ceiling: float = 0.8) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "a": a,
                "b": b,
                "tau": t,
                "low": lo,
                "high": hi,
                "n_systems": systems,
                "n_users": n,
                "n_boot": 50,
                "resamples": ours.distinct_resamples(n),
                "reliability_a": ceiling,
                "reliability_b": 0.9,
                "claim": "too few users" if n < 10 else agreement_claim(t, lo, hi, systems, ceiling, 0.9),
            }
            for a, b, t, lo, hi, n in rows
        ]
    )


def test_sentences_claim_only_what_the_convention_allows(run: ours.YourRecommendersRun) -> None:
    run.taus = taus(
        ("serendipity", "arena", 0.8, 0.4, 1.0, 40),
        ("serendipity", "saer", 0.3, -0.2, 0.7, 40),
        ("arena", "saer", -0.7, -1.0, -0.3, 40),
        ("arena", "precision", 0.9, 0.5, 1.0, 3),
        ("saer", "precision", math.nan, math.nan, math.nan, 40),
        ("serendipity", "precision", 0.97, 0.93, 1.0, 40),
    )
    said = report.agreement_sentences(run)
    assert len(said) == 6
    assert "agree on the order" in said[0] and "0.80 [0.40, 1.00]" in said[0] and "equivalent" in said[0]
    assert "not high enough" in said[0]
    assert "cannot say" in said[1] and "agree" not in said[1].split(";")[0]
    assert "opposite orders" in said[2]
    assert "only 3 users" in said[3] and "10 distinct resamples" in said[3] and "too few to say" in said[3]
    assert "no tau" in said[4]
    assert "rank the systems equivalently" in said[5] and "above 0.9" in said[5]
    # tau with three systems is shown, never claimed; a measure that does not agree with itself carries no claim
    run.taus = taus(("serendipity", "arena", 1.0, 1.0, 1.0, 40), systems=3)
    assert "fewer than 4 systems" in report.agreement_sentences(run)[0]
    run.taus = taus(("serendipity", "arena", 0.6, 0.2, 0.9, 40), ceiling=0.2)
    assert "mostly noise" in report.agreement_sentences(run)[0]


def test_recovery_names_a_best_protocol_only_when_the_cis_do_not_overlap(run: ours.YourRecommendersRun) -> None:
    recovered = ours.Recovery(run, run, {"noise": 0.8}, pd.DataFrame())
    own = "its own truth (perfect judge)"
    clear = pd.DataFrame(
        [
            {"protocol": "arena", "against": own, "tau": 0.9, "low": 0.8, "high": 1.0, "n_users": 30},
            {"protocol": "saer", "against": own, "tau": 0.3, "low": 0.1, "high": 0.5, "n_users": 30},
        ]
    )
    said = report.recovery_sentences(replace(recovered, taus=clear))
    assert says_apart(said[0]) and says_higher(said[0], "Arena (share of points)", "SAER (label 0-2)")
    assert not says_no_ranking(said[0]) and interval_after(said[0], "tau") == (0.9, 0.8, 1.0)
    overlapping = clear.assign(high=[1.0, 0.85])
    said = report.recovery_sentences(replace(recovered, taus=overlapping))
    assert "cannot rank the protocols" in said[0] and "recovers its truth best" in said[0]
    tied = clear.assign(tau=[0.7, 0.7], low=[0.3, 0.2], high=[0.9, 0.9])
    said = report.recovery_sentences(replace(recovered, taus=tied))
    assert "equally well (tau 0.70)" in said[0] and "best" not in said[0]


def test_tables_have_a_cell_per_system_and_measure_and_mark_the_missing(run: ours.YourRecommendersRun) -> None:
    table = report.verdict_table(run, "T").data
    assert list(table["system"]) == run.sample.systems
    assert len(table.columns) == 1 + len(run.config.protocols)
    offline = report.offline_table(run, "T").data
    assert len(offline.columns) == 1 + len(ours.OFFLINE)
    everyone = report.offline_table(run, "over every evaluation user ({users} users)", over="all")
    users = len(next(iter(run.offline_all.values())))
    assert everyone.caption == f"over every evaluation user ({users} users)" and "(n=" not in everyone.data.iloc[0, 1]
    run.summary.loc[(run.summary["measure"] == "saer") & (run.summary["system"] == "by_id"), "mean"] = float("nan")
    table = report.verdict_table(run, "T").data
    cell = table.loc[table["system"] == "by_id", "SAER (label 0-2)"].item()
    assert cell.startswith("no parsed judgment (n=")
    unparsed = report.unparsed_table(run, "T")
    assert not isinstance(unparsed, str)
    assert set(unparsed.data["protocol"]) <= set(ours.PROTOCOLS) and len(unparsed.data) > 0
    assert len(report.tau_table(run, "T").data) == len(run.taus)
    separated = report.separation_table(run, "T").data
    assert list(separated["measure"]) == [report.NAMES[m] for m in run.measures]


def test_figures_draw_one_panel_per_measure(run: ours.YourRecommendersRun) -> None:
    fig = report.verdict_figure(run)
    assert isinstance(fig, Figure)
    assert sum(ax.get_visible() for ax in fig.axes) == len(run.measures)
    heat = report.agreement_figure(run)
    assert len(heat.axes[0].texts) == len(run.measures) ** 2


def test_cost_table_scales_the_runs_tokens(run: ours.YourRecommendersRun) -> None:
    prices = {"m": {"input": 1.0, "output": 2.0}}
    at_scale = ours.cost_at_scale(run, n_users=60, prices=prices).set_index("protocol")
    usage = run.usage().set_index("protocol")
    saer = at_scale.loc["saer"]
    # SAER: one call per list, so 3 systems x 60 users; dollars from this run's tokens per judgment
    assert saer["judgments, 60 users"] == 180
    per_in = usage.loc["saer", "prompt_tokens"] / usage.loc["saer", "judgments"]
    per_out = usage.loc["saer", "completion_tokens"] / usage.loc["saer", "judgments"]
    assert saer["US$ m, 60 users"] == pytest.approx(180 * (per_in * 1.0 + per_out * 2.0) / 1e6)
    shown = report.cost_table(run, "T").data
    assert list(shown["protocol"]) == list(run.config.protocols)
    scaled = report.scale_table(at_scale.reset_index(), "At scale").data  # type: ignore[union-attr]
    assert list(scaled.columns) == [
        "protocol",
        "tokens in / judgment",
        "tokens out / judgment",
        "judgments, 60 users",
        "US$ m, 60 users",
    ]


def test_a_judge_whose_answers_never_parse_gets_every_table_and_no_claim(tmp_path: Path) -> None:
    ds = toy_dataset()
    fold = temporal_fold(ds, 0)
    write_trec_runs(toy_lists(ds, fold), tmp_path / "trec")
    world: dict[str, Any] = {"dataset": ds, "fold": fold, "trec": tmp_path / "trec", "tmp": tmp_path}
    run = judged(world, tmp_path / "trec", sim(tmp_path, unparseable=1.0))
    assert all((frame["status"] != "parsed").all() for frame in run.judgments.values())
    table = report.verdict_table(run, "T").data
    for protocol in ("Serendipity (Avg.Score@k)", "Arena (share of points)", "SAER (label 0-2)"):
        assert all(cell.startswith("no parsed judgment") for cell in table[protocol])
    assert all(cell != "n/a" for cell in report.offline_table(run, "T").data["Precision@k"])  # offline needs no judge
    assert report.win_matrix(run, "T") is not None
    said = report.agreement_sentences(run)
    assert said and all("no tau" in s for s in said if "Precision" not in s or "Arena" in s or "SAER" in s)
    assert not any("alike" in s for s in said)
    assert "0 of" in report.takeaways_items(run)[0]
    assert isinstance(report.verdict_figure(run), Figure)
    assert isinstance(report.agreement_figure(run), Figure)
    assert len(report.unparsed_table(run, "T").data) == 3  # type: ignore[union-attr]
    assert says_no_ranking(untabled := str(report.tournament_table(run, "T"))) and "Arena" in untabled  # text, no table
    assert "too few to say" in report.beyond_sentences(run)[0]
    for shown in (report.q_table(run, "T"), report.power_table(run, "T"), report.planning_table(run, "T")):
        assert shown is not None
    assert all("unparsed" in s for s in report.missingness_sentences(run))


def test_serendipity_table_gives_the_papers_three_numbers(run: ours.YourRecommendersRun) -> None:
    shown = report.serendipity_table(run, "T").data  # type: ignore[union-attr]
    assert list(shown.columns) == ["system", "Avg.Score@k (1-5)", "P_ser@k", "N_ser@k"]
    assert list(shown["system"]) == run.sample.systems
    p_ser = run.summary[run.summary["measure"] == "p_ser"].set_index("system")
    first = run.sample.systems[0]
    assert shown.loc[0, "P_ser@k"].startswith(f"{p_ser.loc[first, 'mean']:.3f}")
    # P_ser is the share of slots scored >= 4, so between 0 and 1, and it joins no ranking
    assert p_ser["mean"].between(0, 1).all()
    assert not run.taus["a"].isin(["p_ser", "n_ser"]).any() and not run.taus["b"].isin(["p_ser", "n_ser"]).any()


def test_the_win_matrix_and_the_separation_table_lay_out_the_runs_counts() -> None:
    run = counted_run()
    wins = report.win_matrix(run, "T").data.set_index("")  # type: ignore[union-attr]
    assert list(wins.index) == list(wins.columns) == ["a", "b", "c"]
    assert (wins.loc["a", "b"], wins.loc["b", "a"]) == ("0.75 (n=2)", "0.25 (n=2)")
    assert wins.loc["a", "c"] == wins.loc["c", "a"] == "no verdict (n=1)"
    assert wins.loc["c", "b"] == "1.00 (n=1)" and wins.loc["a", "a"] == "-"
    assert denies(none := report.win_matrix(counted_run(duels=False), "T").text, "judged") and "Arena" in none
    table = report.separation_table(run, "T").data.set_index("measure")
    assert table.loc["Arena (share of points)"].tolist() == ["2 of 3", "a > b; c > a"]
    assert table.loc["Precision@k"].tolist() == ["0 of 3", "none"]
    heat = report.agreement_figure(run).axes[0]
    assert [t.get_text() for t in heat.texts[:4]] == ["1.00", "0.50", "n/a", "n/a"]


def test_below_ten_users_the_baseline_table_says_no_decision_is_made(tmp_path: Path) -> None:
    ds = toy_dataset()
    fold = temporal_fold(ds, 0)
    write_trec_runs(toy_lists(ds, fold), tmp_path / "trec")
    world: dict[str, Any] = {"dataset": ds, "fold": fold, "trec": tmp_path / "trec", "tmp": tmp_path}
    run = judged(world, tmp_path / "trec", sim(tmp_path), arena_pairs="popular")
    said = report.baseline_table(run, "T")
    assert isinstance(said, MySTText) and "fewer than 10" in said.text and "no system is called better" in said.text
    assert report.baseline_sentences(run) == [said.text]
    assert report.baseline_section(run, "T") == [said]
    assert "no decision" in report.separation_table(run, "T").data.iloc[0, 1]
    assert any("no pair of systems is called different" in t for t in report.takeaways_items(run))
    assert "{" not in report.timings_text(run) and "seconds" in report.timings_text(run)


def test_the_headline_tests_power_plan_and_beyond_accuracy_tables(tmp_path: Path) -> None:
    ds = toy_dataset()
    fold = temporal_fold(ds, 0)
    write_trec_runs(toy_lists(ds, fold), tmp_path / "trec")
    world: dict[str, Any] = {"dataset": ds, "fold": fold, "trec": tmp_path / "trec", "tmp": tmp_path}
    run = judged(world, tmp_path / "trec", sim(tmp_path, noise=0.8), n_users=0, arena_pairs="popular")
    table = report.baseline_table(run, "T")
    assert isinstance(table, Styler)
    section = report.baseline_section(run, "T")
    assert section[0] is not None and len(section) == 2 and isinstance(section[1], MySTText)
    shown = table.data
    assert len(shown.columns) <= 6 and set(shown["system"]) == {"by_id", "hashed"}
    assert len(shown) == 2 * len(run.measures) and "(n=" not in shown.iloc[-1, 2]  # NDCG: every judged user
    said = report.baseline_sentences(run)
    assert len(said) == 2 and all(s.split(" against ")[1].startswith("popular") for s in said)
    power = report.power_table(run, "T").data
    assert list(power["measure"]) == [report.NAMES[m] for m in run.measures]
    assert isinstance(report.curve_figure(run), Figure)
    plan = report.planning_table(run, "T")
    assert isinstance(plan, Styler) and len(plan.data.columns) == 4
    priced = report.planning_table(
        run, "Planning", {"m": {"input": 1.0, "output": 2.0}, "n": {"input": 0.5, "output": 1.0}}
    )
    assert isinstance(priced, Styler) and list(priced.data.columns)[3:] == ["US$ m", "US$ n"]
    row = priced.data.set_index("measure").loc[report.NAMES["saer"]]
    if row["users for half the pairs"] != "never":
        users = int(row["users for half the pairs"].replace(",", ""))
        want = ours.cost_at_scale(run, users, prices={"m": {"input": 1.0, "output": 2.0}}).set_index("protocol")
        assert row["US$ m"] == f"{want.loc['saer', f'US$ m, {users} users']:,.2f}"
    beyond = report.beyond_table(run, "T")
    assert isinstance(beyond, Styler) and list(beyond.data["system"]) == run.sample.systems
    assert report.beyond_sentences(run) and "log(1 + training popularity)" in report.beyond_sentences(run)[0]
    tau = report.tau_table(run, "T").data
    assert len(tau.columns) == 7 and (tau["what it supports"] == "none (fewer than 4 systems)").all()
    assert set(tau["measure"]) <= set(report.SHORT.values())


def test_the_plan_before_judging_is_a_sentence() -> None:
    said = report.plan_text({"serendipity": 10, "arena": 4, "saer": 2}, ["serendipity", "arena", "saer"], 2, 3)
    assert said.startswith("**Before judging:** 2 systems x 3 users") and "16 in all" in said


def test_the_lists_table_keeps_what_differs_and_captions_the_rest(tmp_path: Path) -> None:
    ds = toy_dataset()
    fold = temporal_fold(ds, 0)
    write_trec_runs(toy_lists(ds, fold), tmp_path / "trec")
    lists = ours.read_system_lists(ds, fold, tmp_path / "trec", top_k=5)
    table = report.lists_table(lists, "The systems read")
    assert list(table.data.columns) == ["system", "file"]
    assert (
        table.caption.startswith("The systems read; the same for every system: format: trec")
        and "those items: kept" in table.caption
    )


def test_q_table_and_missingness_sentences(run: ours.YourRecommendersRun) -> None:
    table = report.q_table(run, "Q beside the share")
    assert isinstance(table, Styler)
    assert len(table.data.columns) == 6 and table.caption == "Q beside the share"
    said = report.missingness_sentences(run)
    assert said and all("unparsed" in s for s in said)
    assert all(("p = " in s) or ("too few" in s) for s in said)


def test_the_tournament_ranks_every_system_from_the_duels(run: ours.YourRecommendersRun) -> None:
    table = report.tournament_table(run, "Davidson's nu = {nu} over {n} duels")
    assert isinstance(table, Styler)
    strengths = run.tournament()
    assert table.caption == f"Davidson's nu = {strengths.attrs['nu']:.2f} over {strengths.attrs['n']} duels"
    assert sorted(table.data["system"]) == sorted(run.sample.systems)
    assert strengths["log_strength"].sum() == pytest.approx(0.0, abs=1e-6) and strengths.attrs["n"] > 0
    assert not table.data["log strength"].str.startswith("-0.00").any()


def test_a_tournament_of_ties_only_says_so_instead_of_ranking(run: ours.YourRecommendersRun) -> None:
    duels = run.duels.copy()
    duels[OVERALL] = "tie"
    text = report.tournament_table(replace(run, duels=duels), "{nu} {n}")
    assert isinstance(text, MySTText) and "was a tie" in text.text


def test_the_coverage_table_lays_out_the_measured_coverage(run: ours.YourRecommendersRun) -> None:
    coverage = pd.DataFrame(
        [{"protocol": "saer", "users": 10, "target": 0.8, "mean_tau": 0.5, "coverage": 0.6, "draws": 20}]
    )
    recovered = ours.Recovery(run, run, {"noise": 0.8}, pd.DataFrame(), coverage)
    table = report.coverage_table(recovered, "SIMULATED JUDGE: {users} users")
    assert isinstance(table, Styler)
    assert table.data.iloc[0].tolist() == ["SAER (label 0-2)", 10, "0.80", "0.50", "60% of 20"]
    assert table.caption == f"SIMULATED JUDGE: {len(run.sample.users)} users"
    assert "at least 20" in str(report.coverage_table(replace(recovered, coverage=pd.DataFrame()), "-"))
