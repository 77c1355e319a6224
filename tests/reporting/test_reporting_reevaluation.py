"""What chapter 2 shows of a re-evaluation run: Table 3 for people beside the paper, its forest plots, the checks
and the takeaways, which say only what the CIs allow."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from claims import (
    affirms,
    clauses,
    counts_in,
    denies,
    interval_after,
    intervals_in,
    numbers_in,
    says_higher,
    says_no_ranking,
    says_overlap,
)

from recjudge_utils.data import SerendipityPairs
from recjudge_utils.experiments.reevaluation import ReevaluationConfig, ReevaluationRun
from recjudge_utils.metrics.serendipity_at_k import METRICS, SERENDIPITY_METRICS, SUMMARY_COLUMNS
from recjudge_utils.reporting.figures import MARKERS
from recjudge_utils.reporting.reevaluation import (
    ACCURACY,
    SERENDIPITY,
    accuracy_serendipity_figure,
    checks_markdown,
    data_note,
    examples_note,
    judgment_text,
    table2,
    table3,
    table3_figure,
    table3_frame,
    takeaways_items,
    unparsed_judgments,
)


def summary(values: dict[str, dict[str, tuple[float, float, float]]], users_judged: int = 8) -> pd.DataFrame:
    """A run summary: per RS, per metric (estimate, low, high); metrics not given are (1, 0.5, 1.5)."""
    rows: list[tuple[object, ...]] = []
    for rs, metrics in values.items():
        for m in METRICS:
            rows.append((rs, m, *metrics.get(m, (1.0, 0.5, 1.5)), users_judged if m in SERENDIPITY_METRICS else 50))
        rows.append((rs, "unparsed", 1.0, np.nan, np.nan, pd.NA))
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS)).astype({"value": float, "n": "Int64"})


def renamed(frame: pd.DataFrame, old: str, new: str) -> pd.DataFrame:
    """``frame`` with RS ``old`` called ``new``."""
    return frame.replace({"rs": {old: new}})


def constructed_run(
    frame: pd.DataFrame, judge: str = "scripted judge (toy)", judgments: pd.DataFrame | None = None
) -> ReevaluationRun:
    """A run holding only what the reporting reads: its summary, judgments and config."""
    return ReevaluationRun(
        config=ReevaluationConfig(recommenders=tuple(frame["rs"].unique()), top_k=20),
        judge_name=judge,
        data_label="toy data",
        examples_label="toy pairs",
        folds=[],
        fitted=[],
        recs=pd.DataFrame(),
        judgments=judgments if judgments is not None else pd.DataFrame(),
        per_user=pd.DataFrame({"judged": [True] * 3}),
        summary=frame,
        random_tests=pd.DataFrame(columns=["rs", "users", "mean difference", "p", "Holm-adjusted p"]),
    )


SEPARATED = summary(
    {
        "bprmf": {"p_acc": (9, 8, 10), "p_ser": (9, 8, 10), "avg": (3.0, 2.6, 3.4)},
        "kfn": {"p_acc": (2, 1, 3), "p_ser": (4, 3, 5), "avg": (2.2, 2.0, 2.4)},
        "random": {"p_acc": (1, 0.5, 1.5), "p_ser": (1, 0.5, 1.5), "avg": (2.0, 1.8, 2.2)},
    }
)
OVERLAPPING = summary(
    {
        "bprmf": {"p_acc": (5, 3, 7), "p_ser": (5, 3, 7), "avg": (2.3, 2.0, 2.6)},
        "kfn": {"p_acc": (4, 2, 6), "p_ser": (4, 2, 6), "avg": (2.2, 1.9, 2.5)},
        "random": {"p_acc": (3.5, 2, 5), "p_ser": (3.5, 2, 5), "avg": (2.25, 2.0, 2.5)},
    }
)


def test_takeaways_claim_a_lead_only_when_the_ci_separates_it() -> None:
    items = takeaways_items(constructed_run(SEPARATED))
    assert affirms(items[0], r"BPRMF.*highest Precision_acc@20")
    assert interval_after(items[0], "Precision_acc@20") == (9.0, 8.0, 10.0)
    assert says_higher(items[0], "its CI", "every other") and not says_no_ranking(items[0])  # a clear lead
    assert affirms(items[1], r"BPRMF.*highest Precision_ser@20") and says_higher(items[1], "its CI", "every other")
    assert items[2].startswith("BPRMF, KFN ") and says_higher(items[2], "CI", "Random")  # both, in order, no other
    # BPRMF's [2.6, 3.4] is the only Avg.Score CI wholly outside 2.1-2.4
    assert counts_in(items[3]) == [(1, 3)] and affirms(items[3], "outside")
    assert numbers_in(items[3])[:5] == [20, 2.0, 3.0, 2.1, 2.4]  # Avg.Score@20: our span, the paper's
    assert len(items) == 4  # a capable (here: scripted) judge gets no judge takeaway


def test_takeaways_say_the_run_cannot_rank_when_the_cis_overlap() -> None:
    items = takeaways_items(constructed_run(OVERLAPPING, judge="simulated judge (noise 0.8)"))
    (overlap,) = [c for c in clauses(items[0]) if says_overlap(c)]
    assert "KFN" in overlap and "Random" in overlap and says_no_ranking(items[0])
    assert interval_after(items[0], "Precision_acc@20") == (5.0, 3.0, 7.0)
    assert "cannot rank" in items[1] and not any("leads" in item for item in items)
    assert denies(items[2], r"Precision_ser@20 CI.*above Random") and not says_higher(items[2], "CI", "Random")
    assert denies(items[3], "contradict") and "outside" not in items[3] and not counts_in(items[3])
    assert numbers_in(items[3])[:5] == [20, 2.2, 2.3, 2.1, 2.4]
    assert items[4].startswith("The serendipity columns are the simulated judge's")


def test_takeaways_without_cis_do_not_rank() -> None:
    frame = SEPARATED.copy()
    serendipity = frame["measure"].isin(SERENDIPITY_METRICS)
    frame.loc[serendipity, ["low", "high"]] = np.nan
    frame.loc[serendipity, "n"] = 1
    items = takeaways_items(constructed_run(frame, judge="embedded judge (SmolLM2-135M-Instruct)"))
    assert says_no_ranking(items[1]) and not intervals_in(items[1])
    assert numbers_in(items[1]) == [20, 9.0, 1]  # Precision_ser@20 9.00 %, 1 judged user
    assert items[2].startswith("Random's Precision_ser@20 has no CI here")
    assert "Without CIs this run cannot say" in items[3]
    assert "judges close to randomly" in items[4]


def test_table3_puts_ours_and_the_papers_in_one_table_without_an_index() -> None:
    frame = table3_frame(renamed(SEPARATED, "random", "pop"), ACCURACY, "ML-1M", 20)
    assert list(frame.columns) == [
        ("Recommender", ""),
        ("Precision_acc@20 (%)", "this run"),
        ("Precision_acc@20 (%)", "paper (ML-1M)"),
        ("NDCG_acc@20 (%)", "this run"),
        ("NDCG_acc@20 (%)", "paper (ML-1M)"),
    ]
    assert frame[("Precision_acc@20 (%)", "this run")].tolist() == [
        "9.00 [8.00, 10.00]",
        "2.00 [1.00, 3.00]",
        "1.00 [0.50, 1.50]",
    ]
    # the paper's ML-1M rows as printed there (BPRMF 8.20, KFN 1.32) and no row for Pop
    assert frame[("Precision_acc@20 (%)", "paper (ML-1M)")].tolist() == ["8.20", "1.32", "-"]
    ser = table3_frame(SEPARATED, SERENDIPITY, "Goodreads", 10)
    assert ("Avg.Score@10", "paper (Goodreads)") in ser.columns and ("Unparsed answers", "") in ser.columns
    assert ser[("Avg.Score@10", "paper (Goodreads)")].tolist() == ["2.131", "2.294", "-"]
    styled = table3(constructed_run(SEPARATED), "ml-100k", SERENDIPITY, "Table 3b. Serendipity@20")
    html = styled.to_html()
    assert "row_heading" not in html and "Table 3b" in styled.caption and "without brackets" not in styled.caption


def test_a_cell_without_brackets_is_explained_in_the_caption() -> None:
    frame = SEPARATED.copy()
    frame.loc[frame["measure"] == "p_ser", ["low", "high"]] = np.nan
    styled = table3(constructed_run(frame), "ml-1m", SERENDIPITY, "Table 3b. Serendipity@20")
    assert styled.data[("Precision_ser@20 (%)", "this run")].tolist() == ["9.00", "4.00", "1.00"]
    assert "a number without brackets has no CI" in styled.caption
    assert "paper's ML-1M rows" in styled.caption


def test_table3_figure_marks_the_papers_values_beside_ours() -> None:
    fig = table3_figure(constructed_run(renamed(SEPARATED, "random", "pop")), "ml-100k", SERENDIPITY)
    assert len(fig.axes) == 3
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["BPRMF", "KFN", "Pop"]
    hollow = [line for line in fig.axes[0].get_lines() if line.get_marker() == "D"]
    assert len(hollow) == 1 and hollow[0].get_markerfacecolor() == "none"
    np.testing.assert_allclose(hollow[0].get_xdata(), [8.51, 3.38, np.nan])  # ML-1M P_ser; Pop is not in the paper
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["this run (95 % CI)", "paper, ML-1M"]


def test_accuracy_serendipity_figure_tells_recommenders_apart_by_marker() -> None:
    fig = accuracy_serendipity_figure(constructed_run(SEPARATED))
    handles = fig.axes[1].get_legend().legend_handles
    assert [t.get_text() for t in fig.axes[1].get_legend().get_texts()] == ["BPRMF", "KFN", "Random"]
    assert [h.get_marker() for h in handles] == list(MARKERS[:3])  # apart in grey scale too


def test_checks_and_judgment_text_are_markdown_sentences() -> None:
    judgments = pd.DataFrame(
        {
            "fold": 0,
            "user": [1, 1, 1],
            "item": [5, 6, 7],
            "score": [5.0, 2.0, np.nan],
            "status": ["parsed", "parsed", "unparsed"],
            "reason": [None, None, "no JSON object found"],
            "raw_text": ["{}", "{}", "<b>not sure</b>"],
        }
    )
    run = constructed_run(SEPARATED, judgments=judgments)
    text = judgment_text(run)
    # three judged user-lists of 20 slots, three distinct pairs, one unparsed
    # 60 slots, 3 distinct pairs, 57 judgments fewer; 2 parsed, 1 not; per level 1-5: 0, 1, 0, 0, 1
    assert numbers_in(text) == [60, 3, 57, 2, 1, 1, 0, 2, 1, 3, 0, 4, 0, 5, 1]
    bad = unparsed_judgments(run, "Unparsed answers")
    assert bad is not None and "&lt;b&gt;not sure" in bad.to_html()
    assert unparsed_judgments(constructed_run(SEPARATED, judgments=judgments.iloc[:2]), "Unparsed answers") is None
    lines = checks_markdown(run).splitlines()
    assert lines[0].startswith("- Best on Precision_acc@k: BPRMF (")
    assert all(line.startswith("- ") for line in lines)


def test_notes_and_table2() -> None:
    assert data_note("ml-1m", "MovieLens-1M") is None
    note = str(data_note("ml-100k", "MovieLens-100K (real, GroupLens)"))
    assert "stands in here for the paper's ML-1M" in note and "{cite:p}`tokutake2025serendipity`" in note
    pairs = pd.DataFrame({"user": [1], "item": [2], "g": [3], "history": [[1]]})
    items = pd.DataFrame({"item": [2], "title": ["x"], "genres": [["Drama"]]})
    assert examples_note(SerendipityPairs(pairs, items, "Serendipity-2018", True, "grouplens")) is None
    proxy = examples_note(SerendipityPairs(pairs, items, "proxy", False, "test"))
    assert proxy is not None and "proxy [STAND-IN]" in str(proxy)
    ours = pd.DataFrame({"dataset": ["toy"], "users": [3], "items": [4], "interactions": [5], "categories": [1]})
    t2 = table2(ours, "Table 2")
    assert list(t2.data.columns) == ["Source", "Dataset", "Users", "Items", "Positive interactions", "Categories"]
    assert t2.data["Source"].tolist() == ["this run", "paper", "paper", "paper"]


@pytest.mark.parametrize("dataset", ["ml-100k", "goodreads"])
def test_every_table3_half_fits_the_column(dataset: str) -> None:
    run = constructed_run(SEPARATED)
    for metrics in (ACCURACY, SERENDIPITY):
        assert len(table3(run, dataset, metrics, "Table 3").data.columns) <= 8
