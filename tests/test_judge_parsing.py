import pytest

from recjudge_utils.judge.parsing import ParseError, extract_label, json_field_parser, parse_json_object


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"score": 4}', {"score": 4}),
        ('  {"score": 4, "why": "fits"}  ', {"score": 4, "why": "fits"}),
        ('```json\n{"score": 2}\n```', {"score": 2}),
        ('```\n{"score": 2}\n```\nHope this helps!', {"score": 2}),
        ('Sure! Here is my rating: {"score": 5} because the film is great.', {"score": 5}),
        ("{'score': 3, 'reason': 'it is new to the user'}", {"score": 3, "reason": "it is new to the user"}),
        ("{'relevant': True, 'note': None}", {"relevant": True, "note": None}),
        ('{"relevant": true, "note": null, "x": false}', {"relevant": True, "note": None, "x": False}),
        ("{'relevant': true, 'note': null}", {"relevant": True, "note": None}),
        ('{"score": 4,}', {"score": 4}),
        ('{"a": {"b": [1, 2,],},}', {"a": {"b": [1, 2]}}),
        ('Reasoning: I don\'t think so. {"score": 1}', {"score": 1}),
        ('{"text": "a } inside", "score": 2} trailing', {"text": "a } inside", "score": 2}),
        ('[1, 2] then {"score": 3}', {"score": 3}),
        ('first {"score": 1} then {"score": 5}', {"score": 1}),
    ],
)
def test_parse_json_object_tolerant(text, expected):
    assert parse_json_object(text) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        (None, "empty"),
        ("   \n ", "empty"),
        ("I would rate this 4 out of 5.", "no JSON object"),
        ('{"score": 4', "truncated"),
        ("[1, 2, 3]", "no object"),
        ("{score: 4}", "no JSON object"),
    ],
)
def test_parse_json_object_failures_raise_parse_error_with_reason(text, reason):
    with pytest.raises(ParseError) as ei:
        parse_json_object(text)
    assert reason in str(ei.value)
    assert isinstance(ei.value, ValueError)


def test_parse_error_is_reexported_by_client():
    from recjudge_utils.judge.client import ParseError as ClientParseError

    assert ClientParseError is ParseError


@pytest.mark.parametrize(
    ("value", "label"),
    [(4, "4"), ("4", "4"), (4.0, "4"), (" 4 ", "4"), ("4/5", "4"), ("'3'", "3"), ("+2", "2")],
)
def test_extract_label(value, label):
    assert extract_label(value, ("1", "2", "3", "4", "5")) == label


@pytest.mark.parametrize("value", [6, "4.5", None, True, "four", ""])
def test_extract_label_rejects(value):
    with pytest.raises(ParseError):
        extract_label(value, ("1", "2", "3", "4", "5"))


def test_extract_label_case_insensitive_words():
    assert extract_label("tie", ("A", "B", "Tie")) == "Tie"


def test_json_field_parser():
    parse = json_field_parser("score", ("1", "2", "3", "4", "5"))
    assert parse('{"Score": 5, "x": 1}') == {"score": "5", "x": 1}
    with pytest.raises(ParseError, match="no 'score' field"):
        parse('{"rating": 5}')
    with pytest.raises(ParseError, match="not one of"):
        parse('{"score": 9}')
