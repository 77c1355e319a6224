"""SAER: context building, prompt files, strict parsers, swap adjudication, adversarial pairs, the run.

Judges are the shared scripted judge of conftest.py: a real JudgeClient over a scripted backend."""

from __future__ import annotations

import gzip
import json
import re

import numpy as np
import pandas as pd
import pytest
from claims import about
from domain_words import MOVIE_WORDS, PRODUCT_WORDS

from recjudge_utils.answer_formats.parsing import ParseError
from recjudge_utils.answer_formats.saer_fields import CATEGORIES, parse_pairwise, parse_pointwise
from recjudge_utils.experiments.saer import ALGORITHMS
from recjudge_utils.metrics.pairwise import conservative
from recjudge_utils.paper_tables import paper_table as _paper_table
from recjudge_utils.prompts import PromptFileError, parse_prompt
from recjudge_utils.protocols.adversarial import adversarial_outcome, adversarial_pairs
from recjudge_utils.protocols.context.saer import DOMAINS, Catalogue, build_context, render_list, saer_variant
from recjudge_utils.protocols.saer import (
    VERSIONS,
    few_shot_answers,
    history_only,
    load_template,
    pairwise_request,
    pointwise_request,
    set_position,
)


def paper_table(name: str) -> pd.DataFrame:
    return _paper_table(f"saer_{name}")


def adjudicate_swap(first, second):
    return conservative([first], [second])[0]


DAY = 86400


# -- context -------------------------------------------------------------------------------------
def _amazon_fixture(folder):
    """reviews_Beauty_5.json.gz (strict JSON lines) + meta_Beauty.json.gz (Python-literal lines), 2014 format."""
    folder.mkdir(parents=True)
    t_end = 1_400_000_000
    reviews = [
        ("A1", "B001", 5.0, t_end - 200 * DAY),  # outside the 180-day window
        ("A1", "B002", 4.0, t_end - 100 * DAY),
        ("A1", "B003", 2.0, t_end - 50 * DAY),  # disliked
        ("A1", "B004", 5.0, t_end - 10 * DAY),
        ("A1", "B005", 3.0, t_end),
        ("A2", "B002", 5.0, t_end - 5 * DAY),
        ("A2", "B004", 4.0, t_end - 3 * DAY),
    ]
    with gzip.open(folder / "reviews_Beauty_5.json.gz", "wt", encoding="utf-8") as fh:
        for rid, asin, overall, ts in reviews:
            rec = {
                "reviewerID": rid,
                "asin": asin,
                "reviewerName": "x",
                "helpful": [0, 0],
                "reviewText": "fine",
                "overall": overall,
                "summary": "ok",
                "unixReviewTime": ts,
                "reviewTime": "01 1, 2014",
            }
            fh.write(json.dumps(rec) + "\n")
    meta = [
        {"asin": "B001", "title": "Old Lipstick", "categories": [["Beauty", "Makeup", "Lips"]], "brand": "NYX"},
        {"asin": "B002", "title": "Ceramic Curling Iron", "categories": [["Beauty", "Hair Care", "Styling Tools"]]},
        {"asin": "B003", "title": "Charcoal Mask", "categories": [["Beauty", "Skin Care", "Masks"]], "brand": "Acme"},
        {"asin": "B004", "title": "Heat Protectant Spray", "categories": [["Beauty", "Hair Care", "Styling Products"]]},
        {"asin": "B005", "categories": [["Beauty", "Hair Care", "Shampoos"]], "salesRank": {"Beauty": 5}},
    ]
    with gzip.open(folder / "meta_Beauty.json.gz", "wt", encoding="utf-8") as fh:
        for rec in meta:
            fh.write(repr(rec) + "\n")  # the 2014 metadata is repr()'d Python dicts, single-quoted
    return t_end


