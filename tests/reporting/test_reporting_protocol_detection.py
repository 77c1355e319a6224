"""Chapter 5's display layer on constructed runs: takeaways claim only what their CIs allow, tables are for people,
and every note and figure marks the simulated judge."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from claims import (
    about,
    affirms,
    clauses,
    counts_in,
    denies,
    intervals_in,
    numbers_in,
    says_higher,
    says_no_ranking,
    says_overlap,
    sentences,
)
from matplotlib.figure import Figure
from pandas.io.formats.style import Styler

from recjudge_utils.experiments.protocol_detection import (
    DetectionConfig,
    DetectionRun,
    ReevalDetection,
    SaerDetection,
    Separation,
    against_truth,
)
from recjudge_utils.reporting import protocol_detection as report

#: a header a reader should not meet: a bound column, a count or a raw frame column
MACHINE_NAME = re.compile(
    r"_(lo|hi)\b|^(n|pairs|measure|value|low|high|source|mae|acc3|kappa_qw|win_rate|coverage|power|gap)$"
)
CONFIG = DetectionConfig(
    noise_levels=(0.0, 1.0),
    coverage_sizes=(10, 100),
    biases=(0.0, 0.2, 0.4),
    neglects=(0.0, 0.5),
    reeval_noise=(0.0, 2.0),
    user_sizes=(10, 40),
)


def constructed_run(separates: bool, wrong_side: bool = False, infinite_q: bool = False) -> DetectionRun:
    """A run whose intervals separate (from 100 %, from 0, from 95 %) when ``separates``, and do not otherwise."""
    noise = pd.DataFrame(
        [(0.0, "mae", 0.0, 0.0, 0.0, 300), (0.0, "acc3", 1.0, 0.99, 1.0, 300), (0.0, "kappa_qw", 1.0, 1.0, 1.0, 300),
         (0.0, "expected_mae", 0.0, np.nan, np.nan, 300), (1.0, "mae", 0.66, 0.63, 0.69, 300),
         (1.0, "acc3", 0.64, 0.62, 0.66, 300), (1.0, "kappa_qw", 0.61, 0.57, 0.65, 300),
         (1.0, "expected_mae", 0.658, np.nan, np.nan, 300)],
        columns=["noise", "measure", "value", "low", "high", "n"],
    )  # fmt: skip
    low_cov = (0.88, 0.85, 0.91) if separates else (0.93, 0.90, 0.955)
    coverage = pd.DataFrame(
        [
            row
            for pairs, interval, *estimate, width in (
                (10, "MAE, percentile bootstrap", *low_cov, 0.72),
                (10, "3-class accuracy, Wilson", 0.95, 0.92, 0.97, 0.49),
                (100, "MAE, percentile bootstrap", 0.95, 0.93, 0.97, 0.25),
                (100, "3-class accuracy, Wilson", 0.96, 0.94, 0.98, 0.18),
            )
            for row in (
                (pairs, interval, "coverage", *estimate, 400),
                (pairs, interval, "mean_width", width, np.nan, np.nan, 400),
            )
        ],
        columns=["pairs", "interval", "measure", "value", "low", "high", "n"],
    )
    coverage.attrs.update(true_mae=0.66, true_acc=0.64, noise=1.0)
    power = pd.DataFrame(
        [(50, "power", 0.26, 0.22, 0.31, 400), (50, "power_statsmodels", 0.27, np.nan, np.nan, np.nan),
         (200, "power", 0.83, 0.79, 0.86, 400), (200, "power_statsmodels", 0.78, np.nan, np.nan, np.nan)],
        columns=["pairs", "measure", "value", "low", "high", "n"],
    )  # fmt: skip
    separation = Separation(power, (1.35, 1.73), (0.81, 1.03), 0.19, 192.0, 210.0)
    single_q = math.inf if infinite_q else 0.935
    arena = against_truth(
        pd.DataFrame(
            [(b, "truth", 0.42, 0.68) for b in CONFIG.biases]
            + [(0.0, "single order (paper)", 0.42, 0.68), (0.0, "both orders, adjudicated", 0.42, 0.68)]
            + [(0.2, "single order (paper)", 0.47, 0.80), (0.2, "both orders, adjudicated", 0.42, 0.68)]
            + [(0.4, "single order (paper)", 0.52, single_q), (0.4, "both orders, adjudicated", 0.42, 0.68)],
            columns=["bias", "protocol", "win_rate", "Q"],
        )
    )
    arena.attrs.update(tested="random", baseline="pop", users=300, truth_ties=0.66)
    adversarial = pd.DataFrame(
        [(0.0, "correct", 1.0, 0.97, 1.0, 150), (0.0, "wrong", 0.0, 0.0, 0.03, 150), (0.0, "tie", 0.0, 0.0, 0.03, 150),
         (0.0, "expected correct", 1.0, np.nan, np.nan, np.nan), (0.5, "correct", 0.55, 0.47, 0.63, 150),
         (0.5, "wrong", 0.0, 0.0, 0.03, 150), (0.5, "tie", 0.45, 0.37, 0.53, 150),
         (0.5, "expected correct", 0.5, np.nan, np.nan, np.nan)],
        columns=["context_neglect", "measure", "value", "low", "high", "n"],
    )  # fmt: skip
    # without separation every biased row's interval still reaches the 100 % of an unbiased judge
    shares = zip((0.0, 0.2, 0.4), [1.0, 0.75, 0.58] if separates else [1.0] * 3,
                 [0.98, 0.67, 0.50] if separates else [0.8] * 3, [1.0, 0.81, 0.66] if separates else [1.0] * 3,
                 (1.0, 0.73, 0.53), strict=True)  # fmt: skip
    consistency = pd.DataFrame(
        [row for b, value, low, high, expected in shares
         for row in ((b, "consistency", value, low, high, 150), (b, "expected", expected, np.nan, np.nan, np.nan))],
        columns=["bias", "measure", "value", "low", "high", "n"],
    )  # fmt: skip
    labels = pd.DataFrame(
        [(src, lab, share, kappa)
         for src, shares, kappa in (("truth", (0.84, 0.12, 0.04), 1.0), ("annotator A", (0.68, 0.25, 0.07), 0.43),
                                    ("annotator B", (0.66, 0.26, 0.08), 0.50),
                                    ("strict merge of A and B", (0.85, 0.12, 0.03), 0.69))
         for lab, share in zip(("Poor Match", "Partial Match", "Good Match"), shares, strict=True)],
        columns=["labels", "label", "share", "kappa_vs_truth"],
    )  # fmt: skip
    verdicts = pd.DataFrame(
        [(src, v, share)
         for src, shares in (("truth", (0.13, 0.74, 0.13)), ("annotator A", (0.24, 0.52, 0.24)),
                             ("annotator B", (0.28, 0.44, 0.28)), ("conservative merge of A and B", (0.14, 0.73, 0.13)))
         for v, share in zip(("co-occurrence", "Tie", "embedding"), shares, strict=True)],
        columns=["verdicts", "verdict", "share"],
    )  # fmt: skip
    saer = SaerDetection(adversarial, consistency, labels, verdicts, customers=150, heldout=5)
    noisy_gap = (-0.06, -0.10, -0.02) if wrong_side else (0.08, 0.02, 0.13) if separates else (0.05, -0.03, 0.12)
    gaps = pd.DataFrame(
        [("truth", np.nan, "avg", 0.106, 0.080, 0.131, 150), ("truth", np.nan, "p_ser", 0.019, 0.014, 0.025, 150),
         ("noise 0", 0.0, "avg", 0.106, 0.080, 0.131, 150), ("noise 0", 0.0, "p_ser", 0.019, 0.014, 0.025, 150),
         ("noise 2", 2.0, "avg", *noisy_gap, 150), ("noise 2", 2.0, "p_ser", 0.017, 0.003, 0.031, 150)],
        columns=["source", "noise", "measure", "value", "low", "high", "n"],
    )  # fmt: skip
    gaps.attrs.update(recommenders=("bprmf", "random"), users=150, pairs=5962)
    ordering = pd.DataFrame(
        [
            (m, f"noise {s:g}", s, n, c)
            for m in ("avg", "p_ser")
            for s in (0.0, 2.0)
            for n, c in ((10, 0.9), (40, 0.97))
        ],
        columns=["metric", "source", "noise", "users", "correct_order"],
    )
    needed = pd.DataFrame(
        [(m, s, n) for m in ("avg", "p_ser") for s, n in (("noise 0", 40.0), ("noise 2", np.nan))],
        columns=["metric", "source", "users_for_95%"],
    )
    return DetectionRun(
        config=CONFIG,
        judge_name="simulated judge (noise 0)",
        data_label="Serendipity-2018 proxy stand-in [STAND-IN]; MovieLens-100K",
        noise=noise,
        coverage=coverage,
        separation=separation,
        arena=arena,
        saer=saer,
        reevaluation=ReevalDetection(gaps, ordering, needed),
        panels=panel_study(separates),
    )


def panel_study(separates: bool) -> pd.DataFrame:
    """One judge and two panels: the independent panel's intervals lie above one judge's and the shared-bias panel
    keeps its offset when ``separates``; otherwise every interval overlaps one judge's."""
    up, bias = (0.10, 0.5) if separates else (0.01, 0.01)
    rows = [
        ("one judge", 0.83, 0.83, 0.44, 0.0, 100),
        ("panel of 3, independent errors", 0.83 + up, 0.83 + up, 0.44 + up, 0.01, 300),
        ("panel of 3, one shared bias", 0.83 - up, 0.83 - up, 0.44 + up, bias, 300),
    ]
    frame = pd.DataFrame(
        [row for c, *xs, n in rows for row in (
            *((c, m, x, x - 0.02, x + 0.02, 2150) for m, x in zip(("acc3", "kappa", "consistency", "bias"), xs,
                                                                   strict=True)),
            (c, "calls", n, np.nan, np.nan, np.nan), (c, "excluded", 0 if n == 100 else 6, np.nan, np.nan, np.nan),
            (c, "cost_multiple", n / 100, np.nan, np.nan, np.nan))],
        columns=["condition", "measure", "value", "low", "high", "n"],
    )  # fmt: skip
    frame.attrs.update(customers=900, pairs=2150, excluded=12, answers=600, one=100, multiple=3.0)
    return frame


