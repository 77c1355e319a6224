"""The embedded judge on llama.cpp's llama-server.

Marked llm: the real server and model, end to end (needs the cached build and the GGUF: make install). Unmarked:
the launcher's command line, identity and failure report, with a stand-in ``llama-server`` (a small Python script
given as $RECJUDGE_LLAMA_SERVER) and a stand-in GGUF, so they run anywhere in a second.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from locations import ROOT

from recjudge_utils.judge import embedded_server, llama_build
from recjudge_utils.judge.client import JudgeRequest
from recjudge_utils.judge.embedded_server import get_local_server
from recjudge_utils.judge.loading import client_for, load_profile
from recjudge_utils.judge.planning import ChatTokenizer
from recjudge_utils.judge.profile import ProfileError

REPO = ROOT
SCORE_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer", "enum": [1, 2, 3, 4, 5]}},
    "required": ["score"],
}


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")


def _score_request(movie: str, prefix: str = "") -> JudgeRequest:
    return JudgeRequest(
        messages=(
            {
                "role": "system",
                "content": prefix + 'Rate how much the user would like the movie. Answer JSON: {"score": 1-5}.',
            },
            {"role": "user", "content": f"User liked: Toy Story, Aladdin. Movie: {movie}."},
        ),
        template_id="test/local",
        template_version="1",
        max_tokens=16,
        json_schema=SCORE_SCHEMA,
        label_options=("1", "2", "3", "4", "5"),
        label_field="score",
    )


# ------------------------------------------------------------------------------------------- the real server
@pytest.mark.llm
def test_embedded_model_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("RECJUDGE_RUNS_DIR", str(tmp_path))
    request = _score_request("The Lion King")
    with client_for(run_name="local", progress=False, logprobs=True) as client:
        assert "SmolLM2" in client.model_name and client.max_concurrency == 1
        # what served the answer is in the identity: the GGUF's hash and the llama.cpp build
        build = llama_build.find_build()
        assert build is not None
        assert client.endpoint_id.startswith("local:SmolLM2-135M-Instruct.Q4_1.gguf:")
        assert client.endpoint_id.endswith(f":llama-server-{build.commit[:7]}")
        r = client.judge(request)
        assert r.status in ("parsed", "unparsed") and r.raw_text
        assert r.prompt_tokens > 20 and r.completion_tokens > 0 and r.cost_usd == 0.0 and not r.cache_hit
        # grammar-constrained JSON: the tiny model's answer parses and holds an allowed score
        assert r.status == "parsed", r.reason
        assert r.value["score"] in (1, 2, 3, 4, 5)
        # logprobs were asked for (n_probs on llama-server): G-Eval expected score over the five labels
        assert r.label_probs is not None and set(r.label_probs) == {"1", "2", "3", "4", "5"}
        assert abs(sum(r.label_probs.values()) - 1) < 1e-6 and 1 <= r.expected_label <= 5
        assert r.argmax_label in r.label_probs
        again = client.judge(request)
        assert again.cache_hit and again.raw_text == r.raw_text
        server = client.local_server
        assert server.alive() and server.identity == client.endpoint_id
        assert server.props["total_slots"] == 1
        assert server.props["build_info"].endswith(build.commit[:7])


@pytest.mark.llm
def test_plan_token_counts_are_the_servers_prompt_tokens(tmp_path, monkeypatch):
    """The plan counts a request's prompt with the server's /apply-template and /tokenize: exactly what the server
    reports as the prompt tokens of the completion (chat template, generation prefix and special tokens)."""
    monkeypatch.setenv("RECJUDGE_RUNS_DIR", str(tmp_path))
    few_shot = [
        {"role": "system", "content": "You judge serendipity. Answer JSON."},
        {"role": "user", "content": "History: Heat (1995), Casino (1995). Candidate: Fargo (1996)."},
        {"role": "assistant", "content": '{"score": 4}'},
        {"role": "user", "content": "History: Babe (1995) — a pig's tale, Amélie (2001). Candidate: Alien (1979)."},
    ]
    requests = [
        _score_request("The Lion King"),
        _score_request("Crumb (1994) <|im_end|> not a special token in content?"),
        JudgeRequest(messages=tuple(few_shot), template_id="test/fs", template_version="1", max_tokens=8),
    ]
    with client_for(run_name="tok", progress=False) as client:
        results = client.judge_many(requests)
    tokenizer = ChatTokenizer()
    try:
        assert not tokenizer._owned  # the judge's running server answers: no second server in this process
        for request, result in zip(requests, results, strict=True):
            assert result.prompt_tokens > 0
            assert tokenizer.prompt_tokens(request.messages) == result.prompt_tokens
        # the chat template's tokens are counted too: more than the contents alone
        contents = sum(tokenizer.text_tokens(m["content"]) for m in few_shot)
        assert tokenizer.prompt_tokens(few_shot) > contents + 2 * len(few_shot)
    finally:
        tokenizer.close()


@pytest.mark.llm
def test_a_tokenizer_of_its_own_counts_the_same_and_stops_its_server(tmp_path, monkeypatch):
    monkeypatch.setenv("RECJUDGE_RUNS_DIR", str(tmp_path))
    request = _score_request("Toy Story (1995)")
    while (running := embedded_server.running_server()) is not None:
        running.stop()
    tokenizer = ChatTokenizer()  # no server in this process: it starts a small one and stops it at close
    assert tokenizer._owned and tokenizer.server.settings["n_ctx"] == 512
    own = tokenizer.server
    count = tokenizer.prompt_tokens(request.messages)
    tokenizer.close()
    assert not own.alive()
    with client_for(run_name="own", progress=False) as client:
        assert client.judge(request).prompt_tokens == count


@pytest.mark.llm
def test_slots_come_from_max_concurrency_and_prefixes_are_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("RECJUDGE_RUNS_DIR", str(tmp_path))
    profile = load_profile({"name": "e2", "backend": "embedded", "max_concurrency": 2, "options": {"n_ctx": 2048}})
    prefix = "You are a careful judge of movie recommendations. " * 40  # a shared prefix of several hundred tokens
    with profile.client(run_name="slots", progress=False) as client:
        server = client.local_server
        assert client.max_concurrency == 2 and server.props["total_slots"] == 2
        assert server.slots == 2 and server.settings["n_ctx"] == 2048
        assert server.props["default_generation_settings"]["n_ctx"] == 2048  # per slot, not shared between them
        client.judge(_score_request("Heat", prefix))
        before = server.metrics()["llamacpp:prompt_tokens_total"]
        results = client.judge_many([_score_request(m, prefix) for m in ("Fargo", "Alien", "Babe", "Casino")])
        evaluated = server.metrics()["llamacpp:prompt_tokens_total"] - before
        assert all(r.status == "parsed" for r in results)
        prompt = sum(r.prompt_tokens for r in results)
        # each slot evaluates the shared prefix at most once; the rest of the prompt tokens come from the cache
        assert evaluated < prompt / 2, (evaluated, prompt)


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
    try:
        exited = os.pidfd_open(server_pid)  # readable once the process has exited: wait on that, not on a clock
    except ProcessLookupError:
        return  # already gone
    try:
        # the bound only keeps a broken build from hanging the suite; the server's exit ends the wait
        select.select([exited], [], [], 60)
    finally:
        os.close(exited)
    assert not _pid_alive(server_pid), "llama-server outlived its SIGKILLed parent"


# ------------------------------------------------------------------------------------------- a stand-in server
FAKE_SERVER = """#!{python}
# a stand-in llama-server: says its version, records its arguments, answers /health (or fails, when told to)
import json, os, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
if "--version" in sys.argv:
    print("version: 0.5.0-dev (build 0, commit {commit})\\nbuilt with a test")
    sys.exit(0)
