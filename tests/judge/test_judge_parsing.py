import contextlib
import gc
import math
import re
import time
from collections.abc import Callable

import pytest

from recjudge_utils.answer_formats.arena_verdicts import (
    canonical_verdict,
    make_pairwise_parser,
    parse_absolute,
    parse_pairwise,
)
from recjudge_utils.answer_formats.json_levels import levels_parser
from recjudge_utils.answer_formats.parsing import (
    ParseError,
    _json_to_python_literals,
    extract_label,
    fence_spans,
    parse_json_object,
)
from recjudge_utils.answer_formats.saer_fields import parse_pairwise as saer_parse_pairwise
from recjudge_utils.answer_formats.saer_fields import parse_pointwise


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


# ------------------------------------------------------------------ exact language of the one-pass helpers
def test_balanced_object_scan_restarts_with_fresh_quotes_inside_an_unbalanced_one():
    # from the first "{" the quotes pair up so that it never closes; the scan from the next "{" sees {"b": 1}
    assert parse_json_object('{"a": "x} {"b": 1}') == {"b": 1}
    assert parse_json_object("It's {'a': 1} and {\"b\": 2}") == {"a": 1}
    assert parse_json_object('{ don\'t {"score": 3}') == {"score": 3}
    assert parse_json_object('{"a": "\\"}", "b": {"c": 1}} tail') == {"a": '"}', "b": {"c": 1}}


@pytest.mark.parametrize(
    "text",
    [
        "",
        "```",
        "``````",
        "```json\n{}```",
        "```json {}``` and ```\n{}\n```",
        "````\n{}\n````",
        "```py\t \n\n{}```",
        "```abc",
        "``` ``` ```",
        "```x``",
        "a```b```c```d",
    ],
)
def test_fence_spans_are_the_fence_regex_matches(text):
    regex = re.compile(r"```[a-zA-Z0-9_+-]*[ \t]*\n?(.*?)```", re.DOTALL)
    expected = [(m.start(), m.end(), m.start(1), m.end(1)) for m in regex.finditer(text)]
    assert [tuple(span) for span in fence_spans(text)] == expected


def test_json_literals_are_converted_outside_strings_only():
    assert _json_to_python_literals("{'a': true, 'b': 'null', \"c\": \"x\\\" false\", d: null}") == (
        "{'a': True, 'b': 'null', \"c\": \"x\\\" false\", d: None}"
    )
    assert _json_to_python_literals("trueish nulls xfalse _true 'unclosed true") == (
        "trueish nulls xfalse _True 'unclosed true"
    )


# --------------------------------------------------------------------------- hostile answers: no crash
@pytest.mark.parametrize(
    "text",
    [
        "[" * 80000,
        "{" * 80000,
        '{"a":' * 16000 + "1" + "}" * 16000,
        "-" * 80000 + "1",
        '{"score": 1' + "0" * 5000 + "}",
    ],
    ids=["brackets", "braces", "deep_object", "unary_minus", "long_integer"],
)
def test_deep_or_huge_answers_are_parse_errors_not_crashes(text):
    with pytest.raises(ParseError):
        parse_json_object(text)
    with pytest.raises(ParseError):
        parse_pairwise(text, ("accuracy",))
    with pytest.raises(ParseError):
        parse_absolute(text)


def test_strict_parsers_turn_decoder_limits_into_parse_errors():
    with pytest.raises(ParseError, match="nested too deeply"):
        parse_absolute('{"score": ' + '{"a":' * 5000 + "1" + "}" * 5001)
    with pytest.raises(ParseError, match="outside"):
        parse_absolute('{"score": 1' + "0" * 400 + "}")  # an int beyond float range is not a crash either
    with pytest.raises(ParseError, match="outside"):
        parse_pointwise("REASONING: x\nCATEGORY: Good Match\nFLAGGED ITEMS: " + "1" * 5000)


def test_rewritten_regexes_keep_their_language():
    assert canonical_verdict(" a \t wins . ") == "A wins"
    assert canonical_verdict("TIE!") == "Tie"
    for bad in ("tie x", "tie..", "tie . .", "b wins!?"):
        with pytest.raises(ParseError):
            canonical_verdict(bad)
    head = "REASONING: x\nCATEGORY: Good Match\nFLAGGED ITEMS: "
    assert parse_pointwise(head + "item  #3 (The (Title), #7").flagged == (3, 7)
    assert parse_pointwise(head + "#3 (a), **[4]**, item 5 and 6").flagged == (3, 4, 5, 6)
    with pytest.raises(ParseError, match="not an item number"):
        parse_pointwise(head + "* #3")
    with pytest.raises(ParseError, match="twice"):
        parse_pointwise("REASONING: x\nCATEGORY: Good  Match*\nCATEGORY: good match.\nCATEGORY: Poor Match")


