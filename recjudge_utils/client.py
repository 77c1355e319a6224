"""The one judge client every LLM call in recjudge goes through.

``JudgeClient(model="local")`` (the default) serves SmolLM2-135M-Instruct from an embedded
llama.cpp server (see :mod:`recjudge_utils.local_server`); ``JudgeClient(model="gpt-4o-mini")`` talks
to OpenAI and ``JudgeClient(model=..., base_url="http://host:8000/v1")`` to any OpenAI-compatible
server (vLLM, Ollama, llama.cpp, ...). The API key is read only from the environment variable named
by ``api_key_env`` (default ``OPENAI_API_KEY``) and is never written anywhere.

What every call gets:

* a persistent SQLite cache (:mod:`recjudge_utils.cache`), so a rerun of the same work makes zero calls
  and a run killed with SIGKILL resumes without repeating a finished call;
* bounded concurrency (``max_concurrency``; the embedded model serves one request at a time), retries
  with exponential backoff and jitter that honour ``Retry-After`` on 429/5xx/timeouts, and a clear error
  naming the endpoint and model after the last retry;
* JSON output (``json_schema`` where supported, ``json_object`` plus llama.cpp's grammar ``schema`` for
  the embedded server), tolerant parsing, and a typed :class:`JudgeResult` that says parsed / unparsed /
  error with the raw text and the reason;
* logprob label distributions and the G-Eval expected score when the request names ``label_options``;
* one JSONL record per judgment in ``runs_dir()/<run_name>/judgments.jsonl`` and a usage summary.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import email.utils
import json
import math
import os
import random
import re
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

import pandas as pd
from tqdm.std import tqdm  # text bars: widget bars need JavaScript the offline book cannot load

from recjudge_utils.cache import JudgeCache, cache_key, messages_hash
from recjudge_utils.logprobs import compact_logprobs, label_distribution
from recjudge_utils.parsing import ParseError, parse_json_object
from recjudge_utils.paths import runs_dir
from recjudge_utils.pricing import PriceTable

__all__ = ["JudgeClient", "JudgeError", "JudgeRequest", "JudgeResult", "ParseError"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
_LOCAL_DUMMY_KEY = "sk-local-dummy-not-a-secret"
_REDACTED = "[REDACTED]"

Status = Literal["parsed", "unparsed", "error"]


@dataclass(frozen=True)
class JudgeRequest:
    """One judgment to ask for. Put fixed instructions and few-shot examples FIRST in ``messages`` and the
    per-item content LAST, so that the backend can reuse the shared prompt prefix."""

    messages: tuple[dict, ...]
    template_id: str
    template_version: str
    max_tokens: int = 256
    temperature: float = 0.0
    seed: int | None = 0
    json_schema: dict | None = None
    label_options: tuple[str, ...] | None = None
    label_field: str | None = None
    metadata: dict | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.messages, tuple):
            object.__setattr__(self, "messages", tuple(self.messages))
        if self.label_options is not None and not isinstance(self.label_options, tuple):
            object.__setattr__(self, "label_options", tuple(str(o) for o in self.label_options))
        if not self.messages:
            raise ValueError("JudgeRequest.messages is empty")
        for m in self.messages:
            if not isinstance(m, dict) or "role" not in m or "content" not in m:
                raise ValueError(f"each message needs 'role' and 'content': {m!r}")


@dataclass
class JudgeResult:
    """The outcome of one judgment. ``value`` is the parser's output when ``status == "parsed"``.

    Token counts are those of the answer (also for cache hits); ``cost_usd`` is what this call spent
    (0 for cache hits).
    """

    request: JudgeRequest
    status: Status
    raw_text: str | None
    value: Any | None
    reason: str | None
    label_probs: dict[str, float] | None
    expected_label: float | None
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    cost_usd: float
    cache_hit: bool
    argmax_label: str | None = None
    finish_reason: str | None = None
    cache_key: str | None = None
    attempts: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "parsed"


class JudgeError(RuntimeError):
    """A judge call failed for good (after the last retry, or a non-retryable error)."""


class _Downgrade(Exception):
    """The backend rejected a request option we can do without (json_schema, logprobs)."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


def _utcnow() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def _json_default(o: Any) -> Any:
    if hasattr(o, "item"):
        with contextlib.suppress(Exception):
            return o.item()
    if isinstance(o, set | frozenset | tuple):
        return list(o)
    return str(o)


