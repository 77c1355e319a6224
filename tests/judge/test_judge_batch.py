"""Batch API route against the fake /v1/files and /v1/batches endpoints."""

import json
import math

import pytest
from fake_openai_server import FakeOpenAIServer, Reply

from recjudge_utils.judge.backends.batch import BatchBackend
from recjudge_utils.judge.client import JudgeRequest
from recjudge_utils.judge.loading import client_for
from recjudge_utils.judge.transport import RetryPolicy

SENTINEL = "sk-SENTINEL-batch-55aa"


def req(i, **kw):
    return JudgeRequest(
        messages=({"role": "system", "content": "Rate 1-5 as JSON."}, {"role": "user", "content": f"item {i}"}),
        template_id="batch/test",
        template_version="1",
        json_schema={"type": "object"},
        **kw,
    )


def item_of(body):
    return int(body["messages"][-1]["content"].split()[-1])


def script(body, n):
    i = item_of(body)
    if i == 13:
        return Reply(status=500, error_message="line failed")
    return json.dumps({"score": i % 5 + 1, "item": i})


@pytest.fixture
def client_factory(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    made = []

    def make(srv, run="b", backend="openai", **options):
        c = client_for(
            model="gpt-4o-mini",
            base_url=srv.base_url,
            backend=backend,
            backend_options=options,
            run_dir=tmp_path / run,
            cache_path=tmp_path / "cache.sqlite",
            progress=False,
            retry=RetryPolicy(backoff_base=0.01),
        )
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


def test_batch_route_folds_into_cache_and_bills_half(client_factory, tmp_path):
    with FakeOpenAIServer(script=script, batch_polls=3) as srv:
        client = client_factory(srv)
        client.judge_many([req(0)])  # already cached: must not be in the batch
        batch = client_factory(srv, backend="batch", poll_interval=0.01)
        reqs = [req(i) for i in range(15)] + [req(2)]
        results = batch.judge_many(reqs)
        assert len(results) == 16
        assert [r.value["item"] for r in results if r.status == "parsed"] == [i for i in range(15) if i != 13] + [2]
        bad = results[13]
        assert bad.status == "error" and "line failed" in bad.reason
        assert results[0].cache_hit and results[15].cache_hit and not results[1].cache_hit
        # the batch file held only the 14 missing unique requests, in the Batch API format
        assert len(srv.batch_lines) == 14
        line = srv.batch_lines[0]
        assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
        assert line["body"]["model"] == "gpt-4o-mini" and line["body"]["response_format"]["type"] == "json_schema"
        assert any(p.startswith("POST /v1/files") for p in srv.paths)
        assert sum(p.startswith("GET /v1/batches/") for p in srv.paths) == 3
        # batch answers cost half the chat price
        r = results[1]
        assert math.isclose(r.cost_usd, 0.5 * (r.prompt_tokens * 0.15 + r.completion_tokens * 0.6) / 1e6)
        # everything is in the same cache: the chat route now makes no calls for them
        n_chat = len(srv.requests)
        again = client.judge_many([req(i) for i in range(15) if i != 13])
        assert all(x.cache_hit for x in again) and len(srv.requests) == n_chat
        # the failed line was not cached; a second batch call resubmits only it
        results2 = batch.judge_many(reqs)
        assert len(srv.batch_lines) == 15 and results2[13].status == "error"
        state = json.loads((client.run_dir / "batches.json").read_text())
        assert len(state["batches"]) == 2 and all(b["folded"] for b in state["batches"].values())
        log = [json.loads(x) for x in (client.run_dir / "judgments.jsonl").read_text().splitlines()]
        assert any(x["route"] == "batch" for x in log)
    for p in tmp_path.rglob("*"):
        if p.is_file():
            assert SENTINEL.encode() not in p.read_bytes(), p


def test_batch_resumes_a_submitted_batch_instead_of_paying_twice(client_factory):
    with FakeOpenAIServer(script=script, batch_polls=1000) as srv:
        client = client_factory(srv, backend="batch", poll_interval=0.01, batch_timeout=0.1)
        with pytest.raises(TimeoutError, match="resume"):
            client.judge_many([req(i) for i in range(3)])
        assert len(srv.batches) == 1
        srv.batch_polls = 1  # the batch finishes on the next poll
        client2 = client_factory(srv, backend="batch", poll_interval=0.01)
        results = client2.judge_many([req(i) for i in range(3)])
        assert len(srv.batches) == 1  # no second submission
        assert [r.value["item"] for r in results] == [0, 1, 2]
        assert not any(r.cache_hit for r in results)


def test_batch_retry_failed_with_chat(client_factory):
    with FakeOpenAIServer(script=script) as srv:
        client = client_factory(srv, backend="batch", poll_interval=0.01, retry_failed_with_chat=True)
        srv_script_calls = len(srv.requests)
        results = client.judge_many([req(12), req(13)])
        # item 13 fails everywhere (the script always answers 500): it is an error after chat retries too
        assert results[0].status == "parsed" and results[1].status == "error"
        assert len(srv.requests) > srv_script_calls


def test_batch_refuses_local_model():
    with pytest.raises(ValueError, match="remote"):
        BatchBackend(model="local")
