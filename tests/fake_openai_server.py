"""A real loopback HTTP server that speaks the OpenAI chat-completions, files and batches protocol.

Tests start it on 127.0.0.1 (port 0) in a thread and point a ``JudgeClient`` at ``server.base_url``::

    sys.path.insert(0, str(Path(__file__).parent))  # tests/ may or may not be a package
    from fake_openai_server import FakeOpenAIServer, Reply

    with FakeOpenAIServer(script=['{"score": 4}', Reply(status=429, headers={"Retry-After": "0.1"})]) as srv:
        client = client_for(model="fake-model", base_url=srv.base_url, ...)
        ...
        assert len(srv.requests) == 2

``script`` decides each chat answer:

* ``None``: every answer is ``default`` (``'{"score": 3}'``);
* a list: answers are consumed in order (one per HTTP request, retries included), then ``default``;
* a callable ``script(body, n) -> Reply | str | dict``: ``body`` is the request JSON, ``n`` the 0-based
  request number. A ``str`` is the answer text; a ``dict`` is returned verbatim as the JSON body.

A :class:`Reply` can also be an error (``status=429/500/401``, ``headers={"Retry-After": "1"}``), a slow
answer (``delay`` seconds before responding), carry ``label_probs`` (the distribution put into
``top_logprobs`` at the first label token when the request asks for logprobs), or a custom ``finish_reason``.
``latency`` adds a fixed delay to every chat answer. ``reject_json_schema=True`` answers 400 to
``response_format.type == "json_schema"`` like llama.cpp does. ``provider`` (:mod:`fake_providers`) plays a provider:
its paths, model list, rejected parameters with its error texts, hidden reasoning tokens, headers and query.

Batch endpoints: ``POST /v1/files`` (multipart upload), ``GET /v1/files/{id}/content``,
``POST /v1/batches``, ``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``. A batch turns
``in_progress`` on the first poll and ``completed`` after ``batch_polls`` polls; each line is answered by
the same ``script``. Requests are recorded in ``.requests`` (chat bodies), ``.batch_lines`` (batch
lines), ``.headers`` (request headers of every HTTP request) and ``.paths``.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from fake_providers import Provider

__all__ = ["FakeOpenAIServer", "Reply"]

DEFAULT_ANSWER = '{"score": 3}'


@dataclass
class Reply:
    content: str | None = DEFAULT_ANSWER
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    body: Any = None  # verbatim JSON body (dict) or raw text (str), overrides everything else
    label_probs: dict[str, float] | None = None
    finish_reason: str = "stop"
    error_message: str | None = None


def _tokens(text: str) -> list[str]:
    return re.findall(r"\s*\w+|\s*[^\w\s]", text) or [text]


class FakeOpenAIServer:
    def __init__(
        self,
        script: list | Callable[[dict, int], Any] | None = None,
        *,
        latency: float = 0.0,
        default: str = DEFAULT_ANSWER,
        reject_json_schema: bool = False,
        batch_polls: int = 2,
        model: str = "fake-model",
        provider: Provider | None = None,
        port: int = 0,
    ) -> None:
        self.script = script
        self._port = port  # 0: any free port; a test that restarts "the same" endpoint passes the old one
        self.latency = latency
        self.default = default
        self.reject_json_schema = reject_json_schema
        self.batch_polls = batch_polls
        self.provider = provider or Provider("plain", models=(model,))
        self.model = model if provider is None or not provider.models else provider.models[0]
        self.requests: list[dict] = []
        self.refused: list[tuple[int, dict]] = []  # (status, body) of every request the provider refused
        self.batch_lines: list[dict] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.files: dict[str, dict] = {}
        self.batches: dict[str, dict] = {}
        self._lock = threading.Lock()
        self._counter = itertools.count()
        self._ids = itertools.count(1)
        self._queue = list(script) if isinstance(script, list) else None
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.in_flight = 0
        self.max_in_flight = 0

    # ----------------------------------------------------------------- lifecycle
    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.provider.path_prefix}"

    def start(self) -> FakeOpenAIServer:
        server = self

        class Handler(_Handler):
            fake = server

        self._httpd = _Server(("127.0.0.1", self._port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting, and wait for every request already accepted to be answered (``server_close`` joins the
        handler threads), so that ``requests`` is final."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ----------------------------------------------------------------- answers
    def _next_reply(self, body: dict, n: int) -> Reply:
        if self._queue is not None:
            with self._lock:
                item = self._queue.pop(0) if self._queue else self.default
        elif callable(self.script):
            item = self.script(body, n)
        else:
            item = self.default
        if isinstance(item, Reply):
            return item
        if isinstance(item, dict):
            return Reply(body=item)
        return Reply(content=item)

    def _completion(self, body: dict, reply: Reply) -> dict:
        content = reply.content
        prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
        completion_tokens = len(_tokens(content)) if content else 0
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": reply.finish_reason,
            "logprobs": None,
        }
        if body.get("logprobs") and content:
            choice["logprobs"] = {"content": self._logprobs(content, int(body.get("top_logprobs") or 0), reply)}
        return {
            "id": f"chatcmpl-fake{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": [choice],
            "usage": {
                "prompt_tokens": max(1, prompt_chars // 4),
                "completion_tokens": completion_tokens,
                "total_tokens": max(1, prompt_chars // 4) + completion_tokens,
            },
        }

    @staticmethod
    def _logprobs(content: str, top: int, reply: Reply) -> list[dict]:
        out = []
        labelled = False
        for tok in _tokens(content):
            stripped = tok.strip()
            if reply.label_probs and not labelled and stripped in reply.label_probs:
                labelled = True
                lead = tok[: len(tok) - len(tok.lstrip())]
                dist = sorted(reply.label_probs.items(), key=lambda kv: -kv[1])
                tops = [{"token": lead + k, "logprob": math.log(p), "bytes": None} for k, p in dist if p > 0]
                tops += [{"token": " the", "logprob": math.log(1e-4), "bytes": None}]
                lp = math.log(reply.label_probs[stripped])
            else:
                tops = [{"token": tok, "logprob": 0.0, "bytes": None}]
                lp = 0.0
            out.append({"token": tok, "logprob": lp, "bytes": None, "top_logprobs": tops[: max(top, 1)]})
        return out

    def answer_chat(
        self, body: dict, query: dict[str, str] | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], Any, float]:
        """(status, headers, json-or-text body, delay) for one chat request."""
        refusal = self.provider.refuse(body, query or {}, headers or {}) if query is not None else None
        if refusal is not None:
            with self._lock:
                self.refused.append((refusal[0], body))
            return refusal[0], {}, refusal[1], 0.0
        n = next(self._counter)
        rf = body.get("response_format") or {}
        if self.reject_json_schema and rf.get("type") == "json_schema":
            return 400, {}, _error("response_format json_schema is not supported", "invalid_request_error"), 0.0
        reply = self._next_reply(body, n)
        delay = self.latency + reply.delay
        if reply.body is not None:
            return reply.status, reply.headers, reply.body, delay
        if reply.status != 200:
            msg = reply.error_message or f"scripted error {reply.status}"
            return reply.status, reply.headers, _error(msg, "server_error"), delay
        completion = self._completion(body, reply)
        answer_tokens = len(_tokens(reply.content)) if reply.content else 0
        return 200, reply.headers, self.provider.shape(completion, body, answer_tokens), delay

    # ----------------------------------------------------------------- batches
    def _finish_batch(self, batch: dict) -> None:
        infile = self.files[batch["input_file_id"]]["content"].decode("utf-8")
        out_lines, err_lines = [], []
        ok = failed = 0
        for line in infile.splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            self.batch_lines.append(item)
            status, _headers, payload, _delay = self.answer_chat(item["body"])
            rec = {
                "id": f"batch_req_{next(self._ids)}",
                "custom_id": item["custom_id"],
                "response": {"status_code": status, "request_id": f"req_{next(self._ids)}", "body": payload},
                "error": None,
            }
            if status == 200:
                ok += 1
                out_lines.append(json.dumps(rec))
            else:
                failed += 1
                err_lines.append(json.dumps(rec))
        batch["output_file_id"] = self._store_file(("\n".join(out_lines) + "\n").encode(), "batch_output.jsonl")
        if err_lines:
            batch["error_file_id"] = self._store_file(("\n".join(err_lines) + "\n").encode(), "batch_errors.jsonl")
        batch["request_counts"] = {"total": ok + failed, "completed": ok, "failed": failed}
        batch["status"] = "completed"
        batch["completed_at"] = int(time.time())

    def _store_file(self, content: bytes, filename: str, purpose: str = "batch_output") -> str:
        fid = f"file-{next(self._ids)}"
        self.files[fid] = {
            "content": content,
            "meta": {
                "id": fid,
                "object": "file",
                "bytes": len(content),
                "created_at": int(time.time()),
                "filename": filename,
                "purpose": purpose,
                "status": "processed",
            },
        }
        return fid

    def poll_batch(self, batch_id: str) -> dict:
        with self._lock:
            b = self.batches[batch_id]
            b["_polls"] += 1
            if b["status"] == "validating":
                b["status"] = "in_progress"
            elif b["status"] == "in_progress" and b["_polls"] >= self.batch_polls:
                self._finish_batch(b)
            return {k: v for k, v in b.items() if not k.startswith("_")}


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # socketserver's default backlog of 5 drops bursts of 16 new connections
    daemon_threads = True


def _error(message: str, etype: str) -> dict:
    return {"error": {"message": message, "type": etype, "param": None, "code": None}}


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAIServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes

    def log_message(self, *args: Any) -> None:  # silence
        pass

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None, raw: bool = False) -> None:
        data = payload if raw else (payload if isinstance(payload, str) else json.dumps(payload)).encode("utf-8")
        try:
            self.send_response(status)
            ctype = "application/octet-stream" if raw else "application/json"
            if isinstance(payload, str) and not raw:
                ctype = "text/plain"
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # client gave up (timeout test)
            pass

    def _record(self) -> None:
        with self.fake._lock:
            self.fake.headers.append({k.lower(): v for k, v in self.headers.items()})
            self.fake.paths.append(f"{self.command} {self.path}")

    def _body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_GET(self) -> None:
        self._record()
        path = self.path.split("?")[0]
        provider = self.fake.provider
        if path.rstrip("/") == provider.models_path():
            if provider.models is None:
                self._send(404, _error("Resource not found", "not_found"))
                return
            data = [{"id": m, "object": "model", "owned_by": "x", "created": 0} for m in provider.models]
            self._send(200, {"object": "list", "data": data})
            return
        m = re.fullmatch(r"/v1/files/([\w-]+)/content", path)
        if m and m.group(1) in self.fake.files:
            self._send(200, self.fake.files[m.group(1)]["content"], raw=True)
            return
        m = re.fullmatch(r"/v1/files/([\w-]+)", path)
        if m and m.group(1) in self.fake.files:
            self._send(200, self.fake.files[m.group(1)]["meta"])
            return
        m = re.fullmatch(r"/v1/batches/([\w-]+)", path)
        if m and m.group(1) in self.fake.batches:
            self._send(200, self.fake.poll_batch(m.group(1)))
            return
        self._send(404, _error(f"no route GET {path}", "not_found"))

    def do_POST(self) -> None:
        self._record()
        path = self.path.split("?")[0]
        raw = self._body()
        if path == self.fake.provider.chat_path():
            body = json.loads(raw or b"{}")
            query = dict(parse_qsl(urlsplit(self.path).query))
            request_headers = {k.lower(): v for k, v in self.headers.items()}
            with self.fake._lock:
                self.fake.requests.append(body)
                self.fake.in_flight += 1
                self.fake.max_in_flight = max(self.fake.max_in_flight, self.fake.in_flight)
            try:
                status, headers, payload, delay = self.fake.answer_chat(body, query, request_headers)
                if delay:
                    time.sleep(delay)
            finally:
                with self.fake._lock:
                    self.fake.in_flight -= 1
            self._send(status, payload, headers)
            return
        if path == "/v1/files":
            msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n" + raw
            )
            content, filename, purpose = b"", "upload.jsonl", "batch"
            for part in msg.iter_parts():
                name = part.get_param("name", header="content-disposition")
                if name == "file":
                    content = part.get_payload(decode=True) or b""
                    filename = part.get_filename() or filename
                elif name == "purpose":
                    purpose = (part.get_payload(decode=True) or b"batch").decode()
            with self.fake._lock:
                fid = self.fake._store_file(content, filename, purpose)
            self._send(200, self.fake.files[fid]["meta"])
            return
        if path == "/v1/batches":
            body = json.loads(raw or b"{}")
            if body.get("input_file_id") not in self.fake.files:
                self._send(400, _error("unknown input_file_id", "invalid_request_error"))
                return
            with self.fake._lock:
                bid = f"batch_{next(self.fake._ids)}"
                self.fake.batches[bid] = {
                    "id": bid,
                    "object": "batch",
                    "endpoint": body.get("endpoint"),
                    "input_file_id": body["input_file_id"],
                    "completion_window": body.get("completion_window", "24h"),
                    "status": "validating",
                    "created_at": int(time.time()),
                    "metadata": body.get("metadata"),
                    "request_counts": {"total": 0, "completed": 0, "failed": 0},
                    "_polls": 0,
                }
                out = {k: v for k, v in self.fake.batches[bid].items() if not k.startswith("_")}
            self._send(200, out)
            return
        m = re.fullmatch(r"/v1/batches/([\w-]+)/cancel", path)
        if m and m.group(1) in self.fake.batches:
            with self.fake._lock:
                b = self.fake.batches[m.group(1)]
                b["status"] = "cancelled"
                out = {k: v for k, v in b.items() if not k.startswith("_")}
            self._send(200, out)
            return
        self._send(404, _error(f"no route POST {path}", "not_found"))