def test_context_from_amazon_files_in_published_format(tmp_path):
    data = pytest.importorskip("recjudge_utils.data")
    t_end = _amazon_fixture(tmp_path / "amazon-beauty")
    ds = data.load_dataset("amazon-beauty", data_dir=tmp_path, fetch=False, verbose=False)
    assert saer_variant(ds.domain) == "ecommerce"
    cat = Catalogue.from_items(ds.items)
    code = dict(zip(ds.extra["item_ids"]["original_item_id"], ds.extra["item_ids"]["item"], strict=True))
    user = int(ds.extra["user_ids"].set_index("original_user_id").loc["A1", "user"])
    ctx = build_context(ds.interactions, cat, user, PRODUCT_WORDS, window_days=180, max_history=10)
    assert ctx.window_end == t_end
    assert [i for i, _, _ in ctx.history] == [code["B005"], code["B004"], code["B002"]]  # newest first, >= 3 stars
    assert [i for i, _, _ in ctx.disliked] == [code["B003"]]
    assert (ctx.n_liked, ctx.n_disliked) == (3, 1)  # B001 is older than 180 days
    text = ctx.render(cat)
    assert "Old Lipstick" not in text
    line = about(text.splitlines(), "Heat Protectant Spray")  # date | title | category | rating
    assert [field.strip() for field in line.split("|")][-2:] == ["Styling Products", "5 stars"]
    assert "untitled product B005" in text  # no title in the metadata: named, not invented
    disliked = about(text.splitlines(), "disliked")
    assert "1-2 stars" in disliked and disliked.split(": ", 1)[1].startswith("Charcoal Mask")
    assert "Recent searches: not available in this data" in text
    assert "Styling Tools" in text.split("Recently browsed categories")[1]
    assert "Recent searches" not in ctx.render(cat, history_only=True)


def _toy_items(n_items=40):
    genres = ["Action", "Comedy", "Drama", "Horror"]
    return pd.DataFrame(
        {
            "item": np.arange(1, n_items + 1),
            "title": [f"Movie {i} ({1980 + i % 20})" for i in range(1, n_items + 1)],
            "genres": [[genres[i % 4]] + ([genres[(i + 1) % 4]] if i % 3 == 0 else []) for i in range(1, n_items + 1)],
        }
    )


def test_context_movies_truncates_history_and_orders_newest_first():
    items = _toy_items()
    cat = Catalogue.from_items(items)
    inter = pd.DataFrame(
        {
            "user": [1] * 15,
            "item": np.arange(1, 16),
            "rating": [5.0, 1.0, 4.0] * 5,
            "timestamp": 1_000_000 + np.arange(15) * DAY,
        }
    )
    ctx = build_context(inter, cat, 1, MOVIE_WORDS, max_history=4)
    assert [i for i, _, _ in ctx.history] == [15, 13, 12, 10]
    assert [i for i, _, _ in ctx.disliked] == [14, 11, 8, 5]  # the cut applies to each list
    assert (ctx.n_liked, ctx.n_disliked) == (10, 5)  # counted before the cut
    text = ctx.render(cat)
    header = text.splitlines()[0]  # the movie wording, the liked ratings, the window and the order
    assert header.startswith("Movies") and "3-5 stars" in header and "6 months" in header and "newest" in header
    disliked = about(text.splitlines(), "disliked")
    assert "1-2 stars" in disliked and re.findall(r"Movie (\d+)", disliked) == ["14", "11", "8", "5"]
    # the paper's context (no cut): every item of the window, every category of the 5 latest
    whole = build_context(inter, cat, 1, MOVIE_WORDS, max_history=None)
    assert [i for i, _, _ in whole.history] == [15, 13, 12, 10, 9, 7, 6, 4, 3, 1]
    assert [i for i, _, _ in whole.disliked] == [14, 11, 8, 5, 2]
    latest_genres = {g for i in range(11, 16) for g in cat.categories[i]}
    assert set(whole.recent_categories) == latest_genres
    with pytest.raises(ValueError, match="no interactions"):
        build_context(inter, cat, 99, MOVIE_WORDS)
    with pytest.raises(ValueError, match="max_history"):
        build_context(inter, cat, 1, MOVIE_WORDS, max_history=0)


