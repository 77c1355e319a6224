"""The pointwise score protocol (the serendipity judge): rendering, few-shot selection, parsing, LtM chaining.

Judges are the shared scripted judge of conftest.py: a real JudgeClient over a scripted backend."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from conftest import with_label_probs
from domain_words import BOOK_WORDS, MOVIE_WORD, MOVIE_WORDS

from recjudge_utils.answer_formats import answer_format
from recjudge_utils.answer_formats.parsing import ParseError
from recjudge_utils.data.serendipity2018 import PAPER_G_COUNTS
from recjudge_utils.judge.loading import client_for
from recjudge_utils.paper_tables import paper_table
from recjudge_utils.protocols import few_shot
from recjudge_utils.protocols import pointwise_score as sj
from recjudge_utils.protocols.context.serendipity import format_item, item_texts

# ----------------------------------------------------------------------------------------------- fixtures


def make_items(n: int = 40) -> pd.DataFrame:
    genres = [["Drama"], ["Comedy", "Romance"], ["Horror"], [], ["Sci-Fi", "Action"]]
    return pd.DataFrame(
        {
            "item": np.arange(n),
            "title": [f"Movie {i} ({1980 + i})" for i in range(n)],
            "genres": [genres[i % len(genres)] for i in range(n)],
        }
    )


def make_pairs(n_users: int = 12, per_user: int = 4, seed: int = 0, with_aux: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(n_users):
        for j in range(per_user):
            item = int(rng.integers(20, 40))
            rows.append({"user": 100 + u, "item": item, "g": (u + j) % 5 + 1, "history": list(range(j, j + 14))})
    df = pd.DataFrame(rows)
    if with_aux:
        df["relevance"] = (df["g"] % 5) + 1
        df["unexpectedness"] = 6 - df["g"]
    return df


def last_user(req) -> str:
    assert req.messages[-1]["role"] == "user"
    return req.messages[-1]["content"]


def candidate_id(req) -> int:
    return int(re.search(r"Candidate \w+: Movie (\d+) ", last_user(req)).group(1))


# ----------------------------------------------------------------------------------------------- prompt files


def test_every_template_has_versioned_prompt_files():
    keys = set()
    for template in sj.TEMPLATES:
        for st in sj.template_stages(template):
            assert st.prompt.version and st.prompt.blocks and st.prompt.answer_format == "json_levels"
            assert re.fullmatch(r"\d+-[0-9a-f]{12}", st.version)  # front-matter version + content hash
            keys.add(st.version)
    assert len(keys) == 6  # base, ls, cot and the three ltm steps all differ
    assert len(sj.template_stages("ltm")) == 3
    with pytest.raises(ValueError):
        sj.template_stages("zero-shot")


def test_prompt_contents_follow_the_paper_designs():
    def text(stage: sj.Stage) -> str:
        return "\n".join(b.source for b in stage.prompt.blocks)

    base = text(sj.template_stages("base")[0])
    ls = text(sj.template_stages("ls")[0])
    cot = text(sj.template_stages("cot")[0])
    assert "3 = neutral" not in base  # Base: no scale description
    assert "3 = neutral" in ls and "5 = very serendipitous" in ls
    assert all(s in cot for s in ("relevance", "unexpectedness", "5 = very serendipitous", '"score"'))


def test_paper_table1_transcription():
    t = paper_table("serendipity_table1")
    assert len(t) == 8 and set(t["template"]) == set(sj.TEMPLATES)
    gpt = t[t["model"] == "GPT-4o-mini"].set_index("template")
    assert gpt.loc["cot", "mae"] == pytest.approx(0.847)
    assert gpt.loc["base", "accuracy_pct"] == pytest.approx(20.79)
    llama = t[t["model"].str.startswith("Llama")].set_index("template")
    assert llama.loc["ls", "accuracy_pct"] == pytest.approx(13.67)
    assert llama.loc["ltm", "mae"] == pytest.approx(1.356)
    assert sum(PAPER_G_COUNTS.values()) == 2150


# ----------------------------------------------------------------------------------------------- parsing
def parser_for(template: str, stage: int = 0):
    """The strict parser of a template's ``stage``-th call, as the judge builds it from the prompt's answer format."""
    st = sj.template_stages(template)[stage]
    return answer_format(st.prompt.answer_format).parser(st.fields)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"score": 4}', 4),
        ('```json\n{"score": 2}\n```', 2),
        ('Sure. {"score": "5"} Hope this helps.', 5),
        ('{"score": 3.0, "why": "meh"}', 3),
    ],
)
def test_parse_base_and_ls_valid(text, expected):
    for template in ("base", "ls"):
        assert parser_for(template)(text) == {"score": expected}


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "4",
        "The score is 4.",
        '{"score": 0}',
        '{"score": 6}',
        '{"score": 3.5}',
        '{"score": "4/5"}',
        '{"score": true}',
        '{"score": null}',
        '{"rating": 4}',
        '{"score": 4',
    ],
)
def test_parse_base_malformed_raises(text):
    with pytest.raises(ParseError):
        parser_for("base")(text)


def test_parse_cot_requires_all_three_scores():
    parse = parser_for("cot")
    assert parse('{"relevance": 4, "unexpectedness": 2, "score": 3}') == {
        "relevance": 4,
        "unexpectedness": 2,
        "score": 3,
    }
    for bad in ('{"relevance": 4, "score": 3}', '{"relevance": 4, "unexpectedness": 9, "score": 3}', '{"score": 3}'):
        with pytest.raises(ParseError):
            parse(bad)


def test_parse_ltm_steps():
    assert parser_for("ltm", 0)('{"relevance": 5}') == {"relevance": 5}
    assert parser_for("ltm", 1)('{"unexpectedness": 1}') == {"unexpectedness": 1}
    assert parser_for("ltm", 2)('{"score": 2}') == {"score": 2}
    with pytest.raises(ParseError):
        parser_for("ltm", 1)('{"relevance": 5}')


# ----------------------------------------------------------------------------------------------- few-shot selection


def test_few_shot_two_per_level_and_no_leakage():
    pairs, items = make_pairs(), make_items()
    evaluated = [100, 101, 102, 103]
    ex = few_shot.select_few_shot_examples(pairs, items, n_per_level=2, exclude_users=evaluated, seed=0)
    assert len(ex) == 10
    assert ex["g"].value_counts().sort_index().to_dict() == {1: 2, 2: 2, 3: 2, 4: 2, 5: 2}
    assert not set(ex["user"]) & set(evaluated)
    assert (ex["aux_source"] == "g").all() and (ex["relevance"] == ex["g"]).all()
    # levels are interleaved (shuffled), not sorted 1,1,2,2,...
    assert ex["g"].tolist() != sorted(ex["g"].tolist())
    # deterministic under the seed, different under another seed
    again = few_shot.select_few_shot_examples(pairs, items, n_per_level=2, exclude_users=evaluated, seed=0)
    pd.testing.assert_frame_equal(ex, again)
    other = few_shot.select_few_shot_examples(pairs, items, n_per_level=2, exclude_users=evaluated, seed=1)
    assert not ex[["user", "item"]].equals(other[["user", "item"]])
    # the rendered text comes with the examples (usable with another items frame later)
    row = ex.iloc[0]
    assert row["candidate_text"].startswith(f"Movie {row['item']} (")
    assert len(row["history_text"]) == 14


def test_few_shot_uses_data_relevance_and_unexpectedness_when_present():
    pairs = make_pairs(with_aux=True)
    ex = few_shot.select_few_shot_examples(pairs, make_items(), n_per_level=1, seed=0)
    assert (ex["aux_source"] == "data").all()
    merged = ex.merge(pairs, on=["user", "item", "g"], suffixes=("", "_src"))
    assert (merged["relevance"] == merged["relevance_src"]).all()
    assert (merged["unexpectedness"] == 6 - merged["g"]).all()


def test_few_shot_warns_when_a_level_is_short():
    pairs = make_pairs()
    pairs = pairs[pairs["g"] != 5]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ex = few_shot.select_few_shot_examples(pairs, make_items(), n_per_level=2, seed=0)
    assert any("g=5" in str(w.message) for w in caught)
    assert len(ex) == 8


def test_sample_eval_pairs_excludes_example_users():
    pairs = make_pairs()
    ev = few_shot.sample_eval_pairs(pairs, 10, exclude_users=[100, 101], seed=0)
    assert len(ev) == 10 and not set(ev["user"]) & {100, 101}
    assert ev.index.is_monotonic_increasing
    assert len(few_shot.sample_eval_pairs(pairs, None, exclude_users=[100])) == len(pairs) - 4


# ----------------------------------------------------------------------------------------------- rendering


@pytest.mark.parametrize("template", sj.TEMPLATES)
def test_rendering_few_shot_count_order_and_prefix(template, scripted_judge):
    pairs, items = make_pairs(), make_items()
    ex = few_shot.select_few_shot_examples(pairs, items, n_per_level=2, exclude_users=[100], seed=0)
    judge = sj.SerendipityJudge(
        scripted_judge(lambda r: "{}"), template=template, examples=ex, n_history=10, words=MOVIE_WORDS
    )
    for stage in range(len(sj.template_stages(template))):
        prev = {"relevance": 4, "unexpectedness": 2}
        # item 18/19: never an example candidate (20..39) nor in an example history (0..16)
        m1 = judge.messages(list(range(0, 14)), 18, items, stage=stage, previous=prev)
        m2 = judge.messages(list(range(5, 19)), 19, items, stage=stage, previous=prev)
        assert len(m1) == 1 + 2 * 10 + 1
        assert [m["role"] for m in m1] == ["system"] + ["user", "assistant"] * 10 + ["user"]
        assert m1[:-1] == m2[:-1]  # identical prefix: per-pair content only in the last message
        assert "Movie 18 (" in m1[-1]["content"] and "Movie 18 (" not in json.dumps(m1[:-1])
        # last n_history items, oldest first
        assert "1. Movie 4 (" in m1[-1]["content"] and "10. Movie 13 (" in m1[-1]["content"]
        assert "Movie 3 (" not in m1[-1]["content"]
        # the few-shot answers follow the examples' order and labels
        fields = sj.template_stages(template)[stage].fields
        answers = [json.loads(m["content"]) for m in m1[1:-1] if m["role"] == "assistant"]
        assert list(answers[0]) == list(fields)
        if "score" in fields:
            assert [a["score"] for a in answers] == ex["g"].tolist()
        shown = [m["content"] for m in m1[1:-1] if m["role"] == "user"]
        assert all(f"Candidate movie: {c}" in s for c, s in zip(ex["candidate_text"], shown, strict=True))


def test_ltm_later_steps_show_earlier_scores(scripted_judge):
    items = make_items()
    ex = few_shot.select_few_shot_examples(make_pairs(with_aux=True), items, n_per_level=1, seed=0)
    judge = sj.SerendipityJudge(scripted_judge(lambda r: "{}"), template="ltm", examples=ex)
    m = judge.messages([1, 2], 30, items, stage=2, previous={"relevance": 4, "unexpectedness": 2})
    assert "Step 1 relevance score: 4" in m[-1]["content"]
    assert "Step 2 unexpectedness score: 2" in m[-1]["content"]
    first_example = ex.iloc[0]
    assert f"Step 1 relevance score: {first_example['relevance']}" in m[1]["content"]
    m0 = judge.messages([1, 2], 30, items, stage=0)
    assert "Step 1" not in m0[-1]["content"]


def test_domain_words_and_zero_shot(scripted_judge):
    items = make_items().assign(title=lambda f: f["title"].str.replace("Movie", "Novel"))
    judge = sj.SerendipityJudge(scripted_judge(lambda r: "{}"), template="ls", examples=None, words=BOOK_WORDS)
    m = judge.messages([1], 2, items)
    assert len(m) == 2 and "book recommendation" in m[0]["content"] and "Candidate book:" in m[1]["content"]
    assert not MOVIE_WORD.search(json.dumps(m))


def test_format_item_handles_missing_genres():
    assert format_item("A", ["X", "Y"]) == "A (categories: X, Y)"
    assert format_item("A", []) == "A (categories: unknown)"
    assert format_item("A", float("nan")) == "A (categories: unknown)"
    assert format_item("A", "Drama|Comedy") == "A (categories: Drama|Comedy)"


# ----------------------------------------------------------------------------------------------- scoring


def test_score_counts_unparsed_and_errors_never_imputes(scripted_judge):
    pairs, items = make_pairs(n_users=3), make_items()
    answers = {}

    def answer(req):
        cid = candidate_id(req)
        answers[cid] = answers.get(cid, 0) + 1
        return '{"score": 4}' if cid % 3 == 0 else ("no idea" if cid % 3 == 1 else '{"score": 2}')

    def scripted(req):
        if candidate_id(req) == 35:
            return RuntimeError("HTTP 500")
        return with_label_probs(answer(req), {"3": 0.75, "4": 0.25})  # expected score 3.25

    client = scripted_judge(scripted)
    ex = few_shot.select_few_shot_examples(make_pairs(seed=1), items, exclude_users=pairs["user"], seed=0)
    out = sj.SerendipityJudge(client, template="base", examples=ex).score(pairs, items)
    assert list(out[["user", "item"]].itertuples(index=False, name=None)) == list(
        pairs[["user", "item"]].itertuples(index=False, name=None)
    )
    cid = out["item"].to_numpy()
    expect_status = np.where(cid == 35, "error", np.where(cid % 3 == 1, "unparsed", "parsed"))
    assert out["status"].tolist() == expect_status.tolist()
    assert out.loc[out["status"] != "parsed", "score"].isna().all()
    assert out.loc[out["status"] == "parsed", "score"].isin([2.0, 4.0]).all()
    assert out.loc[out["status"] == "unparsed", "reason"].str.contains("no JSON object").all()
    assert out.loc[out["status"] == "error", "reason"].eq("HTTP 500").all()
    assert out["relevance"].isna().all()
    assert (out.loc[out["status"] != "error", "expected_score"] == 3.25).all()
    assert (out["n_calls"] == 1).all() and (out.loc[out["status"] != "error", "prompt_tokens"] == 7).all()
    assert (out.loc[out["status"] == "error", "prompt_tokens"] == 0).all()  # a failed call used no tokens
    (desc, reqs), *_ = client.calls
    assert desc == "serendipity/base"
    assert len(client.calls) == 1 and len(reqs) == len(pairs)
    r = reqs[0]
    assert r.template_id == "serendipity/base" and r.template_version == sj.template_stages("base")[0].version
    assert r.label_options == ("1", "2", "3", "4", "5") and r.label_field == "score"
    assert r.temperature is None and r.json_schema["required"] == ["score"]  # decoding is the judge profile's
    assert r.metadata["user"] == int(pairs["user"].iloc[0]) and r.metadata["template"] == "base"


def test_score_cot_fills_relevance_and_unexpectedness(scripted_judge):
    pairs, items = make_pairs(n_users=2), make_items()
    client = scripted_judge(lambda r: '{"relevance": 5, "unexpectedness": 1, "score": 2}')
    out = sj.SerendipityJudge(client, template="cot").score(pairs, items)
    assert (out["status"] == "parsed").all()
    assert (out[["relevance", "unexpectedness", "score"]].to_numpy() == [5, 1, 2]).all()
    assert out["expected_score"].isna().all()  # the fake backend gives no logprobs
    assert client.calls[0][1][0].json_schema["required"] == ["relevance", "unexpectedness", "score"]


def test_ltm_chains_three_calls_stage_by_stage(scripted_judge):
    pairs, items = make_pairs(n_users=3), make_items()
    bad_relevance = int(pairs["item"].iloc[0])

    def answer(req):
        cid = candidate_id(req)
        stage = req.template_id
        if stage == "serendipity/ltm/relevance":
            return "garbage" if cid == bad_relevance else json.dumps({"relevance": cid % 5 + 1})
        if stage == "serendipity/ltm/unexpectedness":
            rel = int(re.search(r"Step 1 relevance score: (\d)", last_user(req)).group(1))
            assert rel == cid % 5 + 1  # the step-1 answer was fed into step 2
            return json.dumps({"unexpectedness": 6 - rel})
        assert stage == "serendipity/ltm/serendipity"
        rel = int(re.search(r"Step 1 relevance score: (\d)", last_user(req)).group(1))
        une = int(re.search(r"Step 2 unexpectedness score: (\d)", last_user(req)).group(1))
        return json.dumps({"score": min(5, max(1, rel + une - 3))})

    client = scripted_judge(lambda r: with_label_probs(answer(r), {"2": 0.5, "3": 0.5}))  # expected 2.5
    out = sj.SerendipityJudge(client, template="ltm").score(pairs, items)
    assert [d for d, _ in client.calls] == [
        "serendipity/ltm/relevance",
        "serendipity/ltm/unexpectedness",
        "serendipity/ltm/serendipity",
    ]
    n_bad = int((pairs["item"] == bad_relevance).sum())
    assert [len(reqs) for _, reqs in client.calls] == [len(pairs), len(pairs) - n_bad, len(pairs) - n_bad]
    # only the last step asks for label logprobs
    assert [reqs[0].label_field for _, reqs in client.calls] == [None, None, "score"]
    bad = out["item"] == bad_relevance
    assert (out.loc[bad, "status"] == "unparsed").all() and (out.loc[bad, "n_calls"] == 1).all()
    assert out.loc[bad, "reason"].str.startswith("ltm/relevance:").all()
    assert out.loc[bad, ["score", "expected_score", "relevance"]].isna().all().all()
    good = out[~bad]
    assert (good["n_calls"] == 3).all() and (good["status"] == "parsed").all()
    rel = good["item"] % 5 + 1
    assert (good["relevance"] == rel).all() and (good["unexpectedness"] == 6 - rel).all()
    assert (good["score"] == 3).all() and (good["expected_score"] == 2.5).all()


def test_examples_without_required_columns_are_rejected(scripted_judge):
    with pytest.raises(ValueError):
        sj.SerendipityJudge(scripted_judge(lambda r: "{}"), template="cot", examples=pd.DataFrame({"g": [1]}))
    with pytest.raises(ValueError):
        sj.SerendipityJudge(scripted_judge(lambda r: "{}"), template="cot", n_history=0)


def test_missing_item_is_a_clear_error(scripted_judge):
    with pytest.raises(KeyError, match="999"):
        sj.SerendipityJudge(scripted_judge(lambda r: "{}")).messages([999], 1, make_items())


# ----------------------------------------------------------------------------------------------- hand-over


def test_selected_template_round_trip(tmp_path):
    path = tmp_path / "sel.json"
    assert sj.load_selected_template(path)["template"] == "cot"
    with pytest.raises(FileNotFoundError):
        sj.load_selected_template(path, default=None)
    sj.save_selected_template("ls", path, mae=1.23, judge_model="SmolLM2-135M")
    rec = sj.load_selected_template(path)
    assert rec["template"] == "ls" and rec["mae"] == 1.23 and rec["judge_model"] == "SmolLM2-135M"
    assert rec["template_versions"] == {"ls": sj.template_stages("ls")[0].version}
    with pytest.raises(ValueError):
        sj.save_selected_template("nope", path)


def test_year_column_is_shown_once():
    items = pd.DataFrame(
        {
            "item": [1, 2, 3],
            "title": ["Toy Story", "Heat (1995)", "Nameless"],
            "genres": [["Animation"], ["Crime"], ["Drama"]],
            "year": [1995, 1995, np.nan],
        }
    )
    texts = item_texts(items)
    assert texts == {
        1: "Toy Story (1995) (categories: Animation)",
        2: "Heat (1995) (categories: Crime)",
        3: "Nameless (categories: Drama)",
    }


def test_ltm_through_the_real_client_and_fake_server(tmp_path, monkeypatch):
    """End to end over HTTP: JudgeClient + fake chat-completions server; logprob expected score; cache reuse."""
    from fake_openai_server import FakeOpenAIServer, Reply

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    def script(body, n):
        rf = body.get("response_format") or {}
        schema = (rf.get("json_schema") or {}).get("schema") or rf.get("schema") or {}
        field = schema["required"][-1]
        if field == "score":
            return Reply(content='{"score": 4}', label_probs={"4": 0.5, "2": 0.5})
        return json.dumps({field: 5})

    pairs, items = make_pairs(n_users=2, per_user=2), make_items()
    with FakeOpenAIServer(script=script) as srv:
        kw = {"run_dir": tmp_path / "run", "cache_path": tmp_path / "cache.sqlite", "progress": False}
        with client_for(model="fake-model", base_url=srv.base_url, **kw) as client:
            out = sj.SerendipityJudge(client, template="ltm").score(pairs, items)
            usage = client.usage_summary()
        assert len(srv.requests) == 3 * len(pairs)
        stage3 = [r for r in srv.requests if "Step 2 unexpectedness score: 5" in r["messages"][-1]["content"]]
        assert len(stage3) == len(pairs)
        with client_for(model="fake-model", base_url=srv.base_url, **kw) as client:
            again = sj.SerendipityJudge(client, template="ltm").score(pairs, items)
        assert len(srv.requests) == 3 * len(pairs)  # all from the cache
    assert (out["status"] == "parsed").all() and (out["score"] == 4).all()
    assert (out["relevance"] == 5).all() and (out["unexpectedness"] == 5).all()
    assert out["expected_score"].to_numpy() == pytest.approx([3.0] * len(pairs))
    assert set(usage["template_id"]) >= {"serendipity/ltm/relevance", "serendipity/ltm/serendipity"}
    assert (again["cache_hits"] == 3).all()
    pd.testing.assert_series_equal(out["score"], again["score"])
