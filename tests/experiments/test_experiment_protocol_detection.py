"""Chapter 5 (what the protocols detect) on the fixture data: it builds its panels with the chapters' own steps and
configs, its simulated judges recover the truth where the error model says they must, and its results are numbers
with CIs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_reporting_protocol_detection import every_figure, every_table

from recjudge_utils.data import Dataset
from recjudge_utils.data.standins import serendipity_proxy_from_movielens
from recjudge_utils.experiments import protocol_detection as detect
from recjudge_utils.experiments import saer
from recjudge_utils.experiments.results import read_results, write_run_results
from recjudge_utils.judge.backends.sim import SIM_PREFIX
from recjudge_utils.judge.loading import load_profile
from recjudge_utils.metrics import judge_scores as js
from recjudge_utils.protocols.pointwise_score import SerendipityJudge
from recjudge_utils.reporting import protocol_detection as report

SMALL = detect.DetectionConfig(
    noise_levels=(0.0, 1.0),
    coverage_sizes=(20,),
    repeats=20,
    n_boot=50,
    power_sizes=(25, 50),
    biases=(0.0, 1.0),
    neglects=(0.0, 1.0),
    arena_users=8,
    saer_customers=6,
    reeval_users=6,
    reeval_noise=(0.0, 2.0),
    user_sizes=(3, 5),
    panel_customers=6,
)


def movielens_like(n_users: int = 40, n_items: int = 60, per_user: int = 30) -> Dataset:
    """Ratings 1-5 at increasing times over genre-tagged items: enough users for every chapter's split and sample."""
    rng = np.random.default_rng(0)
    rows = []
    for u in range(1, n_users + 1):
        for t, i in enumerate(rng.choice(np.arange(1, n_items + 1), per_user, replace=False)):
            rows.append((u, int(i), float(rng.integers(1, 6)), 10_000 * t + u))
    inter = pd.DataFrame(rows, columns=["user", "item", "rating", "timestamp"])
    genres = [["Drama"], ["Comedy"], ["Action", "Drama"], ["Horror"], ["Sci-Fi", "Comedy"]]
    items = pd.DataFrame(
        {"item": range(1, n_items + 1), "title": [f"Movie {i}" for i in range(1, n_items + 1)],
         "genres": [genres[i % len(genres)] for i in range(n_items)]}
    )  # fmt: skip
    return Dataset("ml-100k", inter, items, None, label="MovieLens-like toy", is_real=False, source="test")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> detect.DetectionRun:
    dataset = movielens_like()
    pairs = serendipity_proxy_from_movielens(dataset, n_pairs=120, min_per_level=1)
    # a module fixture runs before conftest's per-test isolated runs folder: give it one of its own
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RECJUDGE_RUNS_DIR", str(tmp_path_factory.mktemp("runs")))
        patch.delenv("RECJUDGE_RUN_DIR", raising=False)
        # chapter 4's cheap offline encoder instead of MiniLM: the test checks the wiring, not the embeddings
        original = detect.saer_config
        patch.setattr(detect, "saer_config", lambda c: dataclasses.replace(original(c), encoder="word-counts"))
        with load_profile("sim").client(run_name="05_protocols_detect", progress=False) as judge:
            return detect.run(judge, detect.DetectionData(pairs, dataset), SMALL)


def test_the_chapters_configs_differ_only_where_the_chapter_names_it() -> None:
    def changed(config: object, default: object) -> set[str]:
        return {f.name for f in dataclasses.fields(config) if getattr(config, f.name) != getattr(default, f.name)}  # type: ignore[arg-type]

    # chapter 5's sample is chapter 4's as a simulated-judge run builds it (with the held-out future)
    as_sim = saer.SaerConfig().resolved(SIM_PREFIX)
    assert as_sim.heldout == saer.SIM_HELDOUT
    assert changed(detect.saer_config(SMALL), as_sim) <= {"n_customers", "prompt_versions"}
    arena_cfg = detect.arena_config(SMALL)
    assert changed(arena_cfg, dataclasses.replace(arena_cfg, n_users=2)) == {"n_users"}
    assert arena_cfg.recommenders == ("random", "pop") and arena_cfg.aspects == ("Accuracy",)


