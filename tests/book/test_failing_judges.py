"""Judges that fail: every chapter runs to its end with any mix of parsed, unparsed and failed judgments.

The unit tests pin the pieces a chapter leans on when answers are missing (the health sentence, the selection rule
that cannot pick a template for failing to answer, the empty shapes of the pairwise summary and the forest plot,
P_ser of a list with no parsed score, the template later chapters fall back to). The slow test runs every chapter
through the book runner (the ``make test-book`` lane) with the simulated judge's knobs, once mixed (parsed,
unparsed and failed answers in every chapter) and once with every call failing (the share 0 is the book's own runs),
and checks that none raises, that each chapter writes its results with the counts, and that an all-unusable chapter
says so instead of claiming anything.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_book_end_to_end import BOOK_RUNS, executed_text

from recjudge_utils import book
from recjudge_utils.book.notebooks import select_notebooks
from recjudge_utils.book.runner import template_selection_line
from recjudge_utils.experiments.prompt_selection import select_template
from recjudge_utils.judge.backends.sim import SIMULATED_FAILURE, SimulatedJudge
from recjudge_utils.judge.client import JudgeClient
from recjudge_utils.judge.loading import load_profile
from recjudge_utils.judge.records import AnswerHealth
from recjudge_utils.judge.types import make_request
from recjudge_utils.metrics import judge_scores as js
from recjudge_utils.metrics.pairwise import wtl_summary
from recjudge_utils.metrics.serendipity_at_k import per_user_metrics
from recjudge_utils.paths import project_root
from recjudge_utils.prompts import load_prompt
from recjudge_utils.protocols.pointwise_score import PAPER_TEMPLATE, choose_template, save_selected_template
from recjudge_utils.reporting.answer_health import health_sentence, unanswerable_warning
from recjudge_utils.reporting.figures import forest_plot

ROOT = project_root()


# ------------------------------------------------------------------------------------------------ the pieces
def test_health_sentence_counts_and_groups_reasons_without_the_quoted_answers() -> None:
    reasons = [f"no JSON object found in answer: 'prose {i}'" for i in range(30)] + ["HTTP 400: bad request"] * 2
    health = AnswerHealth.count(["unparsed"] * 30 + ["error"] * 2 + ["parsed"] * 8, reasons + [None] * 8)
    assert (health.n, health.parsed, health.unparsed, health.errors) == (40, 8, 30, 2)
    assert health_sentence(health) == (
        "8 of 40 answers could be read; the other 32 (30 unparsed, 2 failed calls): "
        "30 × no JSON object found in answer; 2 × HTTP 400: bad request."
    )
    assert health_sentence(AnswerHealth.count(["parsed"] * 3)) == "3 of 3 answers could be read."
    assert health_sentence(AnswerHealth.count([])) == "No answers were asked for."
    assert AnswerHealth.count(["unparsed"]).nothing_usable and not AnswerHealth.count(["parsed"]).nothing_usable
    with pytest.raises(ValueError, match="unknown judgment status"):
        AnswerHealth.count(["maybe"])
    warning = unanswerable_warning("which template judges best", health).text
    assert warning.startswith("```{admonition} No usable judgments\n:class: warning")
    assert "8 of 40 answers could be read" in warning


def test_selection_mae_counts_an_unparsed_answer_at_its_worst_error() -> None:
    truth = np.array([1.0, 3.0, 5.0, 2.0])
    assert js.mae_unparsed_at_worst([1, 3, 5, 2], truth) == js.mae([1, 3, 5, 2], truth) == 0.0
    # worst errors: g=1 -> 4, g=3 -> 2, g=5 -> 4, g=2 -> 3
    assert js.mae_unparsed_at_worst([np.nan] * 4, truth) == pytest.approx((4 + 2 + 4 + 3) / 4)
    assert js.mae_unparsed_at_worst([1, np.nan, 5, np.nan], truth) == pytest.approx((0 + 2 + 0 + 3) / 4)


def test_a_template_that_mostly_fails_to_answer_is_not_selected_and_none_parsed_selects_none() -> None:
    truth = np.full(10, 2.0)
    scores = {
        "base": pd.DataFrame({"score": [2.0] + [np.nan] * 9}),  # one exact answer, nine unparsed
        "cot": pd.DataFrame({"score": [3.0] * 10}),  # every answer one level off
    }
    summary = js.summarize_templates(scores, truth, n_boot=50)
    selection = [(t, "mae_selection", js.mae_unparsed_at_worst(f["score"], truth), np.nan, np.nan, len(f))
                 for t, f in scores.items()]  # fmt: skip
    summary = pd.concat([summary, pd.DataFrame(selection, columns=summary.columns)], ignore_index=True)
    mae = js.measure_by(summary, "mae", "template")["value"]
    assert mae["base"] < mae["cot"]  # the paper's rule over parsed pairs picks base
    assert select_template(summary)[0] == "cot"
    nothing = summary.assign(n=summary["n"].where(summary["measure"] != "mae", 0))  # no parsed pair
    assert select_template(nothing) == (None, [])


def test_pairwise_summary_without_outcomes_has_every_column_missing() -> None:
    summary = wtl_summary([None, None])
    assert summary["measure"].tolist() == ["win", "tie", "lose", "Q"]  # every measure a table reads is there
    assert (summary["n"] == 0).all() and (summary["n_unjudged"] == 2).all()
    assert summary[["value", "low", "high"]].isna().all().all()


def test_forest_plot_without_rows_says_why_instead_of_raising() -> None:
    fig = forest_plot(pd.DataFrame(columns=["label", "value", "low", "high"]))
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts == ["nothing to plot: no parsed judgment"]


def test_a_judged_list_without_a_parsed_score_has_no_serendipity_number() -> None:
    recs = pd.DataFrame({"rs": "a", "user": [1, 1, 2, 2], "rank": [1, 2, 1, 2], "item": [10, 11, 10, 12]})
    test = pd.DataFrame({"user": [1, 2], "item": [10, 12]})
    judgments = pd.DataFrame({"user": [1, 1, 2, 2], "item": [10, 11, 10, 12], "score": [np.nan, np.nan, 5, np.nan]})
    per_user = per_user_metrics(recs, test, judgments, k=2).set_index("user")
    assert per_user.loc[1, ["p_ser", "n_ser", "avg"]].isna().all()  # nothing parsed: nothing measured
    assert per_user.loc[1, "n_unparsed"] == 2 and per_user.loc[1, "p_acc"] == 0.5  # accuracy needs no judge
    assert per_user.loc[2, "p_ser"] == 0.5 and per_user.loc[2, "avg"] == 5.0  # one parsed of two still counts


def test_later_chapters_fall_back_to_the_papers_template_and_say_why(tmp_path: Path) -> None:
    path = tmp_path / "selected_template.json"
    missing = choose_template(None, path)
    assert (missing.template, missing.why) == (
        PAPER_TEMPLATE,
        "the paper's choice, because chapter 1 has not run in this run",
    )
    save_selected_template(None, path, reason="no template produced a parsed answer (10 pairs x 4 templates)")
    none = choose_template(None, path)
    assert none.template == PAPER_TEMPLATE
    assert none.line() == (
        "serendipity template: cot (the paper's choice, because chapter 1 selected none: no template produced a "
        "parsed answer (10 pairs x 4 templates))"
    )
    assert choose_template("ltm", path).why == (
        "the template parameter; chapter 1 selected none: no template produced a parsed answer (10 pairs x 4 templates)"
    )
    save_selected_template("ls", path)
    assert choose_template(None, path).template == "ls"
    assert choose_template(None, path).why == "chapter 1's selection in this run"


@pytest.mark.parametrize(("failing", "low", "high"), [(0.0, 0, 0), (0.5, 60, 140), (1.0, 200, 200)])
def test_simulated_judge_fails_calls_at_the_asked_rate_and_never_caches_them(
    tmp_path: Path, failing: float, low: int, high: int
) -> None:
    prompt = load_prompt("introduction/fit")
    requests = [make_request(prompt, [{"role": "user", "content": f"pair {i}"}]) for i in range(200)]
    with JudgeClient(SimulatedJudge(failing=failing), run_dir=tmp_path, progress=False) as client:
        results = client.judge_many(requests)
        again = client.judge_many(requests)
    errors = [r for r in results if r.status == "error"]
    assert low <= len(errors) <= high
    assert all(r.reason and SIMULATED_FAILURE in r.reason for r in errors)
    assert [r.status for r in again] == [r.status for r in results]  # the same draw: seeded by the request
    assert not any(r.cache_hit for r, first in zip(again, results, strict=True) if first.status == "error")


# ------------------------------------------------------------------------------------------------ every chapter
#: two worlds: every status in every chapter at once, and a judge whose every call fails (nothing usable: an
#: all-unparsed judge takes the same road, since a chapter reads no score from either)
KNOBS = {
    "mixed": {"unparseable": 0.4, "failing": 0.3, "noise": 0.8},  # parsed: (1 - 0.3) x (1 - 0.4) = 0.42
    "errors-all": {"failing": 1.0},
}


@pytest.fixture(scope="module")
def knob_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    runs = tmp_path_factory.mktemp("failing-runs")
    trained = BOOK_RUNS / "artifacts"
    if not trained.is_dir():
        pytest.fail(f"{trained} is missing: run make book before make test-book (its trained models are reused)")
    # CI runs this beside make book's default run, which may be storing chapter 5's models: a temporary file being
    # written is not a model
    shutil.copytree(trained, runs / "artifacts", ignore=shutil.ignore_patterns("*.tmp"))
    with pytest.MonkeyPatch.context() as patch:  # a module fixture: the runs folder is set back afterwards
        patch.setenv("RECJUDGE_RUNS_DIR", str(runs))
        for name, options in KNOBS.items():
            profile = load_profile({"name": f"sim-{name}", "backend": "sim", "model": "sim", "options": options})
            # chapter 5 is left out: it judges with its own simulated judge, whatever the run's profile
            book.run(profile, name, only=CHAPTERS, build=False, root=ROOT)  # raises on any crash
        yield runs


CHAPTERS = ["00", "01", "02", "03", "04", "06", "07"]
JUDGING = ("00_introduction", "01_serendipity_prompt_selection", "02_rs_reevaluation", "03_recsys_arena", "04_saer",
           "07_your_recommenders")  # fmt: skip


@pytest.mark.book
@pytest.mark.skipif(ROOT is None, reason="needs a checkout with notebooks/")
@pytest.mark.parametrize("knob", list(KNOBS))
def test_every_chapter_runs_to_its_end_and_records_what_it_got(knob_runs: Path, knob: str) -> None:
    folder = knob_runs / knob
    manifest = json.loads((folder / "manifest.json").read_text())
    expected = [p.stem for p in select_notebooks(ROOT / "notebooks", CHAPTERS)]  # type: ignore[operator]
    assert [Path(n["notebook"]).stem for n in manifest["notebooks"]] == expected
    assert all(n["status"] == "ok" for n in manifest["notebooks"])
    parsed = total = 0
    for notebook in JUDGING:
        counts = json.loads((folder / notebook / "results.json").read_text())["judgments"]
        assert counts["n"] == counts["parsed"] + counts["unparsed"] + counts["error"] > 0, notebook
        parsed, total = parsed + counts["parsed"], total + counts["n"]
        if knob == "errors-all":
            assert counts["parsed"] == 0 and counts["error"] == counts["n"], notebook
        elif counts["n"] >= 20:  # every status in every chapter that asks enough (the introduction asks once)
            assert counts["parsed"] and counts["unparsed"] and counts["error"], notebook
    if knob == "mixed":
        assert 0.25 < parsed / total < 0.6  # (1 - 0.3) x (1 - 0.4) = 0.42 of the answers could be read


@pytest.mark.book
@pytest.mark.skipif(ROOT is None, reason="needs a checkout with notebooks/")
@pytest.mark.parametrize("knob", ["errors-all"])
def test_a_chapter_with_nothing_usable_warns_and_claims_nothing(knob_runs: Path, knob: str) -> None:
    folder = knob_runs / knob
    for notebook in ("01_serendipity_prompt_selection", "02_rs_reevaluation", "03_recsys_arena", "04_saer",
                     "07_your_recommenders"):  # fmt: skip
        shown = executed_text(folder, notebook)
        assert "No usable judgments" in shown, notebook
        assert " could be read" in shown, notebook
    chapter1 = executed_text(folder, "01_serendipity_prompt_selection")
    assert "selected template: none." in chapter1 and "had the lowest MAE" not in chapter1
    assert (
        json.loads((folder / "01_serendipity_prompt_selection" / "selected_template.json").read_text())["template"]
        is None
    )
    chapter2 = executed_text(folder, "02_rs_reevaluation")
    assert "chapter 1 selected none" in chapter2
    assert "has the highest Precision_ser" not in chapter2  # no serendipity number, so no leader
    chapter3 = executed_text(folder, "03_recsys_arena")
    assert "The interval contains 0.5" not in chapter3 and "No pair-wise verdict could be read" in chapter3


def test_the_run_summary_says_which_template_chapter_7_uses_and_why(tmp_path: Path) -> None:
    path = tmp_path / "selected_template.json"
    save_selected_template(None, path, reason="no template produced a parsed answer (10 pairs x 4 templates)")
    assert template_selection_line(path) == (
        "template selection: cot, the paper's choice, because chapter 1 selected none: no template produced a parsed "
        "answer (10 pairs x 4 templates) (chapter 2 uses its template parameter)"
    )
    save_selected_template("ltm", path)
    assert template_selection_line(path) == "template selection: chapter 1 selected ltm; chapter 7 judges with it"


@pytest.mark.book
@pytest.mark.skipif(ROOT is None, reason="needs a checkout with notebooks/")
def test_a_plan_made_before_any_model_is_trained_counts_at_least_the_calls_chapter_2_then_made(
    knob_runs: Path, isolated_runs: Path
) -> None:
    # chapter 2 judges each distinct (user, item) pair once, so its count depends on how much trained lists overlap:
    # a plan made before anything is trained renders stand-in lists (which never overlap) and must not count fewer
    mixed = json.loads((knob_runs / "mixed" / "manifest.json").read_text())
    actual = {r["notebook"]: r for r in mixed["actual"]["notebooks"]}["02_rs_reevaluation"]
    profile = load_profile({"name": "sim-mixed", "backend": "sim", "model": "sim", "options": KNOBS["mixed"]})
    assert not (isolated_runs / "artifacts").exists()  # nothing trained: the plan cannot use stored models
    planned = book.plan(profile, "stand-in", only=["02"], root=ROOT)
    row = {r["notebook"]: r for r in planned["notebooks"]}["02_rs_reevaluation"]
    assert row["requests"].startswith("stand-in lists for:"), row["requests"]
    assert row["calls"] >= actual["calls"] > 0, (row["calls"], actual["calls"])
