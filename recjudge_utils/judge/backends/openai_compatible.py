"""Any OpenAI-compatible chat-completions endpoint: OpenAI itself, vLLM, Ollama, a llama.cpp server, ...

The API key is read only from the environment variable named by ``api_key_env`` and is never written
anywhere: it is not in the cache key (the endpoint URL is), and :meth:`scrub` removes it from any text that
could be logged. Endpoints on loopback need no key.

JSON answers: ``json_mode="auto"`` asks for ``json_schema`` structured output when the request carries a
schema and falls back to ``json_object`` once the endpoint rejects it; logprobs (top 20 by default) are asked
for when a request names ``label_options``, and dropped once the endpoint rejects them.
"""

from __future__ import annotations

import os
import re
import threading
import time
from typing import Any
from urllib.parse import urlparse

from recjudge_utils.judge.backends import register_backend
from recjudge_utils.judge.backends.base import ChatBackend, Plan
from recjudge_utils.judge.logprobs import compact_logprobs
from recjudge_utils.judge.transport import Failure, classify_openai_error
from recjudge_utils.judge.types import Completion, JudgeRequest

__all__ = ["OPENAI_BASE_URL", "OpenAICompatibleBackend"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
JSON_MODES = ("json_schema", "json_object", "llama_schema", "none")
_REDACTED = "[REDACTED]"
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _schema_name(template_id: str) -> str:
    name = re.sub(r"[^a-zA-Z0-9_-]+", "_", template_id).strip("_") or "judgment"
    return name[:64]


def compact_response(resp: Any, latency: float, route: str = "chat") -> Completion:
    """An SDK ``ChatCompletion`` as the cached :class:`Completion`."""
    choice = resp.choices[0] if resp.choices else None
    usage = getattr(resp, "usage", None)
    lp = getattr(choice, "logprobs", None) if choice is not None else None
    content = getattr(lp, "content", None) if lp is not None else None
    return Completion(
        text=choice.message.content if choice is not None else None,
        finish_reason=getattr(choice, "finish_reason", None),
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        logprobs=compact_logprobs(content),
        model=getattr(resp, "model", None),
        latency_s=round(latency, 4),
        route=route,
    )


@register_backend("openai")
class OpenAICompatibleBackend(ChatBackend):
    """Chat completions over the ``openai`` SDK at ``base_url`` (None = OpenAI itself)."""

    name = "openai"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        max_concurrency: int = 4,
        json_mode: str = "auto",
        logprobs: bool | str = "auto",
        top_logprobs: int = 20,
        timeout: float | None = None,
        offline: bool = False,
    ) -> None:
        self.base_url = (base_url or OPENAI_BASE_URL).rstrip("/")
        self.endpoint_id = self.base_url
        self.api_model = model
        self.price_model = model
        host = urlparse(self.base_url).hostname or ""
        self.model_name = model if base_url is None else f"{model} @ {host}"
        self.max_concurrency = max(1, int(max_concurrency))
        self.api_key_env = api_key_env
        self.json_mode = "json_schema" if json_mode == "auto" else json_mode
        self.logprobs_mode: bool | str = logprobs
        self.top_logprobs = int(top_logprobs)
        self.timeout = 120.0 if timeout is None else float(timeout)
        self.offline = offline
        self._secret: str | None = None
        self._client: Any = None
        self._client_lock = threading.Lock()
        if self.json_mode not in JSON_MODES:
            raise ValueError(f"unknown json_mode {self.json_mode!r}; choose from auto, {', '.join(JSON_MODES)}")
        if not offline:
            self._api_key()  # fail now, not at the first call, when the key is missing

    # -- identity and secrets -----------------------------------------------------------------------------
    def _api_key(self) -> str:
        key = os.environ.get(self.api_key_env)
        if key:
            self._secret = key
            return key
        if (urlparse(self.base_url).hostname or "") in _LOOPBACK:
            return "sk-no-key-set"  # local OpenAI-compatible servers usually need none
        raise RuntimeError(
            f"no API key: set the environment variable {self.api_key_env} for {self.base_url} "
            "(the key is read only from the environment)"
        )

    def scrub(self, text: str) -> str:
        if self._secret and len(self._secret) >= 6 and self._secret in text:
            text = text.replace(self._secret, _REDACTED)
        return text

    def describe(self) -> str:
        return f"{self.base_url} model {self.api_model!r}"

    @property
    def sdk(self) -> Any:
        """The ``openai.OpenAI`` client, created on first use (an offline replay never creates one)."""
        if self.offline:
            raise RuntimeError(f"{self.describe()}: offline replay makes no calls")
        with self._client_lock:
            if self._client is None:
                import openai

                self._client = openai.OpenAI(
                    base_url=self.base_url, api_key=self._api_key(), max_retries=0, timeout=self.timeout
                )
            return self._client

    # -- planning -----------------------------------------------------------------------------------------
    def wants_logprobs(self, request: JudgeRequest) -> bool:
        return bool(request.label_options) and self.logprobs_mode in ("auto", True)

    def response_format(self, request: JudgeRequest, json_mode: str | None = None) -> dict[str, object] | None:
        mode = json_mode or self.json_mode
        if request.json_schema is None or mode == "none":
            return None
        schema = dict(request.json_schema)
        if mode == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": _schema_name(request.template_id), "schema": schema}}
        if mode == "llama_schema":  # llama.cpp server: grammar-constrained JSON
            return {"type": "json_object", "schema": schema}
        return {"type": "json_object"}

    def _plan(self, request: JudgeRequest, json_mode: str, logprobs: bool) -> Plan:
        params: dict[str, object] = {
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
        rf = self.response_format(request, json_mode)
        if rf is not None:
            params["response_format"] = rf
        if logprobs:
            params["logprobs"] = True
            params["top_logprobs"] = self.top_logprobs
        return Plan.for_request(
            request,
            params,
            endpoint=self.endpoint_id,
            model=self.api_model,
            response_format=rf,
            extra={"top_logprobs": self.top_logprobs} if logprobs else None,
        )

    def plan(self, request: JudgeRequest) -> Plan:
        return self._plan(request, self.json_mode, self.wants_logprobs(request))

    def plan_variants(self, request: JudgeRequest) -> list[Plan]:
        modes = [self.json_mode] + (["json_object"] if self.json_mode == "json_schema" else [])
        lps = [self.wants_logprobs(request)] + ([False] if self.wants_logprobs(request) else [])
        out: list[Plan] = []
        for mode in modes:
            for lp in lps:
                plan = self._plan(request, mode, lp)
                if plan.key not in {p.key for p in out}:
                    out.append(plan)
        return out

    # -- calling ------------------------------------------------------------------------------------------
    def classify(self, exc: Exception) -> Failure:
        return classify_openai_error(exc, self.timeout)

    def downgrade(self, what: str) -> bool:
        if what == "json_schema" and self.json_mode == "json_schema":
            self.json_mode = "json_object"
            return True
        if what == "logprobs" and self.logprobs_mode in ("auto", True):
            self.logprobs_mode = False
            return True
        return False

    def call(self, plan: Plan) -> Completion:
        started = time.perf_counter()
        resp = self.sdk.chat.completions.create(**plan.params)
        return compact_response(resp, time.perf_counter() - started)

    def served_models(self) -> list[str]:
        """Model ids the endpoint lists at ``/models``."""
        return [m.id for m in self.sdk.models.list()]

    def preflight(self) -> None:
        try:
            served = self.served_models()
        except Exception as exc:
            raise RuntimeError(f"{self.base_url} did not answer a preflight call (GET /models): {exc}") from None
        if served and self.api_model not in served:
            shown = ", ".join(served[:10]) + (" ..." if len(served) > 10 else "")
            raise RuntimeError(f"{self.base_url} does not list model {self.api_model!r} (it lists: {shown})")

    def close(self) -> None:
        if self._client is not None:
            try:
                self._client.close()
            finally:
                self._client = None