# ------------------------------------------------------------------------ hostile answers: linear time
# The hostile inputs of benchmarks/bench_parsers.py (n characters each), per parser.
def _fill(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


_FLAGGED = "REASONING: x\nCATEGORY: Good Match\nFLAGGED ITEMS: "
_COMMON_HOSTILE: dict[str, Callable[[int], str]] = {
    "unbalanced_braces": lambda n: "{" * n,
    "nested_keys": lambda n: _fill('{"a":', n),
    "deep_nesting": lambda n: '{"a":' * (n // 6) + "1" + "}" * (n // 6),
    "quotes": lambda n: _fill('{"', n),
    "mixed_quotes": lambda n: _fill("{\"'\\{'", n),
    "unclosed_fence": lambda n: "```" + "a" * (n - 3),
    "many_fences": lambda n: _fill("```json\n{", n),
    "literals": lambda n: "{" + _fill("true, null, ", n - 1),
    "prose": lambda n: _fill("I don't think {it's} a \"good\" fit for 'them'; ", n),
}
_HOSTILE: dict[str, dict[str, Callable[[int], str]]] = {
    "parse_json_object": _COMMON_HOSTILE,
    # parse_levels is parse_json_object plus a constant-time check: a few inputs suffice
    "levels": {k: _COMMON_HOSTILE[k] for k in ("unbalanced_braces", "unclosed_fence", "prose")},
    "arena_pairwise": {
        **_COMMON_HOSTILE,
        "verdict_blanks": lambda n: '{"accuracy": "tie' + " " * n + 'x", "overall": "Tie"}',
    },
    "arena_absolute": {**_COMMON_HOSTILE, "long_number": lambda n: '{"score": "0.' + "1" * n + '"}'},
    "saer_pointwise": {
        **_COMMON_HOSTILE,
        "flagged_parens": lambda n: _FLAGGED + "(" * n,
        "flagged_item_blanks": lambda n: _FLAGGED + "item" + " " * n + "x",
        "repeated_field": lambda n: (
            "REASONING: x\nCATEGORY: Good" + "*" * (n // 2) + " Match\n" + _fill("CATEGORY: Good Match\n", n // 2)
        ),
    },
    "saer_pairwise": {
        **_COMMON_HOSTILE,
        "repeated_field": lambda n: (
            "REASONING: x\nVERDICT: Set" + "*" * (n // 2) + " 1\n" + _fill("VERDICT: Set 1\n", n // 2)
        ),
    },
    "extract_label": {
        **_COMMON_HOSTILE,
        "label_blanks": lambda n: "4" + " " * n + "x",
        "label_fraction": lambda n: "4" + " " * (n // 2) + "/" + " " * (n // 2) + "x",
    },
}
_PARSERS: dict[str, Callable[[str], object]] = {
    "parse_json_object": parse_json_object,
    "levels": levels_parser(("score",)),
    "arena_pairwise": make_pairwise_parser(("accuracy",)),
    "arena_absolute": parse_absolute,
    "saer_pointwise": parse_pointwise,
    "saer_pairwise": saer_parse_pairwise,
    "extract_label": lambda value: extract_label(value, ("1", "2", "3", "4", "5")),
}


def _timed(parse: Callable[[str], object], text: str, loops: int) -> float:
    # CPU time of this process: other processes on a shared machine (a CI, a book run) do not count
    start = time.process_time()
    for _ in range(loops):
        with contextlib.suppress(ParseError):
            parse(text)
    return time.process_time() - start


def _ratio_80_to_20(parse: Callable[[str], object], make: Callable[[int], str], repeats: int = 3) -> float:
    """time(80 KB) / time(20 KB), best of ``repeats`` interleaved timings each (so that a busy machine slows both).

    Linear is 4, quadratic 16: a factor of four in size leaves a factor of two of noise on either side of the
    threshold (8), where a doubling left only 1.5. Fast calls are looped until one timing of the 20 KB input lasts
    3 ms, so that timer resolution does not matter.
    """
    small, large = make(20_000), make(80_000)
    loops = 1
    while _timed(parse, small, loops) < 0.003 and loops < 4096:
        loops *= 2
    best_small = best_large = math.inf
    for _ in range(repeats):
        best_small = min(best_small, _timed(parse, small, loops))
        best_large = min(best_large, _timed(parse, large, loops))
    return best_large / best_small


@pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")  # ast.literal_eval of "\{"
@pytest.mark.parametrize("parser", list(_PARSERS))
def test_parsing_time_is_linear_in_the_answer_length(parser):
    """Quadrupling a hostile answer (80 KB vs 20 KB) about quadruples the time (a quadratic parser: x16)."""
    parse = _PARSERS[parser]
    ratios = {}
    gc_was_enabled = gc.isenabled()
    gc.disable()  # as timeit does: a collection landing in one timing but not the other is noise
    try:
        for name, make in _HOSTILE[parser].items():
            ratio = _ratio_80_to_20(parse, make)
            if ratio >= 8:  # measure once more before blaming the parser: the machine is shared
                ratio = min(ratio, _ratio_80_to_20(parse, make))
            ratios[name] = round(ratio, 2)
    finally:
        if gc_was_enabled:
            gc.enable()
    assert all(r < 8 for r in ratios.values()), ratios
