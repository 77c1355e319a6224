"""One prompt format and one loader: every prompt file, and the format's errors."""

from __future__ import annotations

import re

import pytest

from recjudge_utils.answer_formats import ANSWER_FORMATS
from recjudge_utils.prompts import PromptFileError, list_prompts, load_prompt, parse_prompt

GOOD = """---
id: test/x
version: 1
description: a test prompt
answer_format: json_levels
fields: [score]
---
=== system ===
You judge {{ item }}s.
=== user ===
example {{ candidate }}
=== assistant ===
{"score": 3}
=== user ===
The {{ item }}: {{ candidate }}
"""


def test_every_prompt_file_loads_with_its_id_version_and_answer_format():
    ids = list_prompts()
    assert len(ids) == 21  # 6 serendipity, 2 arena, 12 saer, 1 introduction
    for pid in ids:
        tpl = load_prompt(pid)
        assert tpl.id == pid and tpl.description and tpl.answer_format in ANSWER_FORMATS
        assert re.fullmatch(r"\d+-[0-9a-f]{12}", tpl.key)
        assert tpl.blocks[-1].role == "user"
    assert set(list_prompts("saer/movies")) == {
        f"saer/movies/{m}_{v}" for m in ("pointwise", "pairwise") for v in ("v1", "v2", "v3")
    }


def test_key_carries_a_content_hash_so_an_edit_never_reuses_stale_answers():
    a = parse_prompt(GOOD, "a.md")
    b = parse_prompt(GOOD.replace("You judge", "You rate"), "b.md")
    assert a.version == b.version == "1" and a.key != b.key
    assert a.get("fields") == ["score"]


def test_render_fills_slots_and_puts_examples_before_the_final_turn():
    tpl = parse_prompt(GOOD, "a.md")
    assert tpl.slots == {"item", "candidate"}
    msgs = tpl.render([({"candidate": "ex2"}, '{"score": 5}')], item="movie", candidate="Heat")
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert msgs[0]["content"] == "You judge movies."
    assert msgs[1]["content"] == "example Heat" and msgs[2]["content"] == '{"score": 3}'  # the file's own example
    assert msgs[3]["content"] == "The movie: ex2" and msgs[4]["content"] == '{"score": 5}'  # a data example
    assert msgs[-1]["content"] == "The movie: Heat"
    assert tpl.fixed_turns[0]["role"] == "user"


def test_render_names_a_missing_or_unknown_slot():
    tpl = parse_prompt(GOOD, "a.md")
    with pytest.raises(KeyError, match="candidate"):
        tpl.render(item="movie")
    with pytest.raises(KeyError, match="unknown slots \\['itme'\\]"):
        tpl.render(item="movie", candidate="x", itme="typo")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("no front matter\n=== user ===\nx\n", "starts with a '---'"),
        ("---\nid: a\n", "not closed"),
        (GOOD.replace("version: 1\n", ""), "lacks 'version:'"),
        (GOOD.replace("description: a test prompt\n", ""), "lacks 'description:'"),
        (GOOD.replace("json_levels", "prose"), "answer_format 'prose'"),
        (GOOD.rstrip("\n").rsplit("=== user ===", 1)[0] + "=== assistant ===\nx\n", "last block"),
        (GOOD.replace("=== user ===\nexample", "=== system ===\nexample"), "only the first block"),
        (GOOD.replace("=== system ===\n", "stray text\n=== system ===\n"), "text before"),
        (GOOD.replace("{{ candidate }}\n=== assistant", "{{ candidate \n=== assistant"), "slot syntax"),
    ],
)
def test_format_errors_name_the_file_and_the_problem(text, match):
    with pytest.raises(PromptFileError, match=match):
        parse_prompt(text, "bad.md")


def test_unknown_prompt_id_is_a_clear_error():
    with pytest.raises(FileNotFoundError, match="list_prompts"):
        load_prompt("serendipity/nope")


def test_arena_prompt_files_have_versions_and_six_aspects():
    pairwise = load_prompt("arena/pairwise")
    assert pairwise.version == "3" and pairwise.answer_format == "arena_pairwise"
    assert len(pairwise.get("aspects")) == 6
    assert "Impact on users" in pairwise.get("aspects")
    assert load_prompt("arena/absolute").answer_format == "json_list_score"
    assert {"profile", "history", "list_a", "list_b"} <= pairwise.slots