with open(os.environ["FAKE_ARGS_FILE"], "a") as fh:
    fh.write(json.dumps(sys.argv[1:]) + "\\n")
if os.environ.get("FAKE_FAIL"):
    print("error: the model could not be loaded: unknown tensor type", flush=True)
    sys.exit(3)
port = int(sys.argv[sys.argv.index("--port") + 1])
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({{"status": "ok", "total_slots": 1, "build_info": "b0-{commit}"}}).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


@pytest.fixture
def fake_llama(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A stand-in llama-server (commit abcdef1) and GGUF in a cache of their own; returns the args file."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("RECJUDGE_CACHE_DIR", str(cache))
    gguf = llama_build.model_path()
    gguf.parent.mkdir(parents=True)
    gguf.write_bytes(b"GGUF stand-in")
    program = tmp_path / "llama-server"
    program.write_text(FAKE_SERVER.format(python=sys.executable, commit="abcdef1"))
    program.chmod(0o755)
    monkeypatch.setenv(embedded_server.SERVER_ENV, str(program))
    args_file = tmp_path / "args.jsonl"
    monkeypatch.setenv("FAKE_ARGS_FILE", str(args_file))
    return args_file


def test_the_server_command_line_follows_the_profile(fake_llama: Path) -> None:
    server = get_local_server(
        slots=3, n_ctx=4096, n_threads=2, cache_reuse=128, cache_ram=512, log_dir=fake_llama.parent
    )
    try:
        assert server.alive() and server.identity.endswith(":llama-server-abcdef1")
        args = json.loads(fake_llama.read_text().splitlines()[-1])
        opt = {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--")}
        assert opt["--host"] == "127.0.0.1" and int(opt["--port"]) == server.port
        assert opt["--parallel"] == "3" and opt["--ctx-size"] == str(3 * 4096)  # n_ctx per slot
        assert opt["--cache-reuse"] == "128" and opt["--cache-ram"] == "512"
        assert opt["--threads"] == opt["--threads-batch"] == "2"
        assert "--metrics" in args and opt["--model"] == str(llama_build.model_path())
        assert get_local_server(slots=3, n_ctx=4096, n_threads=2, cache_reuse=128, cache_ram=512) is server
    finally:
        server.stop()


def test_a_server_that_fails_to_start_is_reported_with_its_log_tail(fake_llama, monkeypatch):
    monkeypatch.setenv("FAKE_FAIL", "1")
    with pytest.raises(RuntimeError, match="unknown tensor type") as caught:
        get_local_server(slots=1, n_ctx=1024, log_dir=fake_llama.parent)
    assert "exited with code 3" in str(caught.value) and "recjudge-llama-server-" in str(caught.value)


def test_the_endpoint_identity_names_the_server_build(fake_llama, tmp_path, monkeypatch):
    embedded = load_profile("embedded").create_backend(offline=True)
    assert embedded.endpoint_id.startswith("local:SmolLM2-135M-Instruct.Q4_1.gguf:")
    assert embedded.endpoint_id.endswith(":llama-server-abcdef1")
    other = tmp_path / "other-llama-server"
    # an older llama.cpp's way of saying its version
    other.write_text(
        FAKE_SERVER.format(python=sys.executable, commit="1234567").replace("0.5.0-dev (build 0, commit ", "4589 (")
    )
    other.chmod(0o755)
    monkeypatch.setenv(embedded_server.SERVER_ENV, str(other))
    again = load_profile("embedded").create_backend(offline=True)
    request = _score_request("Heat")
    assert again.endpoint_id.endswith(":llama-server-1234567")
    # another llama.cpp build never answers from this one's cache
    assert again.prepare(request).key != embedded.prepare(request).key


def test_without_a_build_the_identity_names_the_pinned_llama_cpp_and_preflight_says_how_to_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECJUDGE_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.delenv(embedded_server.SERVER_ENV, raising=False)
    gguf = llama_build.model_path()
    gguf.parent.mkdir(parents=True)
    gguf.write_bytes(b"GGUF stand-in")
    backend = load_profile("embedded").create_backend(offline=True)  # an offline replay needs no server
    assert backend.endpoint_id.endswith(f":llama-server-{llama_build.LLAMA_CPP_COMMIT[:7]}")
    with pytest.raises(ProfileError, match=r"llama-server .* is not built on this machine.*make install"):
        load_profile("embedded").check(preflight=True)
    gguf.unlink()
    with pytest.raises(RuntimeError, match=r"model SmolLM2-135M-Instruct\.Q4_1\.gguf is not on this machine"):
        load_profile("embedded").create_backend(offline=True)


def test_slots_are_the_profiles_max_concurrency(fake_llama) -> None:
    backend = load_profile({"backend": "embedded", "max_concurrency": 2, "options": {"n_ctx": 2048}}).create_backend()
    assert backend.max_concurrency == 2 and backend.server_options["slots"] == 2
    with pytest.raises(ProfileError, match="max_concurrency"):
        load_profile({"backend": "embedded", "max_concurrency": 0})
    with pytest.raises(ProfileError, match=r"unknown field 'options\.logits_all'"):
        load_profile({"backend": "embedded", "options": {"logits_all": True}})  # llama-cpp-python's, gone
    with pytest.raises(ValueError, match="slots are the profile's max_concurrency"):
        load_profile("embedded").create_backend(server_options={"slots": 4})


def test_the_server_is_started_once_per_settings_even_from_many_threads(fake_llama) -> None:
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(get_local_server(n_ctx=1536))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert len({id(s) for s in got}) == 1
        assert len(fake_llama.read_text().splitlines()) == 1
    finally:
        got[0].stop()  # type: ignore[attr-defined]


CHILD = textwrap.dedent(
    """
    import json, sys
    from recjudge_utils.judge.embedded_server import get_local_server
    srv = get_local_server(**json.loads(sys.argv[1]))
    print(json.dumps({"pid": srv.pid, "port": srv.port, "shared": srv.process is None}), flush=True)
    srv.stop()  # a shared server is its owner's to stop: this must leave it running
    """
)


def test_a_child_uses_the_server_its_parent_shares_and_never_stops_it(fake_llama: Path, tmp_path: Path) -> None:
    settings = {"slots": 1, "n_ctx": 1024, "n_threads": 1, "log_dir": str(tmp_path)}
    server = get_local_server(**settings)  # type: ignore[arg-type]
    script = tmp_path / "child.py"
    script.write_text(CHILD)

    def child(options: dict[str, object], shared: dict[str, str]) -> dict[str, object]:
        env = {**os.environ, "PYTHONPATH": str(REPO), **shared}
        done = subprocess.run(
            [sys.executable, str(script), json.dumps(options)], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    try:
        shared = embedded_server.shared_server_environment(server)
        starts = len(fake_llama.read_text().splitlines())
        got = child(settings, shared)
        assert got == {"pid": server.pid, "port": server.port, "shared": True}
        assert server.alive() and len(fake_llama.read_text().splitlines()) == starts  # nothing started, nothing stopped
        # other settings: a server of its own (the shared one would serve another context size)
        other = child({**settings, "n_ctx": 2048}, shared)
        assert other["pid"] != server.pid and other["shared"] is False
        # a shared server that is gone: a server of its own, not an error
        dead = json.loads(shared[embedded_server.SHARED_ENV]) | {"pid": 2**22 + 7, "port": 9}
        alone = child(settings, {embedded_server.SHARED_ENV: json.dumps(dead)})
        assert alone["pid"] != server.pid and alone["shared"] is False
    finally:
        server.stop()