# -- prompt files --------------------------------------------------------------------------------
@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("mode", ["pointwise", "pairwise"])
@pytest.mark.parametrize("version", VERSIONS)
def test_every_prompt_file_loads_and_its_examples_parse(domain, mode, version):
    tpl = load_template(domain, mode, version)
    assert tpl.id == f"saer/{domain}/{mode}_{version}"
    assert tpl.version and tpl.blocks[0].role == "system"
    assert history_only(tpl) == (version == "v1")
    answers = few_shot_answers(tpl, MOVIE_WORDS if domain == "movies" else PRODUCT_WORDS)
    if version == "v3":
        assert len(answers) == (5 if mode == "pointwise" else 3)
    else:
        assert len(answers) == 0
    parse = parse_pointwise if mode == "pointwise" else parse_pairwise
    for answer in answers:  # the few-shot answers must be in the format the strict parser accepts
        parse(answer)
    if mode == "pointwise" and version == "v3":
        cats = [parse_pointwise(a).category for a in answers]
        assert set(cats) == set(CATEGORIES)
    if mode == "pairwise" and version == "v3":
        assert [parse_pairwise(a).verdict for a in answers] == ["Set 1", "Set 2", "Tie"]  # explicit tie example


def test_prompt_rendering_puts_customer_content_last():
    items = _toy_items()
    cat = Catalogue.from_items(items)
    inter = pd.DataFrame({"user": [7, 7, 7], "item": [1, 2, 3], "rating": [5.0, 4.0, 1.0], "timestamp": [1, 2, 3]})
    ctx = build_context(inter, cat, 7, MOVIE_WORDS)
    tpl = load_template("movies", "pointwise", "v3")
    req = pointwise_request(tpl, ctx, list(range(10, 20)), cat, {"user": 7})
    other = pointwise_request(tpl, ctx, list(range(20, 30)), cat, {"user": 7})
    assert req.messages[:-1] == other.messages[:-1]  # identical prefix for every customer and list
    assert [m["content"] for m in req.messages[:-1]] == [b.source for b in tpl.blocks[:-1]]  # the file's fixed turns
    last = req.messages[-1]
    assert last["role"] == "user"
    assert "RECOMMENDATIONS (10 items)" in last["content"]
    assert "10. Movie 19" in last["content"] and "Movie 2 (1982)" in last["content"]
    assert not re.search(r"\{\{|<<[A-Z_]+>>", last["content"])
    assert req.template_id == "saer/movies/pointwise_v3" and req.metadata == {"user": 7}

    p1 = load_template("movies", "pairwise", "v1")
    req2 = pairwise_request(p1, ctx, [10, 11], [12, 13], cat, {})
    body = req2.messages[-1]["content"]
    assert body.index("SET 1") < body.index("Movie 10") < body.index("SET 2") < body.index("Movie 12")
    assert "disliked" not in body and "Recent searches" not in body  # generic v1: history only


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("mode", ["pointwise", "pairwise"])
@pytest.mark.parametrize("version", VERSIONS)
def test_prompt_order_is_the_papers(domain, mode, version):
    """SAER Sec. 3.2: few-shot examples -> customer context -> list(s) -> evaluation guidelines -> output."""
    items = _toy_items()
    cat = Catalogue.from_items(items)
    inter = pd.DataFrame({"user": [7, 7, 7], "item": [1, 2, 3], "rating": [5.0, 4.0, 1.0], "timestamp": [1, 2, 3]})
    ctx = build_context(inter, cat, 7, MOVIE_WORDS if domain == "movies" else PRODUCT_WORDS)
    tpl = load_template(domain, mode, version)
    assert int(tpl.version) >= 2  # version 2: guidelines and answer format moved after the lists
    if mode == "pointwise":
        req = pointwise_request(tpl, ctx, list(range(10, 20)), cat, {})
        lists = ["RECOMMENDATIONS (10 items)"]
    else:
        req = pairwise_request(tpl, ctx, list(range(10, 20)), list(range(20, 30)), cat, {})
        lists = ["SET 1\n1. Movie 10", "SET 2\n1. Movie 20"]
    system, *examples, last = req.messages
    # the system message is one role statement: no guidelines, rubric or answer format before the examples
    assert system["role"] == "system" and "\n" not in system["content"].strip()
    assert "Answer in exactly this format" not in system["content"]
    assert len(examples) == 2 * len(few_shot_answers(tpl, ctx.words))  # the examples come before the customer's turn
    body = last["content"]
    guide = "Evaluation guidelines:" if version == "v3" else ("Criterion 1" if version == "v2" else None)
    marks = ["CUSTOMER", *lists, *([guide] if guide else []), "Answer in exactly this format:"]
    positions = [body.index(m) for m in marks]
    assert positions == sorted(positions), dict(zip(marks, positions, strict=True))