def _schema_name(template_id: str) -> str:
    name = re.sub(r"[^a-zA-Z0-9_-]+", "_", template_id).strip("_") or "judgment"
    return name[:64]


def _retry_after_seconds(exc: Exception) -> float | None:
    resp = getattr(exc, "response", None)
    headers = getattr(resp, "headers", None)
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        with contextlib.suppress(ValueError):
            return max(0.0, float(ms) / 1000.0)
    ra = headers.get("retry-after")
    if not ra:
        return None
    try:
        return max(0.0, float(ra))
    except ValueError:
        with contextlib.suppress(TypeError, ValueError):
            when = email.utils.parsedate_to_datetime(ra)
            return max(0.0, when.timestamp() - time.time())
    return None


class JudgeClient:
    """Cached, concurrent, retrying LLM-judge client over the ``openai`` SDK.

    Args:
        model: ``"local"`` (embedded SmolLM2-135M-Instruct via llama.cpp) or the model name at ``base_url``.
        base_url: OpenAI-compatible endpoint; None means OpenAI itself (ignored for ``"local"``).
        run_name: JSONL logs go to ``runs_dir()/<run_name>/``; ``run_dir`` overrides the folder.
        cache_path: SQLite cache file (default ``runs_dir()/cache.sqlite``, shared by all notebooks).
        api_key_env: name of the environment variable holding the API key (the key itself is never a parameter).
        max_concurrency: requests in flight (forced to 1 for the embedded model).
        max_retries: retries after the first attempt on 429/5xx/timeouts/connection errors.
        timeout: seconds per HTTP request (default 120 remote, 600 local).
        backoff_base, backoff_max: exponential backoff ``base * 2**attempt`` (capped), with jitter.
        pricing: dict or JSON path overriding ``pricing.json`` (USD per 1M input/output tokens).
        json_mode: ``"auto"``, ``"json_schema"``, ``"json_object"`` or ``"none"``.
        logprobs: ``"auto"`` asks for top-20 logprobs when a request has ``label_options`` on remote endpoints,
            but not on the embedded model, where they make 10-shot calls ~10x slower (pass True to get them
            there too); False never.
        repair: one extra call asking for bare JSON when an answer is unparseable (off by default).
        progress: tqdm bars on batches.
        use_cache: False disables reading (results are still written).
        local_options: keyword arguments for :func:`recjudge_utils.local_server.get_local_server`.
    """

    def __init__(
        self,
        model: str = "local",
        base_url: str | None = None,
        *,
        run_name: str | None = None,
        run_dir: str | Path | None = None,
        cache_path: str | Path | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        max_concurrency: int = 4,
        max_retries: int = 6,
        timeout: float | None = None,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        max_retry_after: float = 600.0,
        pricing: dict | str | Path | None = None,
        json_mode: str = "auto",
        logprobs: bool | str = "auto",
        top_logprobs: int = 20,
        repair: bool = False,
        progress: bool = True,
        use_cache: bool = True,
        local_options: dict | None = None,
    ) -> None:
        import openai  # imported here so that importing the module stays cheap

        self._openai = openai
        self.model = model
        self.is_local = model == "local"
        self.max_retries = int(max_retries)
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.max_retry_after = float(max_retry_after)
        self.top_logprobs = int(top_logprobs)
        self.repair = bool(repair)
        self.progress = bool(progress)
        self.use_cache = bool(use_cache)
        self.prices = PriceTable(pricing)
        self._logprobs_mode = logprobs
        self._secret: str | None = None
        self.local_server = None

        if self.is_local:
            from recjudge_utils.local_server import (
                LOCAL_MODEL_ALIAS,
                LOCAL_MODEL_NAME,
                get_local_server,
                gguf_identity,
            )

            if base_url is not None:
                warnings.warn("base_url is ignored for model='local'", stacklevel=2)
            # logprobs on llama-cpp-python are expensive: it log-softmaxes every position of the whole prompt
            # (cached prefix included) and sorts the full 49k vocabulary per generated token; measured ~10x
            # slower 10-shot calls (benchmarks/bench_client.py). So the embedded model asks for them only
            # with logprobs=True, and otherwise runs the server without logits_all (~20% faster prompts).
            if logprobs == "auto":
                logprobs = False
                self._logprobs_mode = False
            opts = {"logits_all": bool(logprobs), **(local_options or {})}
            self.local_server = get_local_server(**opts)
            self.base_url = self.local_server.base_url
            self.endpoint_id = gguf_identity(self.local_server.model_path)
            self.api_model = LOCAL_MODEL_ALIAS
            self.price_model = "local"
            self._model_name = LOCAL_MODEL_NAME
            self.max_concurrency = 1
            api_key = _LOCAL_DUMMY_KEY
            self.json_mode = "llama_schema" if json_mode == "auto" else json_mode
            if not self.local_server.settings.get("logits_all", True):
                self._logprobs_mode = False  # llama.cpp computes logprobs only with logits_all
            timeout = 600.0 if timeout is None else timeout
        else:
            self.base_url = (base_url or OPENAI_BASE_URL).rstrip("/")
            self.endpoint_id = self.base_url
            self.api_model = model
            self.price_model = model
            host = urlparse(self.base_url).hostname or ""
            self._model_name = model if base_url is None else f"{model} @ {host}"
            self.max_concurrency = max(1, int(max_concurrency))
            api_key = os.environ.get(api_key_env)
            if api_key:
                self._secret = api_key
            elif host in ("127.0.0.1", "localhost", "::1"):
                api_key = "sk-no-key-set"  # local OpenAI-compatible servers usually need none
            else:
                raise RuntimeError(
                    f"no API key: set the environment variable {api_key_env} for {self.base_url} "
                    "(the key is read only from the environment)"
                )
            self.json_mode = "json_schema" if json_mode == "auto" else json_mode
            timeout = 120.0 if timeout is None else timeout
        if self.json_mode not in ("json_schema", "json_object", "llama_schema", "none"):
            raise ValueError(f"unknown json_mode {self.json_mode!r}")
        self.timeout = float(timeout)
        self._oa = openai.OpenAI(base_url=self.base_url, api_key=api_key, max_retries=0, timeout=self.timeout)
        del api_key

        self.run_dir = Path(run_dir) if run_dir is not None else runs_dir() / (run_name or "default")
        self.run_name = self.run_dir.name
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.run_dir / "judgments.jsonl"
        self.messages_path = self.run_dir / "messages.jsonl"
        self.cache = JudgeCache(cache_path if cache_path is not None else runs_dir() / "cache.sqlite")
        self._log_lock = threading.Lock()
        self._logged_messages = self._load_logged_message_hashes()
        self._records: list[dict] = []
        self._pool: ThreadPoolExecutor | None = None
        self._closed = False

    # ------------------------------------------------------------------ public API
    @property
    def model_name(self) -> str:
        """Human-readable judge model name for tables and figure titles."""
        return self._model_name

    def judge(self, request: JudgeRequest, parse: Callable[[str], Any] | None = None) -> JudgeResult:
        """One judgment. Raises :class:`JudgeError` when the call fails after the last retry."""
        return self.judge_many([request], parse=parse, progress=False, on_error="raise")[0]

    def judge_many(
        self,
        requests: Sequence[JudgeRequest],
        parse: Callable[[str], Any] | None = None,
        desc: str | None = None,
        *,
        progress: bool | None = None,
        on_error: Literal["record", "raise"] = "record",
    ) -> list[JudgeResult]:
        """Judge many requests (same order). Cached answers cost nothing; identical requests are asked once.

        Failed calls become ``JudgeResult(status="error")`` with the reason (never cached), or raise
        :class:`JudgeError` with ``on_error="raise"``.
        """
        parse = parse or parse_json_object
        requests = list(requests)
        n = len(requests)
        results: list[JudgeResult | None] = [None] * n
        if n == 0:
            return []
        show = self.progress if progress is None else progress
        bar = tqdm(total=n, desc=desc or requests[0].template_id, disable=not show, leave=True, dynamic_ncols=True)
        try:
            plans = [self._plan(r) for r in requests]
            cached = self.cache.get_many([p["key"] for p in plans]) if self.use_cache else {}
            first_index: dict[str, int] = {}
            duplicates: dict[str, list[int]] = {}
            todo: list[int] = []
            for i, plan in enumerate(plans):
                key = plan["key"]
                if key in cached:
                    results[i] = self._finish(requests[i], plan, cached[key], parse, cache_hit=True, latency=0.0)
                    bar.update(1)
                elif key in first_index:
                    duplicates.setdefault(key, []).append(i)
                else:
                    first_index[key] = i
                    todo.append(i)

            def settle(i: int, key: str, result: JudgeResult, response: dict | None) -> None:
                results[i] = result
                bar.update(1)
                for j in duplicates.get(key, []):
                    plans[j] = plans[i]
                    if response is None:
                        results[j] = replace(result, request=requests[j])
                        self._log(requests[j], plans[j], results[j], response=None)
                    else:
                        results[j] = self._finish(requests[j], plans[j], response, parse, cache_hit=True, latency=0.0)
                    bar.update(1)

            if todo:
                pool = self._get_pool()
                pending: dict[Future, int] = {}
                queue = list(reversed(todo))
                try:
                    while queue or pending:
                        while queue and len(pending) < self.max_concurrency:
                            i = queue.pop()
                            pending[pool.submit(self._call_with_downgrades, requests[i], plans[i])] = i
                        done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                        for fut in done:
                            i = pending.pop(fut)
                            key = plans[i]["key"]
                            try:
                                plan, response, latency, attempts = fut.result()
                            except JudgeError as exc:
                                res = self._error_result(requests[i], plans[i], str(exc))  # logged, never cached
                                if on_error == "raise":
                                    raise
                                settle(i, key, res, None)
                                continue
                            plans[i] = plan
                            res = self._finish(
                                requests[i], plan, response, parse, cache_hit=False, latency=latency, attempts=attempts
                            )
                            settle(i, key, res, response)
                finally:
                    for fut in pending:
                        fut.cancel()
        finally:
            bar.close()
        out = [r for r in results if r is not None]
        assert len(out) == n
        if self.repair:
            out = self._repair(out, parse, desc)
        return out

    def judge_many_batch(
        self, requests: Sequence[JudgeRequest], parse: Callable[[str], Any] | None = None, **kwargs: Any
    ) -> list[JudgeResult]:
        """Same as :meth:`judge_many` through the OpenAI Batch API (half price); see
        :func:`recjudge_utils.batch.judge_many_batch` for the options."""
        from recjudge_utils.batch import judge_many_batch

        return judge_many_batch(self, requests, parse, **kwargs)

    def usage_summary(self, total: bool = True) -> pd.DataFrame:
        """Per template: judgments, cache hits, API calls, parsed/unparsed/errors, tokens and dollars spent by
        API calls in this session (cache hits cost nothing), and seconds (summed call latency)."""
        cols = [
            "template_id",
            "calls",
            "cache_hits",
            "api_calls",
            "parsed",
            "unparsed",
            "errors",
            "prompt_tokens",
            "completion_tokens",
            "cost_usd",
            "seconds",
        ]
        if not self._records:
            return pd.DataFrame({c: pd.Series(dtype="float64" if c == "cost_usd" else "int64") for c in cols})
        df = pd.DataFrame(self._records)
        g = df.groupby("template_id", sort=True)
        out = pd.DataFrame(
            {
                "calls": g.size(),
                "cache_hits": g["cache_hit"].sum(),
                "api_calls": g["api_call"].sum(),
                "parsed": g["status"].apply(lambda s: int((s == "parsed").sum())),
                "unparsed": g["status"].apply(lambda s: int((s == "unparsed").sum())),
                "errors": g["status"].apply(lambda s: int((s == "error").sum())),
                "prompt_tokens": g["api_prompt_tokens"].sum(),
                "completion_tokens": g["api_completion_tokens"].sum(),
                "cost_usd": g["cost_usd"].sum(min_count=1),
                "seconds": g["latency_s"].sum().round(2),
            }
        ).reset_index()
        if total:
            tot = out.drop(columns="template_id").sum(numeric_only=True, min_count=1).to_frame().T
            tot.insert(0, "template_id", "TOTAL")
            out = pd.concat([out, tot], ignore_index=True)
        for c in cols[1:]:
            if c not in ("cost_usd", "seconds"):
                out[c] = out[c].astype("int64")
        out.attrs["model"] = self.model_name
        return out[cols]

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        with contextlib.suppress(Exception):
            self._oa.close()
        self.cache.close()

    def __enter__(self) -> JudgeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"JudgeClient(model={self.model_name!r}, endpoint={self.endpoint_id!r}, run_dir={str(self.run_dir)!r})"

    # ------------------------------------------------------------------ request building
    def _wants_logprobs(self, request: JudgeRequest) -> bool:
        return bool(request.label_options) and self._logprobs_mode in ("auto", True)

    def _response_format(self, request: JudgeRequest) -> dict | None:
        if request.json_schema is None or self.json_mode == "none":
            return None
        if self.json_mode == "json_schema":
            return {
                "type": "json_schema",
                "json_schema": {"name": _schema_name(request.template_id), "schema": request.json_schema},
            }
        if self.json_mode == "llama_schema":  # llama.cpp server: grammar-constrained JSON
            return {"type": "json_object", "schema": request.json_schema}
        return {"type": "json_object"}

    def _plan(self, request: JudgeRequest) -> dict:
        """The request parameters and the cache key over everything that changes the answer."""
        params: dict[str, Any] = {
            "model": self.api_model,
            "messages": [dict(m) for m in request.messages],
            "temperature": float(request.temperature),
        }
        if re.match(r"^(o\d|gpt-5)", self.api_model):
            params["max_completion_tokens"] = int(request.max_tokens)
        else:
            params["max_tokens"] = int(request.max_tokens)
        if request.seed is not None:
            params["seed"] = int(request.seed)
        rf = self._response_format(request)
        if rf is not None:
            params["response_format"] = rf
        lp = self._wants_logprobs(request)
        if lp:
            params["logprobs"] = True
            params["top_logprobs"] = self.top_logprobs
        key = cache_key(
            endpoint=self.endpoint_id,
            model=self.api_model,
            messages=params["messages"],
            temperature=request.temperature,
            seed=request.seed,
            max_tokens=request.max_tokens,
            response_format=rf,
            template_id=request.template_id,
            template_version=request.template_version,
            extra={"top_logprobs": self.top_logprobs} if lp else None,
        )
        return {"params": params, "key": key, "messages_hash": messages_hash(params["messages"])}

    # ------------------------------------------------------------------ calling
    def _get_pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.max_concurrency, thread_name_prefix="recjudge-judge")
        return self._pool

    def _describe_endpoint(self) -> str:
        if self.is_local:
            return f"embedded llama.cpp server {self.base_url} ({self.endpoint_id})"
        return self.base_url

    def _scrub(self, text: str) -> str:
        if self._secret and len(self._secret) >= 6 and self._secret in text:
            text = text.replace(self._secret, _REDACTED)
        return text

    def _call_with_downgrades(self, request: JudgeRequest, plan: dict) -> tuple[dict, dict, float, int]:
        """Call (with retries); if the backend rejects json_schema or logprobs, drop them and go again."""
        current = self._plan(request)  # another thread may have downgraded an option since planning
        if current["key"] != plan["key"]:
            plan = current
            hit = self.cache.get(plan["key"]) if self.use_cache else None
            if hit is not None:
                return plan, hit, 0.0, 0
        for _ in range(3):
            try:
                response, latency, attempts = self._call(plan)
                # committed at once: a SIGKILL after this line loses nothing
                self.cache.put(
                    plan["key"],
                    response,
                    endpoint=self.endpoint_id,
                    model=self.api_model,
                    template_id=request.template_id,
                    template_version=str(request.template_version),
                )
                return plan, response, latency, attempts
            except _Downgrade as d:
                if d.what == "json_schema" and self.json_mode == "json_schema":
                    self.json_mode = "json_object"
                elif d.what == "logprobs" and self._logprobs_mode in ("auto", True):
                    self._logprobs_mode = False
                new_plan = self._plan(request)
                if new_plan["params"] == plan["params"]:
                    raise JudgeError(
                        f"{self._describe_endpoint()} model {self.api_model!r} rejected the request ({d.what})"
                    ) from None
                plan = new_plan
                hit = self.cache.get(plan["key"]) if self.use_cache else None
                if hit is not None:
                    return plan, hit, 0.0, 0
        raise JudgeError(f"{self._describe_endpoint()} model {self.api_model!r}: request options rejected repeatedly")

    def _classify(self, exc: Exception) -> tuple[bool, str]:
        """(retryable, description)."""
        oa = self._openai
        if isinstance(exc, oa.APITimeoutError):
            return True, f"timeout after {self.timeout:.0f}s"
        if isinstance(exc, oa.APIConnectionError):
            return True, f"connection error: {exc}"
        if isinstance(exc, oa.APIStatusError):
            code = exc.status_code
            msg = f"HTTP {code}: {exc.message}"
            low = str(exc.message).lower()
            if code == 400 and ("json_schema" in low or "response_format" in low):
                raise _Downgrade("json_schema") from exc
            if (code == 400 and "logprobs" in low) or "logprobs is not supported" in low:
                raise _Downgrade("logprobs") from exc
            return (code in (408, 409, 425, 429) or code >= 500), msg
        return False, f"{type(exc).__name__}: {exc}"

    def _backoff(self, attempt: int, exc: Exception) -> float:
        ra = _retry_after_seconds(exc)
        if ra is not None:
            ra = min(ra, self.max_retry_after)
            return ra + random.uniform(0.0, min(1.0, 0.1 * ra + 0.05))
        cap = min(self.backoff_max, self.backoff_base * (2**attempt))
        return random.uniform(cap / 2.0, cap)  # "equal jitter"

    def _with_retries(self, fn: Callable[[], Any], what: str) -> tuple[Any, int]:
        """Run ``fn`` with retries and backoff on retryable errors; (result, attempts)."""
        last = ""
        for attempt in range(self.max_retries + 1):
            try:
                return fn(), attempt + 1
            except _Downgrade:
                raise
            except Exception as exc:
                retryable, desc = self._classify(exc)
                last = self._scrub(desc)
                if not retryable:
                    raise JudgeError(
                        f"{what} failed (not retryable) at {self._describe_endpoint()} model {self.api_model!r}: {last}"
                    ) from None
                if attempt < self.max_retries:
                    time.sleep(self._backoff(attempt, exc))
        raise JudgeError(
            f"{what} failed after {self.max_retries + 1} attempts at {self._describe_endpoint()} "
            f"model {self.api_model!r}: {last}"
        )

    def _call(self, plan: dict) -> tuple[dict, float, int]:
        params = plan["params"]
        t0 = [0.0]

        def once() -> Any:
            t0[0] = time.perf_counter()
            return self._oa.chat.completions.create(**params)

        resp, attempts = self._with_retries(once, "judge call")
        latency = time.perf_counter() - t0[0]
        return self._compact_response(resp, latency), latency, attempts

    @staticmethod
    def _compact_response(resp: Any, latency: float) -> dict:
        choice = resp.choices[0] if resp.choices else None
        usage = getattr(resp, "usage", None)
        lp = getattr(choice, "logprobs", None) if choice is not None else None
        content = getattr(lp, "content", None) if lp is not None else None
        return {
            "text": choice.message.content if choice is not None else None,
            "finish_reason": getattr(choice, "finish_reason", None),
            "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
            "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
            "logprobs": compact_logprobs(content),
            "model": getattr(resp, "model", None),
            "latency_s": round(latency, 4),
            "route": "chat",
        }

    # ------------------------------------------------------------------ results and logging
    def _finish(
        self,
        request: JudgeRequest,
        plan: dict,
        response: dict,
        parse: Callable[[str], Any],
        *,
        cache_hit: bool,
        latency: float,
        attempts: int = 0,
        batch: bool = False,
    ) -> JudgeResult:
        text = response.get("text")
        finish = response.get("finish_reason")
        value = None
        reason = None
        if text is None or not str(text).strip():
            status: Status = "unparsed"
            reason = f"empty answer (finish_reason={finish})"
        else:
            try:
                value = parse(text)
                status = "parsed"
            except ParseError as exc:
                status = "unparsed"
                reason = str(exc) or "unparseable answer"
                if finish == "length":
                    reason += f" (answer cut at max_tokens={request.max_tokens})"
        probs = expected = argmax = None
        if request.label_options and response.get("logprobs"):
            dist = label_distribution(response["logprobs"], request.label_options, request.label_field)
            if dist is not None:
                probs, expected, argmax = dist.probs, dist.expected, dist.argmax
        pt, ct = int(response.get("prompt_tokens") or 0), int(response.get("completion_tokens") or 0)
        cost = 0.0 if cache_hit else self.prices.cost(self.price_model, pt, ct, batch=batch)
        result = JudgeResult(
            request=request,
            status=status,
            raw_text=text,
            value=value,
            reason=reason,
            label_probs=probs,
            expected_label=expected,
            prompt_tokens=pt,
            completion_tokens=ct,
            latency_s=float(latency),
            cost_usd=cost,
            cache_hit=cache_hit,
            argmax_label=argmax,
            finish_reason=finish,
            cache_key=plan["key"],
            attempts=attempts,
        )
        self._log(request, plan, result, response=response)
        return result

    def _error_result(self, request: JudgeRequest, plan: dict, reason: str) -> JudgeResult:
        result = JudgeResult(
            request=request,
            status="error",
            raw_text=None,
            value=None,
            reason=self._scrub(reason),
            label_probs=None,
            expected_label=None,
            prompt_tokens=0,
            completion_tokens=0,
            latency_s=0.0,
            cost_usd=0.0,
            cache_hit=False,
            cache_key=plan["key"],
            attempts=self.max_retries + 1,
        )
        self._log(request, plan, result, response=None)
        return result

    def _load_logged_message_hashes(self) -> set[str]:
        seen: set[str] = set()
        if self.messages_path.exists():
            with open(self.messages_path, encoding="utf-8") as fh:
                for line in fh:
                    m = re.match(r'\{"messages_hash": "([0-9a-f]{64})"', line)
                    if m:
                        seen.add(m.group(1))
        return seen

    def _write_line(self, path: Path, record: dict) -> None:
        line = self._scrub(json.dumps(record, ensure_ascii=False, default=_json_default)) + "\n"
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()

    def _log(self, request: JudgeRequest, plan: dict, result: JudgeResult, response: dict | None) -> None:
        mh = plan["messages_hash"]
        api_call = not result.cache_hit and result.status != "error"
        record = {
            "ts": _utcnow(),
            "run": self.run_name,
            "template_id": request.template_id,
            "template_version": str(request.template_version),
            "model": self.api_model,
            "model_name": self.model_name,
            "endpoint": self.endpoint_id,
            "cache_key": plan["key"],
            "messages_hash": mh,
            "messages_ref": f"{self.messages_path.name}#{mh}",
            "raw_response": result.raw_text,
            "finish_reason": result.finish_reason,
            "parsed": result.value,
            "status": result.status,
            "reason": result.reason,
            "label_probs": result.label_probs,
            "expected_label": result.expected_label,
            "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
            "latency_s": round(result.latency_s, 4),
            "cache_hit": result.cache_hit,
            "cost_usd": None if math.isnan(result.cost_usd) else result.cost_usd,
            "route": (response or {}).get("route", "chat"),
            "attempts": result.attempts,
            "metadata": request.metadata,
        }
        with self._log_lock:
            if mh not in self._logged_messages:
                self._write_line(self.messages_path, {"messages_hash": mh, "messages": plan["params"]["messages"]})
                self._logged_messages.add(mh)
            self._write_line(self.log_path, record)
            self._records.append(
                {
                    "template_id": request.template_id,
                    "status": result.status,
                    "cache_hit": bool(result.cache_hit),
                    "api_call": bool(api_call),
                    "api_prompt_tokens": result.prompt_tokens if api_call else 0,
                    "api_completion_tokens": result.completion_tokens if api_call else 0,
                    "cost_usd": result.cost_usd,
                    "latency_s": result.latency_s,
                }
            )

    # ------------------------------------------------------------------ repair
    def _repair(self, results: list[JudgeResult], parse: Callable[[str], Any], desc: str | None) -> list[JudgeResult]:
        idx = [i for i, r in enumerate(results) if r.status == "unparsed" and r.raw_text]
        if not idx:
            return results
        reqs = []
        for i in idx:
            r = results[i]
            note = (
                f"Your previous answer could not be parsed ({r.reason}). "
                "Reply again with only the JSON object, nothing else."
            )
            reqs.append(
                replace(
                    r.request,
                    messages=(
                        *r.request.messages,
                        {"role": "assistant", "content": r.raw_text},
                        {"role": "user", "content": note},
                    ),
                    template_version=f"{r.request.template_version}+repair1",
                )
            )
        self.repair = False
        try:
            fixed = self.judge_many(reqs, parse=parse, desc=f"{desc or reqs[0].template_id} (repair)")
        finally:
            self.repair = True
        out = list(results)
        for i, f in zip(idx, fixed, strict=True):
            orig = results[i]
            if f.status == "parsed":
                out[i] = replace(
                    f,
                    request=orig.request,
                    reason=f"repaired after: {orig.reason}",
                    prompt_tokens=orig.prompt_tokens + f.prompt_tokens,
                    completion_tokens=orig.completion_tokens + f.completion_tokens,
                    latency_s=orig.latency_s + f.latency_s,
                    cost_usd=orig.cost_usd + f.cost_usd,
                    cache_hit=orig.cache_hit and f.cache_hit,
                )
        return out
