"""The introduction's overview of the data (counts checked by hand), its tables for people (the data, one judgment,
the usage footer) and the takeaways of its one judgment."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from claims import about, affirms, denies, numbers_in

from recjudge_utils.answer_formats.json_levels import levels_parser
from recjudge_utils.data import Dataset
from recjudge_utils.experiments.introduction import fit_request, overview
from recjudge_utils.judge.types import JudgeRequest, JudgeResult
from recjudge_utils.reporting import introduction as report
from recjudge_utils.reporting.tables import usage_table_for_people


@pytest.fixture
def toy() -> Dataset:
    """Two users, three movies, one rating each."""
    inter = pd.DataFrame(
        {"user": [1, 1, 2], "item": [10, 11, 12], "rating": [5.0, 3.5, 4.0], "timestamp": [0, 86400, 172800]}
    )
    items = pd.DataFrame(
        {"item": [10, 11, 12], "title": ["Alpha", "Beta", "Gamma"], "genres": [["Drama"], ["Comedy"], ["Drama"]]}
    )
    return Dataset("toy", inter, items, None, label="toy", is_real=False, source="test")


def judged(toy: Dataset, **fields: object) -> JudgeResult[dict[str, int]]:
    """A judgment of the introduction's question with the given outcome fields."""
    outcome: dict[str, object] = {
        "status": "parsed", "raw_text": '{"score": 4}', "value": {"score": 4}, "reason": None, "label_probs": None,
        "expected_label": None, "prompt_tokens": 80, "completion_tokens": 6, "latency_s": 0.1, "cost_usd": 0.0,
        "cache_hit": False,
    }  # fmt: skip
    outcome.update(fields)
    return JudgeResult(request=fit_request(toy, seed=0, n_history=2), **outcome)  # type: ignore[arg-type]


def test_the_overview_counts_what_the_page_shows(toy: Dataset) -> None:
    view = overview(toy, n_first=2)
    assert view.statistics["users"] == 2 and view.statistics["interactions"] == 3 and view.label == "toy [STAND-IN]"
    assert view.ratings.to_dict() == {3.5: 1, 4.0: 1, 5.0: 1}
    assert view.genres.to_dict() == {"Drama": 2, "Comedy": 1}  # items 10 and 12 are dramas
    assert view.genre_share.to_dict() == pytest.approx({"Drama": 2 / 3, "Comedy": 1 / 3})
    assert view.high_share == pytest.approx(2 / 3)  # 5.0 and 4.0 of 5.0, 3.5, 4.0
    assert view.first["title"].tolist() == ["Alpha", "Beta"]
    lost = Dataset("toy", toy.interactions, toy.items.iloc[:1], None, label="toy", is_real=False, source="test")
    unknown = overview(lost)  # ratings of items the catalogue lacks: no title, no genre
    assert unknown.first["title"].isna().tolist() == [False, True, True] and unknown.genres.to_dict() == {"Drama": 1}


def test_the_data_tables_speak_in_words(toy: Dataset) -> None:
    view = overview(toy)
    styler = report.statistics_table(view, f"{view.label}: its size")  # the notebook's caption
    stats = styler.data.iloc[0]
    assert styler.caption == "toy [STAND-IN]: its size"
    assert stats["users"] == "2" and stats["interactions"] == "3" and stats["categories (genres)"] == "2"
    assert stats["density (% of user-item pairs)"] == "50.00"  # 3 of 2 x 3 pairs
    first = report.first_ratings(overview(toy, n_first=2), "The first two ratings").data
    assert first["title"].tolist() == ["Alpha", "Beta"] and first["rating (stars)"].tolist() == ["5", "3.5"]
    assert first["rated on (UTC)"].tolist() == ["1970-01-01 00:00", "1970-01-02 00:00"]
    lost = Dataset("toy", toy.interactions, toy.items.iloc[:1], None, label="toy", is_real=False, source="test")
    assert (
        report.first_ratings(overview(lost), "The first ratings").data["title"].tolist()[1] == "(not in the catalogue)"
    )
    sentence = str(report.ratings_sentence(overview(toy)))
    assert numbers_in(sentence)[:4] == [67, 3, 67, 33] and "four stars" in sentence  # 67 % of 3 rated 4+; genres
    assert sentence.index("Drama") < sentence.index("Comedy")  # the genre with the most ratings first