#: a caption as chapter 5's notebook writes one: the table's words, then the simulated judge
CAPTION = "the notebook's caption (simulated judge)"
STUDIES = (
    lambda run: report.noise(run, CAPTION), lambda run: report.coverage(run, CAPTION),
    lambda run: report.separation(run, CAPTION), lambda run: report.arena(run, CAPTION),
    lambda run: report.saer(run, CAPTION, CAPTION), lambda run: report.adjudication(run, CAPTION, CAPTION),
    lambda run: report.reevaluation(run, CAPTION), lambda run: report.panels(run, CAPTION),
)  # fmt: skip


def every_table(run: DetectionRun) -> list[Styler]:
    """Every table chapter 5 shows, built from ``run``."""
    return [shown for study in STUDIES for shown in study(run) if isinstance(shown, Styler)]


def every_figure(run: DetectionRun) -> list[Figure]:
    """Every figure chapter 5 shows, built from ``run``."""
    return [shown for study in STUDIES for shown in study(run) if isinstance(shown, Figure)] + [
        report.forest_figure(run)
    ]


def test_takeaways_claim_a_difference_only_where_the_interval_excludes_it() -> None:
    items = report.takeaways_items(constructed_run(separates=True))
    swap, coverage, gap = about(items, "swap"), about(items, "cover", "MAE"), about(items, "gap")
    assert numbers_in(swap)[0] == 0.2 and (75.0, 67.0, 81.0) in intervals_in(swap)  # detected at b = 0.2, CI < 100
    assert affirms(swap, "detect") and not says_no_ranking(swap)
    assert affirms(coverage, "less than 95") and (88.0, 85.0, 91.0) in intervals_in(coverage) and "n = 10" in coverage
    assert affirms(gap, "excludes 0") and not says_no_ranking(gap) and "wrong" not in gap
    assert intervals_in(gap)[0] == (0.106, 0.080, 0.131)  # the true gap
    assert "cannot" not in "\n".join(items)

    items = report.takeaways_items(constructed_run(separates=False))
    swap, coverage, gap = about(items, "swap"), about(items, "cover", "MAE"), about(items, "gap")
    assert says_no_ranking(swap) and numbers_in(swap)[0] == 0.4 and (100.0, 80.0, 100.0) in intervals_in(swap)
    assert "detects" not in "\n".join(items)
    assert denies(coverage, "less than 95") and not affirms(coverage, "less than 95") and not intervals_in(coverage)
    (unresolved,) = [part for part in sentences(gap) if says_no_ranking(part)]  # cannot order them at σ = 2
    assert "σ = 2" in unresolved and affirms(unresolved, "includes 0")


