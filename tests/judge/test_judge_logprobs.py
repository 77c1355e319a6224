import math

import pytest

from recjudge_utils.judge.logprobs import compact_logprobs, label_distribution

OPTS = ("1", "2", "3", "4", "5")


def entry(tok, tops=None):
    tops = tops or {tok: 1.0}
    return {
        "token": tok,
        "logprob": math.log(tops.get(tok, 1e-3)),
        "bytes": None,
        "top_logprobs": [{"token": t, "logprob": math.log(p), "bytes": None} for t, p in tops.items()],
    }


def test_label_field_position_and_renormalisation():
    content = [
        entry('{"'),
        entry("relevance"),
        entry('":'),
        entry(" 2", {" 2": 0.9, " 3": 0.1}),  # another digit before the score must be skipped
        entry(',"'),
        entry("score"),
        entry('":'),
        entry(" "),
        entry("4", {"4": 0.4, "5": 0.2, "3": 0.1, "four": 0.1, " 4": 0.1}),
        entry("}"),
    ]
    d = label_distribution(content, OPTS, label_field="score")
    assert d is not None and d.position == 8
    assert math.isclose(d.probs["4"], 0.5 / 0.8) and math.isclose(d.probs["5"], 0.2 / 0.8)
    assert math.isclose(sum(d.probs.values()), 1.0)
    assert math.isclose(d.expected, (4 * 0.5 + 5 * 0.2 + 3 * 0.1) / 0.8)
    assert d.argmax == "4" and math.isclose(d.coverage, 0.8)


def test_merged_punctuation_token():
    content = [entry('{"score'), entry('":4', {'":4': 0.6, '":5': 0.4}), entry("}")]
    d = label_distribution(content, OPTS, label_field="score")
    assert d is not None and math.isclose(d.expected, 4.4)


def test_first_label_token_without_field_and_compact_form():
    content = [entry("Score"), entry(":"), entry(" 3", {" 3": 0.5, " 2": 0.5}), entry(" 5")]
    compact = compact_logprobs(content)
    for c in (content, compact):
        d = label_distribution(c, OPTS)
        assert d.position == 2 and math.isclose(d.expected, 2.5)


def test_non_numeric_labels_have_no_expected_value():
    content = [entry("A", {"A": 0.7, "B": 0.2, "Tie": 0.1})]
    d = label_distribution(content, ("A", "B", "Tie"))
    assert d.expected is None and d.argmax == "A" and math.isclose(d.probs["Tie"], 0.1)


@pytest.mark.parametrize(
    "content",
    [
        None,
        [],
        [entry("no"), entry(" label")],
        [entry('{"score'), entry('":'), entry(' "high"'), entry("}")],  # field value is not a label
    ],
)
def test_no_label_gives_none(content):
    assert label_distribution(content, OPTS, label_field="score") is None
