"""The GBNF grammars the embedded judge decodes SAER's field answers under: every answer a grammar admits parses, the
well-formed answers the simulated judge writes are admitted, and the free text is capped so the fields fit the budget.

The grammars use a small subset of GBNF (literals, character classes, ``|``, groups with ``*``, ``{m,n}``), which
:func:`as_regex` translates into a Python regular expression for these checks; the real decoding is tested on
llama-server in ``tests/judge/test_judge_embedded.py``-style ``llm`` tests."""

from __future__ import annotations

import random
import re

import pytest

from recjudge_utils.answer_formats import ANSWER_FORMATS, answer_format
from recjudge_utils.answer_formats.parsing import ParseError
from recjudge_utils.answer_formats.saer_fields import (
    CATEGORIES,
    list_label_grammar,
    parse_pairwise,
    parse_pointwise,
    set_verdict_grammar,
)
from recjudge_utils.judge.backends.embedded import EmbeddedBackend
from recjudge_utils.judge.types import make_request
from recjudge_utils.prompts import load_prompt

_TOKEN = re.compile(r'"((?:[^"\\]|\\.)*)"|(\[[^\]]*\])|(\{\d+,\d+\})|([A-Za-z_]\w*)|([|()*])|\s+')


def as_regex(grammar: str) -> re.Pattern[str]:
    """The grammar's language as a regular expression (this subset of GBNF has no recursion)."""
    rules = dict(line.split(" ::= ", 1) for line in grammar.splitlines())

    def expand(body: str) -> str:
        out = []
        for literal, klass, bound, name, op in _TOKEN.findall(body):
            if literal:
                out.append(re.escape(literal.encode().decode("unicode_escape")))
            elif klass or bound or op:
                out.append(klass or bound or op)
            elif name:
                out.append(f"(?:{expand(rules[name])})")
        return "".join(out)

    return re.compile(expand(rules["root"]))


def test_every_field_answer_format_has_a_grammar_and_json_formats_do_not() -> None:
    with_grammar = {name for name, fmt in ANSWER_FORMATS.items() if fmt.grammar is not None}
    assert with_grammar == {"saer_list_label", "saer_pairwise"}


@pytest.mark.parametrize("n_items", [3, 10, 12])
def test_the_label_grammar_admits_what_the_parser_reads_and_nothing_it_refuses(n_items: int) -> None:
    language = as_regex(list_label_grammar(n_items, reasoning_chars=60))
    rng = random.Random(n_items)
    for category in CATEGORIES:
        flagged = ", ".join(str(rng.randint(1, n_items)) for _ in range(3))
        for items in ("None", flagged):
            answer = f"REASONING: the list fits the history.\nCATEGORY: {category}\nFLAGGED ITEMS: {items}"
            assert language.fullmatch(answer), answer
            assert parse_pointwise(answer, n_items=n_items).category == category
    refused = [
        f"REASONING: x\nCATEGORY: Good Match\nFLAGGED ITEMS: {n_items + 1}",  # an item outside the list
        "REASONING: x\nCATEGORY: Good Match\nFLAGGED ITEMS: " + ", ".join(["1"] * (n_items + 1)),  # more than the list
        "REASONING: x\nCATEGORY: Great Match\nFLAGGED ITEMS: None",  # a label outside the set
        "REASONING: x\nCATEGORY: Good Match",  # a missing field
        "REASONING: " + "x" * 61 + "\nCATEGORY: Good Match\nFLAGGED ITEMS: None",  # reasoning over its cap
        "REASONING: caf\u00e9\nCATEGORY: Good Match\nFLAGGED ITEMS: None",  # not printable ASCII
    ]
    for answer in refused:
        assert not language.fullmatch(answer), answer
    with pytest.raises(ParseError):
        parse_pointwise(refused[0], n_items=n_items)


def test_the_verdict_grammar_admits_exactly_the_three_verdicts() -> None:
    language = as_regex(set_verdict_grammar(reasoning_chars=40))
    for verdict in ("Set 1", "Set 2", "Tie"):
        answer = f"REASONING: both sets fit.\nVERDICT: {verdict}"
        assert language.fullmatch(answer)
        assert parse_pairwise(answer).verdict == verdict
    assert not language.fullmatch("REASONING: both sets fit.\nVERDICT: Set 3")
    assert not language.fullmatch("REASONING: \nVERDICT: Tie")  # the reasoning is not empty


def test_the_simulated_judges_answers_are_in_the_grammars_language() -> None:
    rng = random.Random(0)
    label = answer_format("saer_list_label")
    verdict = answer_format("saer_pairwise")
    for _ in range(30):
        written = label.render({"category": rng.choice(CATEGORIES)})
        assert as_regex(list_label_grammar(10)).fullmatch(written), written
        written = verdict.render({"verdict": rng.choice(["first", "second", "tie"])})
        assert as_regex(set_verdict_grammar()).fullmatch(written), written


def test_the_embedded_backend_sends_a_grammar_capped_by_the_budget_and_only_for_field_formats() -> None:
    backend = EmbeddedBackend(offline=True)
    saer = load_prompt("saer/movies/pairwise_v3")
    request = make_request(saer, ({"role": "user", "content": "x"},))
    body = backend.body(request, backend.current_json_mode(), False)
    cap = int(re.search(r"\{0,(\d+)\}", str(body["grammar"])).group(1)) + 1  # type: ignore[union-attr]
    assert cap == request.max_tokens - 25  # one printable character a token at worst, 25 tokens for the fields
    scores = load_prompt("serendipity/cot")
    json_request = make_request(scores, ({"role": "user", "content": "x"},))
    assert "grammar" not in backend.body(json_request, backend.current_json_mode(), False)
    assert "grammar" not in backend.body(request, "none", False)