def test_a_gap_excluding_zero_on_the_wrong_side_is_called_a_wrong_order() -> None:
    gap = about(report.takeaways_items(constructed_run(separates=True, wrong_side=True)), "gap")
    (wrong,) = [part for part in sentences(gap) if "wrong" in part]
    assert "σ = 2" in wrong and affirms(wrong, "excludes 0") and not says_no_ranking(gap)


def test_the_takeaways_count_intervals_that_hold_the_truth() -> None:
    items = report.takeaways_items(constructed_run(separates=True))
    mae, adversarial = about(items, "MAE", "error model"), about(items, "1 − c")
    assert counts_in(mae) == [(2, 2)] and affirms(mae, "holds")  # the implied MAE in the CI at both noise levels
    assert counts_in(adversarial) == [(2, 2)] and affirms(adversarial, "holds")


def test_tables_have_worded_headers_and_an_interval_in_the_estimates_cell() -> None:
    run = constructed_run(separates=True)
    tables = every_table(run)
    for styler in tables:
        assert str(styler.caption) == CAPTION  # the notebook's caption, as it wrote it
        machine = [c for c in map(str, styler.data.columns) if MACHINE_NAME.search(c)]
        assert machine == [], machine
        assert len(styler.data.columns) <= 6
        assert "row_heading" not in styler.to_html()  # no index column
    noise = report.noise(run, CAPTION)[1].data
    assert list(noise["MAE [95 % CI]"]) == ["0.000 [0.000, 0.000]", "0.660 [0.630, 0.690]"]
    assert list(noise["implied MAE in the CI"]) == ["yes", "yes"]
    cov = report.coverage(run, CAPTION)[1].data
    assert cov.iloc[0]["coverage % [95 % CI]"] == "88.0 [85.0, 91.0]"
    assert cov.iloc[0]["against the nominal 95 %"] == "below"
    gaps = report.reevaluation(run, CAPTION)[2].data.set_index("judge")
    assert gaps.loc["simulated judge, σ = 2", "users for 95 % correct order (Avg.Score)"] == "more than 40"
    assert gaps.loc["simulated judge, σ = 0", "Avg.Score@20 gap [95 % CI]"] == "0.106 [0.080, 0.131]"