def test_template_file_errors():
    with pytest.raises(PromptFileError, match="lacks"):
        parse_prompt("---\nversion: 1\n---\n=== user ===\nx", "t")
    head = "---\nid: t\nversion: 1\ndescription: d\nanswer_format: saer_list_label\nmode: pointwise\n---\n"
    with pytest.raises(PromptFileError, match="last block must be"):
        parse_prompt(head + "=== system ===\nhi\n", "t")
    tpl = parse_prompt(head + "=== system ===\nhi\n=== user ===\n{{ context }} {{ list }}", "t")
    with pytest.raises(KeyError, match="slot missing"):
        tpl.render(context="c")
    with pytest.raises(KeyError, match="unknown slots"):
        tpl.render(context="c", list="l", other="x")
    with pytest.raises(ValueError):
        load_template("movies", "pointwise", "v9")


def test_render_list_numbers_from_one():
    cat = Catalogue.from_items(_toy_items())
    assert render_list([3, 4], cat).splitlines() == ["1. Movie 3 (1983) | Horror, Action", "2. Movie 4 (1984) | Action"]


# -- parsers -------------------------------------------------------------------------------------
GOOD = "REASONING: Fits the history.\nCATEGORY: Good Match\nFLAGGED ITEMS: None"


@pytest.mark.parametrize(
    ("text", "category", "flagged"),
    [
        (GOOD, "Good Match", ()),
        ("REASONING: meh\nCATEGORY: partial match.\nFLAGGED ITEMS: 3, 7", "Partial Match", (3, 7)),
        ("**REASONING:** bad\n**CATEGORY:** **Poor Match**\n**FLAGGED ITEMS:** #2, #10", "Poor Match", (2, 10)),
        ("Reasoning: x\nCategory: Poor Match (severe issues)\nFlagged items: 4 (Toy Story); 5", "Poor Match", (4, 5)),
        ("REASONING: a\nlong reason\nCATEGORY: Good Match\nFLAGGED ITEMS: item 1 and item 2", "Good Match", (1, 2)),
        # a small model that goes on to invent another example: the second block is ignored
        (GOOD + "\nREASONING: next\nCATEGORY: Poor Match\nFLAGGED ITEMS: 1", "Good Match", ()),
    ],
)
def test_pointwise_parser_accepts(text, category, flagged):
    verdict = parse_pointwise(text, n_items=10)
    assert verdict.category == category
    assert verdict.flagged == flagged
    assert verdict.reasoning


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("The list is good.", "no REASONING"),
        ("REASONING: x\nFLAGGED ITEMS: None", "missing CATEGORY"),
        ("REASONING: x\nCATEGORY: Good Match", "missing FLAGGED ITEMS"),
        ("CATEGORY: Good Match\nFLAGGED ITEMS: None", "missing REASONING"),
        ("REASONING:\nCATEGORY: Good Match\nFLAGGED ITEMS: None", "empty REASONING"),
        ("REASONING: x\nCATEGORY: Good\nFLAGGED ITEMS: None", "not one of"),
        ("REASONING: x\nCATEGORY: Excellent Match\nFLAGGED ITEMS: None", "not one of"),
        ("REASONING: x\nCATEGORY: Good Match or Poor Match\nFLAGGED ITEMS: None", "ambiguous"),
        ("REASONING: x\nCATEGORY: Good Match\nCATEGORY: Poor Match\nFLAGGED ITEMS: None", "twice"),
        ("REASONING: x\nCATEGORY: Good Match\nFLAGGED ITEMS: 11", "outside 1..10"),
        ("REASONING: x\nCATEGORY: Good Match\nFLAGGED ITEMS: 0", "outside"),
        ("REASONING: x\nCATEGORY: Good Match\nFLAGGED ITEMS: Toy Story", "not an item number"),
        ("REASONING: x\nCATEGORY: Good Match\nFLAGGED ITEMS:", "empty"),
    ],
)
def test_pointwise_parser_rejects(text, reason):
    with pytest.raises(ParseError, match=reason):
        parse_pointwise(text, n_items=10)


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("REASONING: a\nVERDICT: Set 1", "Set 1"),
        ("REASONING: a\nVERDICT: **Set 2**.", "Set 2"),
        ("REASONING: a\nVERDICT: tie", "Tie"),
        ("REASONING: a\nVerdict: Set 2 is better", "Set 2"),
        ("REASONING: a\nVERDICT: Set 1\nREASONING: b\nVERDICT: Set 2", "Set 1"),
    ],
)
def test_pairwise_parser_accepts(text, verdict):
    assert parse_pairwise(text).verdict == verdict


