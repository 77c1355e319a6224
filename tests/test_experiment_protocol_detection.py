"""Chapter 5 (what the protocols detect) on the fixture data: it builds its panels with the chapters' own steps and
configs, its simulated judges recover the truth where the error model says they must, and its results are numbers
with CIs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from test_reporting_protocol_detection import every_figure, every_table

from recjudge_utils.data import Dataset
from recjudge_utils.data.standins import serendipity_proxy_from_movielens
from recjudge_utils.experiments import protocol_detection as detect
from recjudge_utils.experiments import saer
from recjudge_utils.judge.backends.sim import SIM_PREFIX
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
        return detect.run("sim", detect.DetectionData(pairs, dataset), SMALL)


def test_the_chapters_configs_differ_only_where_the_chapter_names_it() -> None:
    def changed(config: object, default: object) -> set[str]:
        return {f.name for f in dataclasses.fields(config) if getattr(config, f.name) != getattr(default, f.name)}  # type: ignore[arg-type]

    # chapter 5's panel is chapter 4's as a simulated-judge run builds it (with the held-out future)
    as_sim = saer.SaerConfig().resolved(SIM_PREFIX)
    assert as_sim.heldout == saer.SIM_HELDOUT
    assert changed(detect.saer_config(SMALL), as_sim) <= {"n_customers", "prompt_versions"}
    arena_cfg = detect.arena_config(SMALL)
    assert changed(arena_cfg, dataclasses.replace(arena_cfg, n_users=2)) == {"n_users"}
    assert arena_cfg.recommenders == ("random", "pop") and arena_cfg.aspects == ("Accuracy",)


def test_a_perfect_simulated_judge_recovers_every_truth(run: detect.DetectionRun) -> None:
    noise = run.noise.set_index("noise")
    assert noise.loc[0.0, "mae"] == pytest.approx(noise.loc[0.0, "expected_mae"])
    arena = run.arena[run.arena["bias"] == 0.0].set_index("protocol")
    assert arena.loc["both orders, adjudicated", "win_rate"] == pytest.approx(arena.loc["truth", "win_rate"])
    adv = run.saer.adversarial.set_index(["context_neglect", "outcome"])["share"]
    assert adv[(0.0, "correct")] == 1.0
    cons = run.saer.consistency.set_index("bias")
    # without noise a position bias of 1 splits exactly the customers whose lists hold equal evidence
    assert cons.loc[0.0, "consistency"] == 1.0 and cons.loc[1.0, "consistency"] < 1.0
    assert cons.loc[1.0, "consistency"] == pytest.approx(cons.loc[1.0, "expected"])
    assert (run.saer.customers, run.saer.heldout) == (SMALL.saer_customers, saer.SIM_HELDOUT)
    assert report.saer_text(run.saer).startswith(
        f"Panel: 6 customers, each one's last {saer.SIM_HELDOUT} interactions held"
    )
    gaps = run.reevaluation.gaps.set_index(["source", "metric"])
    assert gaps.loc[("noise 0", "avg"), "gap"] == pytest.approx(gaps.loc[("truth", "avg"), "gap"])


def test_results_are_numbers_with_their_intervals(run: detect.DetectionRun) -> None:
    results = run.results()
    assert {r.metric for r in results} == {"mae", "ci_coverage"}
    for r in results:
        assert r.value is not None and r.low is not None and r.high is not None
        assert r.low - 1e-9 <= r.value <= r.high + 1e-9
    assert set(run.timings) == {
        "judge serendipity noise",
        "judge ci coverage",
        "judge template separation",
        "judge arena position bias",
        "judge saer protocols",
        "judge reevaluation noise",
    }
    assert np.isfinite(run.separation.effect_size)


def test_the_chapters_tables_figures_notes_and_takeaways_build_from_a_run(run: detect.DetectionRun) -> None:
    tables = every_table(run)
    assert all(len(t.data) for t in tables)
    assert [len(report.noise_table(run.noise).data), len(report.arena_table(run.arena).data)] == [2, 2]
    figures = every_figure(run)
    assert all(f.axes for f in figures)
    notes = [report.judge_note(run, s).text for s in report.SECTIONS]
    assert all(n.startswith("```{admonition} Simulated judge") for n in notes)
    assert len(report.takeaways_items(run)) >= 6
