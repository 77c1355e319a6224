"""A run killed with SIGKILL resumes without repeating any finished call and without losing a result."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from fake_openai_server import FakeOpenAIServer
from locations import ROOT

REPO = ROOT
N = 40

WORKER = textwrap.dedent(
    """
    import sys
    from recjudge_utils.judge.client import JudgeRequest
    from recjudge_utils.judge.loading import client_for

    base_url, cache_path, run_dir, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    reqs = [
        JudgeRequest(
            messages=({"role": "system", "content": "Rate 1-5 as JSON."}, {"role": "user", "content": f"item {i}"}),
            template_id="resume/test",
            template_version="1",
        )
        for i in range(n)
    ]
    with client_for(model="fake-model", base_url=base_url, cache_path=cache_path, run_dir=run_dir,
                     max_concurrency=2, progress=False) as client:
        results = client.judge_many(reqs)
    print("DONE", sum(r.status == "parsed" for r in results), sum(r.cache_hit for r in results), flush=True)
    """
)


def _cached_rows(path: Path) -> int:
    if not path.exists():
        return 0
    con = sqlite3.connect(path)
    try:
        return int(con.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
    finally:
        con.close()


def test_sigkill_midrun_then_rerun_makes_only_missing_calls(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    cache_path = tmp_path / "cache.sqlite"
    run_dir = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPENAI_API_KEY": "sk-test-resume"}

    def item_of(body):
        return int(body["messages"][-1]["content"].split()[-1])

    def score(body, n):
        return json.dumps({"score": item_of(body) % 5 + 1})

    with FakeOpenAIServer(script=score, latency=0.05) as first_server:
        args = [sys.executable, str(script), first_server.base_url, str(cache_path), str(run_dir), str(N)]
        first_server_port = first_server.port
        proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while len(first_server.requests) < 15 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()
    # stopped: the server accepts nothing more and has joined every handler of the killed worker's requests, so
    # what it counts is final (a request still on its way when the worker died is counted or never arrives)
    first_run = len(first_server.requests)
    cached = _cached_rows(cache_path)
    assert 15 <= first_run < N
    # nothing finished is lost: at most the 2 calls in flight at the kill are missing from the cache
    assert first_run - 2 <= cached <= first_run

    # the rerun: the same endpoint (its URL is part of the cache key) served afresh, so it counts only the rerun
    with FakeOpenAIServer(script=score, latency=0.05, port=first_server_port) as second_server:
        out = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert len(second_server.requests) == N - cached  # no completed call repeated
    asked = [item_of(b) for b in first_server.requests + second_server.requests]
    assert sorted(set(asked)) == list(range(N))
    _, parsed, hits = out.stdout.split()
    assert int(parsed) == N and int(hits) == cached
    assert _cached_rows(cache_path) == N