@pytest.mark.parametrize(
    "text",
    [
        "Set 1 is better.",
        "REASONING: a\nVERDICT: Set 3",
        "REASONING: a\nVERDICT: Both",
        "REASONING: a\nVERDICT: Set 1 or Set 2",
        "REASONING: a\nVERDICT: A",
        "VERDICT: Set 1",
        "REASONING: a\nVERDICT: Set 1\nVERDICT: Set 2",
    ],
)
def test_pairwise_parser_rejects(text):
    with pytest.raises(ParseError):
        parse_pairwise(text)


# -- swap and adversarial ------------------------------------------------------------------------
def test_swap_mapping_and_adjudication():
    a, b = ALGORITHMS
    # order 1: a shown as Set 1; order 2: b shown as Set 1
    assert set_position("Set 1") == "first" and set_position("Set 2") == "second" and set_position("Tie") == "tie"
    # a judge that always answers "Set 1" picks a in one order and b in the other: a tie
    assert adjudicate_swap(a, b) == "Tie"
    # a content-consistent judge: Set 1 then Set 2 maps to a both times
    assert adjudicate_swap(a, a) == a
    assert adjudicate_swap("Tie", "Tie") == "Tie"
    assert adjudicate_swap(a, "Tie") == "Tie"
    assert adjudicate_swap(a, None) is None


def test_adversarial_pairs_never_same_customer_balanced_and_seeded():
    users = list(range(100, 140))
    pairs = adversarial_pairs(users, ALGORITHMS, seed=3)
    assert (pairs["user"] != pairs["decoy_user"]).all()
    assert set(pairs["decoy_user"]) <= set(users)
    assert pairs["algorithm"].value_counts().to_dict() == {ALGORITHMS[0]: 20, ALGORITHMS[1]: 20}
    assert set(pairs["genuine_position"]) == {1, 2}
    pd.testing.assert_frame_equal(pairs, adversarial_pairs(users, ALGORITHMS, seed=3))
    assert not pairs.equals(adversarial_pairs(users, ALGORITHMS, seed=4))
    two = adversarial_pairs([1, 2], ALGORITHMS, seed=0)
    assert two["decoy_user"].tolist() == [2, 1]
    with pytest.raises(ValueError):
        adversarial_pairs([1], ALGORITHMS)
    with pytest.raises(ValueError):
        adversarial_pairs([1, 1], ALGORITHMS)
    assert adversarial_outcome("Set 2", 2) == "correct"
    assert adversarial_outcome("Set 1", 2) == "wrong"
    assert adversarial_outcome("Tie", 1) == "tie"
    assert adversarial_outcome(None, 1) is None