def test_a_perfect_simulated_judge_recovers_every_truth(run: detect.DetectionRun) -> None:
    noise = run.noise.set_index(["noise", "measure"])["value"]
    assert noise[(0.0, "mae")] == pytest.approx(noise[(0.0, "expected_mae")])
    arena = run.arena[run.arena["bias"] == 0.0].set_index("protocol")
    assert arena.loc["both orders, adjudicated", "win_rate"] == pytest.approx(arena.loc["truth", "win_rate"])
    adv = run.saer.adversarial.set_index(["context_neglect", "measure"])["value"]
    assert adv[(0.0, "correct")] == 1.0
    cons = run.saer.consistency.set_index(["bias", "measure"])["value"]
    # without noise a position bias of 1 splits exactly the customers whose lists hold equal evidence
    assert cons[(0.0, "consistency")] == 1.0 and cons[(1.0, "consistency")] < 1.0
    assert cons[(1.0, "consistency")] == pytest.approx(cons[(1.0, "expected")])
    assert (run.saer.customers, run.saer.heldout) == (SMALL.saer_customers, saer.SIM_HELDOUT)
    assert report.section_text(run, "saer").startswith(
        f"Panel: 6 customers, each one's last {saer.SIM_HELDOUT} interactions held"
    )
    gaps = run.reevaluation.gaps.set_index(["source", "measure"])
    assert gaps.loc[("noise 0", "avg"), "value"] == pytest.approx(gaps.loc[("truth", "avg"), "value"])


def test_results_are_numbers_with_their_intervals(run: detect.DetectionRun) -> None:
    results = run.results()
    assert {r.metric for r in results} == {"mae", "ci_coverage"} | {
        f"panel_{m}" for m in ("acc3", "kappa", "bias", "consistency")
    }
    for e in (r.estimate for r in results):
        assert e.known and e.has_ci
        assert e.low - 1e-9 <= e.value <= e.high + 1e-9
    assert set(run.timings) == {
        "judge serendipity noise",
        "judge ci coverage",
        "judge template separation",
        "judge arena position bias",
        "judge saer protocols",
        "judge reevaluation noise",
        "judge panels",
    }
    assert np.isfinite(run.separation.effect_size)


def test_results_json_holds_the_runs_results_as_the_simulated_judges(run: detect.DetectionRun, tmp_path: Path) -> None:
    with load_profile("sim").client(run_name="05_protocols_detect", progress=False) as judge:
        stored = read_results(write_run_results("05_protocols_detect", run, judge, tmp_path))
    assert stored["experiment"] == "protocol_detection" and stored["judge"]["kind"] == "simulated"
    assert len(stored["results"]) == len(run.results()) > 0
    assert [r["metric"] for r in stored["results"]] == [r.metric for r in run.results()]


def test_the_chapters_tables_figures_notes_and_takeaways_build_from_a_run(run: detect.DetectionRun) -> None:
    tables = every_table(run)
    assert all(len(t.data) for t in tables)
    assert [len(report.noise(run, "noise")[1].data), len(report.arena(run, "arena")[1].data)] == [2, 2]
    assert all(report.section_text(run, s) for s in ("coverage", "separation", "arena", "saer", "reevaluation"))
    figures = every_figure(run)
    assert all(f.axes for f in figures)
    notes = [report.judge_note(run, s).text for s in report.SECTIONS]
    assert all(n.startswith("```{admonition} Simulated judge") for n in notes)
    assert len(report.takeaways_items(run)) >= 6