def test_one_judgment_as_a_table_and_its_takeaways(toy: Dataset) -> None:
    result = judged(toy)
    table = report.judgment_table(result, "judge-x", "One judgment").data.set_index("what")["value"]
    assert table["status"] == "parsed" and table["parsed score"] == "score 4"
    assert table["prompt file"] == "prompts/introduction/fit.md"
    assert f"Candidate {toy.domain.item}: Gamma" in table["question"]  # the candidate, in the dataset's words
    words = table["domain words (item / items / consumed / platform)"].split(" / ")
    assert words == [toy.domain.item, toy.domain.items, toy.domain.consumed, toy.domain.platform]
    assert "genres" in table["item fields shown"]
    assert "label probabilities" not in table.index
    items = report.takeaways_items(result, "judge-x")
    assert "judge-x" in items[0] and '`{"score": 4}`' in items[0]  # the judge and its raw answer
    assert affirms(items[0], r"\bparsed\b") and numbers_in(items[0])[:2] == [4, 4]  # parsed to the score 4
    usage = about(items, "tokens")
    assert "new call" in usage and numbers_in(usage)[:3] == [80, 6, 0.0]  # tokens in, out, US$
    unpriced = report.takeaways_items(judged(toy, cost_usd=float("nan")), "judge-x")
    assert any("out, price unknown for this model)" in item for item in unpriced)
    failed = report.takeaways_items(judged(toy, status="error", raw_text=None, value=None, reason="HTTP 500"), "j")
    assert ", j," in failed[0] and affirms(failed[0], "failed") and "HTTP 500" in failed[0]
    assert not any("simulated judge" in item for item in items)


def test_an_unparsed_or_cached_judgment_is_said_so(toy: Dataset) -> None:
    result = judged(toy, status="unparsed", raw_text="maybe `4`", value=None, reason="no JSON", cache_hit=True)
    table = report.judgment_table(result, "simulated judge (noise 0.8)", "One judgment").data.set_index("what")["value"]
    assert table["why it has no score"] == "no JSON" and table["parsed score"] == "none"
    items = report.takeaways_items(result, "simulated judge (noise 0.8)")
    assert "`` maybe `4` ``" in items[0] and denies(items[0], "parse") and "no JSON" in items[0]
    assert any("from the disk cache" in item for item in items)
    simulated = about(items, "{term}`simulated judge`")
    assert denies(simulated, "read the question") and denies(simulated, "truth")  # its score is noise here
    probs = judged(toy, label_probs={"4": 0.6, "5": 0.4}, expected_label=4.4)
    table = report.judgment_table(probs, "j", "One judgment").data.set_index("what")["value"]
    assert table["label probabilities"] == "4: 0.600, 5: 0.400" and table["expected score"] == "4.40"
    assert any("expected score is 4.40" in item for item in report.takeaways_items(probs, "j"))


def test_the_usage_table_for_people_has_seven_columns_in_words(scripted_judge) -> None:
    judge = scripted_judge(lambda request: '{"score": 3}' if request.metadata["i"] else "no idea")
    requests = [
        JudgeRequest(({"role": "user", "content": f"q {i}"},), "introduction/fit", "1", metadata={"i": i})
        for i in range(3)
    ]
    parse = levels_parser(["score"])
    judge.judge_many(requests, parse)
    judge.judge_many(requests[:1], parse)  # answered from the cache
    shown = usage_table_for_people(judge.usage_summary()).data
    assert list(shown.columns) == [
        "prompt", "judgments", "paid calls", "unparsed / errors", "tokens in / out", "cost (US$)", "seconds"
    ]  # fmt: skip
    total = shown.set_index("prompt").loc["all prompts"]
    assert total["judgments"] == "4" and total["paid calls"] == "3" and total["unparsed / errors"] == "2 / 0"


def test_the_introduction_runs_like_every_experiment(toy: Dataset, scripted_judge) -> None:  # type: ignore[no-untyped-def]
    from recjudge_utils.experiments import introduction

    read = introduction.run(scripted_judge(lambda request: '{"score": 4}'), toy, introduction.IntroductionConfig())
    assert read.score == 4 and read.judgment.ok
    numbers = [(r.metric, r.estimate.value, r.estimate.n) for r in read.results()]
    assert numbers == [("score", 4.0, 1), ("parsed", 1.0, 1)]
    item = read.items()["scores"][0]
    assert item["label"] == 4 and item["user"] == 1 and item["item"] in {10, 11, 12}
    unread = introduction.run(scripted_judge(lambda request: "five", model="other"), toy)
    assert unread.score is None and unread.judgment.status == "unparsed"
    score, parsed = (r.estimate for r in unread.results())
    assert math.isnan(score.value) and parsed.value == 0.0