def test_an_infinite_q_reads_as_infinity_and_the_text_says_what_it_means() -> None:
    run = constructed_run(separates=True, infinite_q=True)
    table = report.arena(run, CAPTION)[1].data.set_index("position bias b")
    assert table.loc["0.4", "Q single order"] == "∞"
    assert table.loc["0.2", "Q single order"] == "0.800 (+18 %)"
    assert "inf" not in table.to_string()
    assert "∞" in (text := report.section_text(run, "arena")) and "no losses" in text  # what ∞ means
    assert "∞" not in report.section_text(constructed_run(separates=True), "arena")


@pytest.mark.parametrize("section", report.SECTIONS)
def test_each_sections_note_is_the_simulated_judges_with_its_error_model(section: str) -> None:
    text = report.judge_note(constructed_run(separates=True), section).text
    assert text.startswith("```{admonition} Simulated judge\n:class: simulated")
    assert "not what any LLM thinks" in text and "warning" not in text
    swept, fixed = text.split("Error model:")
    assert "every other error as below" in swept
    assert ("unparseable 0" in fixed) is (section != "panels") and "margin 0.5" in fixed
    if section == "arena":
        assert "position bias b = 0, 0.2, 0.4" in swept and "position bias" not in fixed
    if section == "saer":
        assert "context neglect c = 0, 0.5" in swept and "context neglect" not in fixed