def test_the_studies_judges_derive_from_the_chapters_simulated_judge(tmp_path: Path) -> None:
    """Each study's judge has exactly its error model and the judge's run folder and cache, whatever error model the
    profile the chapter's judge was opened from has: its answers are those of a judge opened with that model."""
    pairs = serendipity_proxy_from_movielens(movielens_like(), n_pairs=40, min_per_level=1)
    profile = load_profile("sim")  # noise 0.8, position bias 0.1, ...: none of it reaches a study's judges
    with profile.client(run_dir=tmp_path / "judge", progress=False) as judge:
        sims = detect.sweep_judges(judge)
        with sims(noise=1.0, seed=3) as derived:
            assert (derived.run_dir, derived.cache.path) == (judge.run_dir, judge.cache.path)
            assert derived.model_name == f"{SIM_PREFIX} (noise 1)"
            got = SerendipityJudge(derived, template="base").score(pairs.pairs, pairs.items)["score"].tolist()
    direct = load_profile({"name": "other", "backend": "sim", "model": "sim", "options": {"noise": 1.0, "seed": 3}})
    with direct.client(run_dir=tmp_path / "direct", cache_path=tmp_path / "other.sqlite", progress=False) as client:
        assert SerendipityJudge(client, template="base").score(pairs.pairs, pairs.items)["score"].tolist() == got
    with pytest.raises(ValueError, match="chapter 5 sweeps a simulated judge"):
        detect.sweep_judges(Named("an LLM"))


class Named:
    """Not a judge client: a name and nothing else."""

    def __init__(self, name: str) -> None:
        self.model_name = name


def test_q_errors_are_relative_to_the_true_q_where_both_are_finite() -> None:
    arena = pd.DataFrame(
        [(0.0, "truth", 0.5, 0.8), (0.2, "truth", 0.5, 0.8), (0.2, "single", 0.6, 1.0), (0.2, "both", 0.5, np.inf)],
        columns=["bias", "protocol", "win_rate", "Q"],
    )
    arena.attrs["users"] = 10
    out = detect.against_truth(arena)
    assert out["Q_error"].iloc[2] == pytest.approx(1.0 / 0.8 - 1) and out["Q_error"].iloc[0] == 0.0
    assert np.isnan(out["Q_error"].iloc[3])  # no relative error of an infinite Q
    assert out.attrs == {"users": 10, "true_win_rate": 0.5, "true_q": 0.8}
    no_losses = detect.against_truth(arena.assign(Q=[0.0, 0.0, 1.0, 1.0]))
    assert no_losses["Q_error"].isna().all()  # a true Q of 0 has no relative error


def test_detection_rates_and_gap_tables_as_the_reports_read_them() -> None:
    adversarial = pd.DataFrame(
        [(c, o, s, low, high, 20) for c, rows in ((0.5, [("correct", 0.55, 0.47, 0.63), ("wrong", 0.0, 0.0, 0.03),
                                                  ("tie", 0.45, 0.37, 0.53), ("expected correct", 0.5, None, None)]),
                                           (0.0, [("correct", 0.9, 0.85, 0.94), ("wrong", 0.05, 0.02, 0.1),
                                                  ("tie", 0.05, 0.02, 0.1), ("expected correct", 1.0, None, None)]))
         for o, s, low, high in rows],
        columns=["context_neglect", "measure", "value", "low", "high", "n"],
    )  # fmt: skip
    det = detect.SaerDetection(adversarial, pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), 5, 5).detection
    assert list(det.index) == [0.0, 0.5]  # ascending context neglect, whatever the sweep's order
    assert det.loc[0.5, ["correct", "low", "high", "tie", "wrong", "expected"]].tolist() == [
        0.55,
        0.47,
        0.63,
        0.45,
        0.0,
        0.5,
    ]
    assert det["held"].tolist() == [False, True]  # 1.0 lies above [0.85, 0.94]; 0.5 inside [0.47, 0.63]
    gaps = pd.DataFrame(
        [("truth", np.nan, m, 0.1, 0.05, 0.15, 30) for m in ("avg", "p_ser")]
        + [("noise 2", 2.0, m, 0.02, -0.01, 0.05, 30) for m in ("avg", "p_ser")],
        columns=["source", "noise", "measure", "value", "low", "high", "n"],
    )
    needed = pd.DataFrame(
        [("avg", "noise 2", 40.0), ("p_ser", "noise 2", np.nan)], columns=["metric", "source", "users_for_95%"]
    )
    table = detect.ReevalDetection(gaps, pd.DataFrame(), needed).table.set_index(["source", "measure"])
    noisy = table.loc[("noise 2", "avg")]
    assert noisy[["noise", "value", "low", "high", "n"]].tolist() == [2.0, 0.02, -0.01, 0.05, 30]
    users = table["users_for_95%"]
    assert users[("noise 2", "avg")] == 40.0 and users[("noise 2", "p_ser")] == np.inf  # never reached
    assert np.isnan(users[("truth", "avg")]) and np.isnan(table.loc[("truth", "avg"), "noise"])


