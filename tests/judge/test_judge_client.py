"""JudgeClient against a real loopback HTTP server speaking the OpenAI protocol (tests/fake_openai_server.py)."""

import json
import math
import time

import pytest
from fake_openai_server import FakeOpenAIServer, Reply

from recjudge_utils.answer_formats.parsing import ParseError
from recjudge_utils.judge.client import JudgeError, JudgeRequest, JudgeResult
from recjudge_utils.judge.loading import client_for
from recjudge_utils.judge.transport import RetryPolicy

SENTINEL = "sk-SENTINEL-do-not-write-7f3a9c"
SCHEMA = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}


def req(i=0, **kw):
    base = {
        "messages": (
            {"role": "system", "content": "Rate the item from 1 to 5 as JSON."},
            {"role": "user", "content": f"item {i}"},
        ),
        "template_id": "test/rate",
        "template_version": "1",
        "max_tokens": 32,
        "json_schema": SCHEMA,
    }
    base.update(kw)
    return JudgeRequest(**base)


@pytest.fixture
def make_client(tmp_path, monkeypatch):
    monkeypatch.setenv("RECJUDGE_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    clients = []

    def make(srv, **kw):
        kw.setdefault("retry", RetryPolicy(backoff_base=0.01))
        kw.setdefault("progress", False)
        kw.setdefault("run_name", "t")
        kw.setdefault("model", "gpt-4o-mini")
        c = client_for(base_url=srv.base_url, **kw)
        clients.append(c)
        return c

    yield make
    for c in clients:
        c.close()


def echo_script(body, n):
    """Answer with the item number, so that order and identity are checkable."""
    item = int(body["messages"][-1]["content"].split()[-1])
    return json.dumps({"score": item % 5 + 1, "item": item})


def test_parsed_results_in_order_and_cached_rerun_makes_no_calls(make_client, tmp_path):
    with FakeOpenAIServer(script=echo_script) as srv:
        client = make_client(srv)
        reqs = [req(i) for i in range(12)]
        results = client.judge_many(reqs)
        assert [r.value["item"] for r in results] == list(range(12))
        assert all(isinstance(r, JudgeResult) and r.status == "parsed" and not r.cache_hit for r in results)
        assert len(srv.requests) == 12
        again = client.judge_many(reqs)
        assert len(srv.requests) == 12  # zero new calls
        assert all(r.cache_hit and r.cost_usd == 0.0 for r in again)
        assert [r.value for r in again] == [r.value for r in results]
        # a fresh client (new process in real life) on the same cache also makes zero calls
        client2 = make_client(srv, run_name="t2")
        assert [r.value for r in client2.judge_many(reqs)] == [r.value for r in results]
        assert len(srv.requests) == 12
        body = srv.requests[0]
        assert body["model"] == "gpt-4o-mini"
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["schema"] == SCHEMA
        assert body["seed"] == 0 and body["max_tokens"] == 32
        assert "temperature" not in body  # omitted unless the profile's generation settings (or the request) set it


def test_cache_key_covers_answer_changing_fields_but_not_metadata(make_client):
    with FakeOpenAIServer() as srv:
        client = make_client(srv)
        client.judge(req(1))
        client.judge(req(1, metadata={"user": 5}))
        assert len(srv.requests) == 1
        for change in ({"template_version": "2"}, {"temperature": 0.7}, {"max_tokens": 33}, {"seed": 1}):
            client.judge(req(1, **change))
        assert len(srv.requests) == 5
        client.judge(req(1, json_schema=None))
        assert len(srv.requests) == 6
        assert "response_format" not in srv.requests[-1]


def test_identical_requests_in_one_batch_are_asked_once(make_client):
    with FakeOpenAIServer(script=echo_script) as srv:
        client = make_client(srv)
        results = client.judge_many([req(3), req(4), req(3), req(3)])
        assert len(srv.requests) == 2
        assert [r.value["item"] for r in results] == [3, 4, 3, 3]
        assert [r.cache_hit for r in results] == [False, False, True, True]


def test_429_retry_after_is_honoured(make_client):
    script = [Reply(status=429, headers={"Retry-After": "0.4"}, error_message="slow down"), '{"score": 2}']
    with FakeOpenAIServer(script=script) as srv:
        client = make_client(srv, retry=RetryPolicy(backoff_base=0.001))
        t0 = time.perf_counter()
        r = client.judge(req())
        elapsed = time.perf_counter() - t0
        assert r.status == "parsed" and r.value == {"score": 2}
        assert r.attempts == 2 and len(srv.requests) == 2
        assert elapsed >= 0.4  # waited at least Retry-After although the backoff alone is ~1 ms


def test_5xx_are_retried_with_backoff(make_client):
    script = [Reply(status=500), Reply(status=503), Reply(status=502), '{"score": 5}']
    with FakeOpenAIServer(script=script) as srv:
        client = make_client(srv)
        r = client.judge(req())
        assert r.status == "parsed" and r.attempts == 4 and len(srv.requests) == 4


def test_timeouts_are_retried(make_client):
    script = [Reply(delay=1.5, content='{"score": 1}'), '{"score": 4}']
    with FakeOpenAIServer(script=script) as srv:
        client = make_client(srv, timeout=0.4)
        r = client.judge(req())
        assert r.value == {"score": 4} and r.attempts == 2


def test_exhausted_retries_raise_clear_error_and_are_never_cached(make_client):
    state = {"fail": True}

    def script(body, n):
        return Reply(status=500, error_message="boom") if state["fail"] else '{"score": 3}'

    with FakeOpenAIServer(script=script) as srv:
        client = make_client(srv, retry=RetryPolicy(max_retries=2, backoff_base=0.01))
        with pytest.raises(JudgeError) as ei:
            client.judge(req())
        msg = str(ei.value)
        assert srv.base_url in msg and "gpt-4o-mini" in msg and "3 attempts" in msg and "500" in msg
        assert len(srv.requests) == 3
        # judge_many records errors as results (counted, not cached)
        results = client.judge_many([req(1), req(2)])
        assert [r.status for r in results] == ["error", "error"]
        assert srv.base_url in results[0].reason and results[0].value is None
        assert len(client.cache) == 0
        summary = client.usage_summary().set_index("template_id")
        assert summary.loc["test/rate", "errors"] == 3  # the one judge() raised is logged and counted too
        state["fail"] = False
        n = len(srv.requests)
        results = client.judge_many([req(1), req(2)])
        assert [r.status for r in results] == ["parsed", "parsed"]
        assert len(srv.requests) == n + 2  # errors were not cached: asked again


def test_non_retryable_error_is_not_retried_and_key_is_scrubbed(make_client):
    script = [Reply(status=401, error_message=f"Incorrect API key provided: {SENTINEL}.")]
    with FakeOpenAIServer(script=script) as srv:
        client = make_client(srv)
        [r] = client.judge_many([req()])
        assert r.status == "error" and len(srv.requests) == 1
        assert "401" in r.reason and SENTINEL not in r.reason and "[REDACTED]" in r.reason


def test_unparseable_answers_are_counted_with_raw_text_and_reason(make_client):
    script = ["I'd say four.", '{"score": 4', '```json\n{"score": 5}\n```', "{'score': 2}"]
    with FakeOpenAIServer(script=script) as srv:
        client = make_client(srv, max_concurrency=1)
        results = client.judge_many([req(i) for i in range(4)])
        assert [r.status for r in results] == ["unparsed", "unparsed", "parsed", "parsed"]
        assert results[0].raw_text == "I'd say four." and results[0].value is None
        assert "no JSON object" in results[0].reason
        assert "truncated" in results[1].reason
        summary = client.usage_summary().set_index("template_id")
        assert summary.loc["test/rate", "unparsed"] == 2 and summary.loc["test/rate", "parsed"] == 2
        assert summary.loc["TOTAL", "calls"] == 4

        # the cache keeps raw text: a different parser needs no new calls
        def lenient(text):
            if "four" in text:
                return {"score": 4}
            raise ParseError("still not parseable")

        again = client.judge_many([req(0)], parse=lenient)
        assert again[0].status == "parsed" and again[0].value == {"score": 4} and again[0].cache_hit
        assert len(srv.requests) == 4


def test_custom_parser_errors_other_than_parse_error_propagate(make_client):
    with FakeOpenAIServer() as srv:
        client = make_client(srv)

        def buggy(text):
            raise KeyError("bug")

        with pytest.raises(KeyError):
            client.judge_many([req()], parse=buggy)


def test_repair_retry_optional(make_client):
    script = ["score is 4", '{"score": 4}']
    with FakeOpenAIServer(script=script) as srv:
        client = make_client(srv, repair=True)
        [r] = client.judge_many([req()])
        assert r.status == "parsed" and r.value == {"score": 4} and "repaired" in r.reason
        assert len(srv.requests) == 2
        assert srv.requests[1]["messages"][-2] == {"role": "assistant", "content": "score is 4"}


def test_json_schema_rejected_falls_back_to_json_object(make_client):
    with FakeOpenAIServer(reject_json_schema=True) as srv:
        client = make_client(srv, max_concurrency=1)
        results = client.judge_many([req(0), req(1), req(0), req(2)])
        assert [r.status for r in results] == ["parsed"] * 4
        assert [r.cache_hit for r in results] == [False, False, True, False]
        assert len(srv.requests) == 4  # one rejected json_schema attempt + 3 distinct requests
        assert client.json_mode == "json_object"
        assert srv.requests[-1]["response_format"] == {"type": "json_object"}


def test_each_request_is_planned_once_unless_an_adaptation_came_between(make_client, monkeypatch):
    with FakeOpenAIServer(reject_json_schema=True) as srv:
        client = make_client(srv, max_concurrency=1)
        planned: list[str] = []
        plan = type(client.backend).prepare
        monkeypatch.setattr(
            client.backend, "prepare", lambda r: planned.append(r.messages[-1]["content"]) or plan(client.backend, r)
        )
        client.judge_many([req(0), req(1), req(2)])
        # item 0 is planned by the client and again after json_schema is rejected; items 1 and 2 were planned before
        # that adaptation, so each is planned once more before it is sent, and never a third time
        assert sorted(planned) == ["item 0", "item 0", "item 1", "item 1", "item 2", "item 2"]
        planned.clear()
        client.judge_many([req(3), req(4)])  # planned after the adaptation: once each
        assert planned == ["item 3", "item 4"]


def test_concurrency_is_bounded(make_client):
    with FakeOpenAIServer(latency=0.15) as srv:
        client = make_client(srv, max_concurrency=4)
        client.judge_many([req(i) for i in range(12)])
        assert srv.max_in_flight == 4
    with FakeOpenAIServer(latency=0.05) as srv:
        client = make_client(srv, max_concurrency=1, run_name="seq")
        client.judge_many([req(i) for i in range(4)])
        assert srv.max_in_flight == 1


def test_logprobs_expected_label(make_client):
    probs = {"3": 0.2, "4": 0.5, "5": 0.3}
    with FakeOpenAIServer(script=[Reply(content='{"score": 4}', label_probs=probs)]) as srv:
        client = make_client(srv)
        r = client.judge(req(label_options=("1", "2", "3", "4", "5"), label_field="score"))
        assert srv.requests[0]["logprobs"] is True and srv.requests[0]["top_logprobs"] == 20
        assert r.label_probs is not None
        assert math.isclose(sum(r.label_probs.values()), 1.0)
        assert math.isclose(r.label_probs["4"], 0.5, rel_tol=1e-3)
        assert math.isclose(r.expected_label, 3 * 0.2 + 4 * 0.5 + 5 * 0.3, rel_tol=1e-3)
        assert r.argmax_label == "4"
        # no label options: no logprobs requested
        client.judge(req(7))
        assert "logprobs" not in srv.requests[-1]


def test_jsonl_log_records_every_call(make_client):
    with FakeOpenAIServer(script=echo_script) as srv:
        client = make_client(srv, run_name="logtest")
        reqs = [req(i, metadata={"user": i}) for i in range(3)]
        client.judge_many(reqs)
        client.judge_many(reqs)
        lines = [json.loads(x) for x in (client.run_dir / "judgments.jsonl").read_text().splitlines()]
        assert len(lines) == 6
        rec = lines[0]
        for k in (
            "ts",
            "template_id",
            "template_version",
            "model",
            "messages_hash",
            "raw_response",
            "parsed",
            "status",
            "prompt_tokens",
            "completion_tokens",
            "latency_s",
            "cache_hit",
            "cost_usd",
            "metadata",
        ):
            assert k in rec, k
        assert [x["cache_hit"] for x in lines] == [False] * 3 + [True] * 3
        assert {x["metadata"]["user"] for x in lines} == {0, 1, 2}
        msgs = [json.loads(x) for x in (client.run_dir / "messages.jsonl").read_text().splitlines()]
        assert len(msgs) == 3  # each distinct prompt stored once
        assert {m["messages_hash"] for m in msgs} == {x["messages_hash"] for x in lines}


def test_usage_summary_tokens_and_cost(make_client):
    with FakeOpenAIServer() as srv:
        client = make_client(srv)
        results = client.judge_many([req(i) for i in range(3)])
        client.judge_many([req(0)])
        s = client.usage_summary().set_index("template_id")
        row = s.loc["test/rate"]
        assert row["calls"] == 4 and row["cache_hits"] == 1 and row["api_calls"] == 3
        pt = sum(r.prompt_tokens for r in results)
        ct = sum(r.completion_tokens for r in results)
        assert row["prompt_tokens"] == pt and row["completion_tokens"] == ct
        assert math.isclose(row["cost_usd"], (pt * 0.15 + ct * 0.6) / 1e6)
        assert list(s.columns) == [
            "calls",
            "cache_hits",
            "api_calls",
            "parsed",
            "unparsed",
            "budget_spent",
            "errors",
            "prompt_tokens",
            "completion_tokens",
            "reasoning_tokens",
            "cost_usd",
            "seconds",
        ]


def test_pricing_override_and_unknown_model(make_client, tmp_path):
    with FakeOpenAIServer() as srv:
        client = make_client(srv, model="my-model", pricing={"my-model": {"input": 1000.0, "output": 0.0}})
        r = client.judge(req())
        assert math.isclose(r.cost_usd, r.prompt_tokens * 1000.0 / 1e6)
        path = tmp_path / "prices.json"
        path.write_text(json.dumps({"my-model": {"input": 0.0, "output": 1e6}}))
        client2 = make_client(srv, model="my-model", pricing=path, run_name="p2")
        r2 = client2.judge(req(1))
        assert math.isclose(r2.cost_usd, r2.completion_tokens * 1.0)
        client3 = make_client(srv, model="unpriced-model", run_name="p3")
        assert math.isnan(client3.judge(req(2)).cost_usd)  # unknown price is reported, not 0


def test_api_key_never_reaches_any_file(make_client, tmp_path):
    script = [
        '{"score": 1}',
        Reply(status=429, headers={"Retry-After": "0"}),
        "not json",
        Reply(status=400, error_message=f"bad request for key {SENTINEL}"),
    ]
    with FakeOpenAIServer(script=script) as srv:
        client = make_client(srv, repair=True, max_concurrency=1)
        client.judge_many([req(i, label_options=("1", "2"), label_field="score") for i in range(4)])
        client.usage_summary().to_csv(tmp_path / "summary.csv")
        client.close()
        # the key was really used ...
        assert any(h.get("authorization") == f"Bearer {SENTINEL}" for h in srv.headers)
    # ... and appears in no file written
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "judgments.jsonl" for p in written) and any(p.suffix == ".sqlite" for p in written)
    for p in written:
        assert SENTINEL.encode() not in p.read_bytes(), p


def test_missing_key_for_remote_endpoint_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.delenv("MY_JUDGE_KEY", raising=False)
    with pytest.raises(RuntimeError, match="MY_JUDGE_KEY"):
        client_for(model="gpt-4o", base_url="https://example.invalid/v1", api_key_env="MY_JUDGE_KEY", run_dir=tmp_path)


def test_model_name_and_context_manager(make_client):
    with FakeOpenAIServer() as srv:
        client = make_client(srv)
        assert "gpt-4o-mini" in client.model_name and "127.0.0.1" in client.model_name
        with client:
            client.judge(req())