def test_an_unknown_section_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown section"):
        report.judge_note(constructed_run(separates=True), "chapter 7")


def test_the_stand_in_note_appears_only_for_stand_in_data() -> None:
    run = constructed_run(separates=True)
    note = report.data_note(run)
    assert note is not None and "Stand-in data" in note.text
    run.data_label = "Serendipity-2018; MovieLens-100K"
    assert report.data_note(run) is None


def test_every_figure_names_the_simulated_judge() -> None:
    run = constructed_run(separates=True)
    figures = every_figure(run)
    for fig in figures:
        assert isinstance(fig, Figure)
        titles = [fig.get_suptitle(), *(ax.get_title() for ax in fig.axes)]
        assert any("simulated judge" in t for t in titles), titles


def test_the_forest_plot_sets_each_rate_beside_its_truth() -> None:
    fig = report.forest_figure(constructed_run(separates=True))
    ax = fig.axes[0]
    rows = [t.get_text() for t in ax.get_yticklabels()]
    assert rows[:2] == ["adversarial detected, c = 0", "adversarial detected, c = 0.5"]
    assert rows[2:] == ["swap consistency, b = 0", "swap consistency, b = 0.2", "swap consistency, b = 0.4"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["measured (95 % CI)", "truth (error model)"]


def test_the_panel_takeaways_say_what_a_vote_averaged_and_what_it_kept_only_where_intervals_allow() -> None:
    measures = ("3-class accuracy", "weighted kappa", "position consistency")
    *_, noise, bias = report.takeaways_items(constructed_run(separates=True))
    assert intervals_in(noise)[:3] == [(93.0, 91.0, 95.0), (83.0, 81.0, 85.0), (0.93, 0.91, 0.95)]  # panel, one judge
    (above,) = [c for c in clauses(noise) if says_higher(c, "its interval", "one judge")]
    assert all(m in above for m in measures) and affirms(noise, "averaged")
    assert intervals_in(bias) == [(0.5, 0.48, 0.52), (0.01, -0.01, 0.03)]  # shared offset, independent errors
    assert affirms(bias, r"\bkept\b") and not denies(bias, "offset")
    (below,) = [c for c in clauses(bias) if says_higher(c, "one judge", "it")]
    assert [m in below for m in measures] == [True, True, False]
    *_, noise, bias = report.takeaways_items(constructed_run(separates=False))
    assert "averaged" not in noise and says_overlap(noise) and says_no_ranking(noise)
    assert not [c for c in clauses(noise) if says_higher(c, "its interval", "one judge")]
    assert denies(bias, "offset") and "kept" not in bias
    assert "it cannot be told from one judge" in bias


def test_the_panel_table_and_figure_show_every_condition_with_its_intervals() -> None:
    run = constructed_run(separates=True)
    figure, table = report.panels(run, CAPTION)
    columns = list(table.data.columns)
    assert len(columns) == 6 and columns[0] == "judge" and "calls" in columns[-1]
    assert sum(c.endswith("[95 % CI]") for c in columns) == 4  # every measure's column carries its interval
    rows = table.data.set_index("judge")
    assert rows.loc["one judge", "3-class accuracy % [95 % CI]"] == "83.0 [81.0, 85.0]"
    assert rows.loc["panel of 3, one shared bias", "mean error, score − g [95 % CI]"] == "0.500 [0.480, 0.520]"
    assert rows["calls (× one judge's)"].tolist() == ["100 (1.0 ×)", "300 (3.0 ×)", "300 (3.0 ×)"]
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "3-class accuracy",
        "weighted kappa",
        "position consistency",
        "mean error (score − g)",
    ]
    assert [t.get_text() for t in ax.get_legend().get_texts()][1:] == list(dict.fromkeys(run.panels["condition"]))
    assert "600 member answers" in report.section_text(run, "panels")