def test_the_implied_mae_is_held_when_its_interval_holds_it(run: detect.DetectionRun) -> None:
    mae, implied = (js.measure_by(run.noise, m, "noise") for m in ("mae", "expected_mae"))
    inside = (mae["low"] - 1e-9 <= implied["value"]) & (implied["value"] <= mae["high"] + 1e-9)
    assert detect.implied_in_ci(run.noise).tolist() == inside.tolist()
    shown = report.noise(run, "noise")[1].data
    assert shown["implied MAE in the CI"].tolist() == ["yes" if h else "no" for h in inside]


def test_the_panel_study_measures_one_judge_and_two_panels_through_the_panel_machinery(
    run: detect.DetectionRun,
) -> None:
    p = run.panels
    assert list(dict.fromkeys(p["condition"])) == list(detect.PANEL_CONDITIONS)
    value = p.pivot(index="condition", columns="measure", values="value").loc[list(detect.PANEL_CONDITIONS)]
    # every judge scores every pair and judges every customer's two lists in both orders; a panel asks each member
    one = 120 + 2 * 6
    assert value["calls"].tolist() == [one, 3 * one, 3 * one] and value["cost_multiple"].tolist() == [1.0, 3.0, 3.0]
    assert value["excluded"].iloc[0] == 0 and p.attrs == {"customers": 6, "pairs": 120, "excluded": int(
        value["excluded"].iloc[1:].sum()), "answers": 6 * one, "one": one, "multiple": 3.0}  # fmt: skip
    for m in ("acc3", "kappa", "bias", "consistency"):
        r = js.measure_by(p, m, "condition")
        assert (r["low"] <= r["value"] + 1e-9).all() and (r["value"] <= r["high"] + 1e-9).all()


def test_a_shared_offset_survives_the_vote_and_no_offset_makes_the_panels_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without noise, bias or unparseable answers one judge and the independent panel read the truth exactly; the
    shared-bias panel's mean error is exactly its members' offset clipped at level 5; with no offset the two panels'
    members are the same judges (the same cache keys), so their rows are equal."""
    dataset = movielens_like()
    pairs = serendipity_proxy_from_movielens(dataset, n_pairs=60, min_per_level=1)
    original = detect.saer_config
    monkeypatch.setattr(detect, "saer_config", lambda c: dataclasses.replace(original(c), encoder="word-counts"))
    exact = dataclasses.replace(SMALL, panel_noise=0.0, panel_bias=0.0, panel_unparseable=0.0, panel_offset=1.0)
    with load_profile("sim").client(run_dir=tmp_path / "05", progress=False) as judge:
        p = detect.judge_panels(judge, pairs, dataset, exact)
        p = p.pivot(index="condition", columns="measure", values="value")
        same = detect.judge_panels(judge, pairs, dataset, dataclasses.replace(exact, panel_offset=0.0))
    one, independent, shared = detect.PANEL_CONDITIONS
    assert (
        p.loc[[one, independent], ["acc3", "kappa", "consistency", "bias", "excluded"]].to_numpy().tolist()
        == [[1.0, 1.0, 1.0, 0.0, 0]] * 2
    )
    g = pairs.pairs["g"].to_numpy(dtype=float)
    assert p.loc[shared, "bias"] == pytest.approx(np.mean(np.minimum(g + 1, 5) - g))
    assert p.loc[shared, "acc3"] < 1.0
    rows = [same.loc[same["condition"] == c].drop(columns="condition").reset_index(drop=True)
            for c in (independent, shared)]  # fmt: skip
    pd.testing.assert_frame_equal(*rows)
