"""Any OpenAI-compatible chat-completions endpoint: OpenAI, Azure OpenAI, Anthropic's and Gemini's OpenAI-compatible
endpoints, OpenRouter, LiteLLM, vLLM, Ollama, a llama.cpp server, ...

The API key is read only from the environment variable named by ``api_key_env`` and is never written
anywhere: it is not in the cache key (the endpoint URL is), and :meth:`scrub` removes it from any text that
could be logged. Endpoints on loopback need no key. ``api_key_header`` sends the key in another header than
``Authorization`` (Azure OpenAI's ``api-key``).

**Generation settings** (:class:`GenerationSettings`, a judge profile's ``generation:`` block): ``temperature`` and
``seed`` are sent only when set (a request's own seed otherwise), ``max_output_tokens`` raises every prompt's own answer
budget (never lowers it), ``reasoning_effort``, ``extra_body`` (merged into every request body), ``headers`` and
``query`` (added to every HTTP request, e.g. Azure's ``api-version``). The backend's own options (a profile's
``options:``) are :class:`OpenAIOptions`.

**Requests adapt to the endpoint, whatever the model is called.** When the endpoint answers 400 naming a parameter
or value it does not accept (``temperature``, ``max_tokens``, ``logprobs``, ``seed``, a ``json_schema`` response
format, ...), the backend drops it (or sends ``max_tokens`` as ``max_completion_tokens``, the reasoning models'
name) for the rest of the run, says so once on stderr, records it in ``<run folder>/endpoint_adaptations.json``
(the run manifest copies it) and asks again. The cache key is that of the request actually sent. Endpoints that
take ``max_completion_tokens`` serve reasoning models, which spend hidden tokens before answering: unless
``max_output_tokens`` is set, their budget is the prompt's plus :data:`REASONING_HEADROOM`.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal
from urllib.parse import urlparse

from pydantic import Field, field_validator

from recjudge_utils.files import atomic_write_text
from recjudge_utils.judge.backends import register_backend
from recjudge_utils.judge.backends.base import BackendOptions, ChatBackend, PreparedCall
from recjudge_utils.judge.logprobs import compact_logprobs
from recjudge_utils.judge.transport import Failure, classify_openai_error
from recjudge_utils.judge.types import Completion, JudgeRequest

__all__ = [
    "ADAPTATIONS_FILE",
    "REASONING_HEADROOM",
    "GenerationSettings",
    "OpenAICompatibleBackend",
    "OpenAIOptions",
    "compact_response",
]

_OPENAI_BASE_URL = "https://api.openai.com/v1"
JSON_MODES = ("json_schema", "json_object", "llama_schema", "none")
ADAPTATIONS_FILE = "endpoint_adaptations.json"
#: extra output tokens for endpoints that take ``max_completion_tokens`` (reasoning models think before answering)
REASONING_HEADROOM = 4096
_REDACTED = "[REDACTED]"
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
# header names that carry a credential: a profile names the key's variable, it never holds a key
_SECRET_HEADERS = {"authorization", "api-key", "x-api-key", "x-goog-api-key", "proxy-authorization"}
# model names of OpenAI's reasoning families, also behind a router prefix (``openai/gpt-5-mini``); only a first guess:
# an opaque deployment name is learned from the endpoint's 400 instead
_REASONING_NAME = re.compile(r"(^|/)(o\d|gpt-5)", re.IGNORECASE)


class GenerationSettings(BackendOptions):
    """Decoding settings; a field left unset is not sent, so the endpoint's default applies."""

    temperature: float | None = Field(None, ge=0.0, le=2.0, description="omitted unless set (reasoning models: omit)")
    max_output_tokens: int | None = Field(
        None, ge=1, description="answer budget incl. hidden reasoning; never below a prompt's own budget"
    )
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = None
    seed: int | None = Field(None, description="default: the request's own seed (0)")
    extra_body: dict[str, Any] = Field(default_factory=dict, description="merged into every request body")
    headers: dict[str, str] = Field(default_factory=dict, description="added to every HTTP request; never a key")
    query: dict[str, str] = Field(default_factory=dict, description="added to every URL (Azure: api-version)")

    @field_validator("headers")
    @classmethod
    def _no_credentials(cls, value: dict[str, str]) -> dict[str, str]:
        bad = sorted(h for h in value if h.lower() in _SECRET_HEADERS)
        if bad:
            raise ValueError(
                f"header {bad[0]!r} carries a credential: keys are read from the environment variable named by "
                "api_key_env (set api_key_header to send it in another header)"
            )
        return value

    @classmethod
    def of(cls, value: GenerationSettings | Mapping[str, Any] | None) -> GenerationSettings:
        """The settings themselves, or validated from a mapping (a None value is a field left unset)."""
        if value is None:
            return cls()
        if isinstance(value, GenerationSettings):
            return value
        return cls.model_validate({k: v for k, v in dict(value).items() if v is not None})


class OpenAIOptions(BackendOptions):
    """Options of the ``openai`` backend."""

    top_logprobs: int = Field(20, ge=0, le=20, description="logprobs per token when logprobs are asked for")


@dataclass
class Adaptations:
    """What the endpoint was found to reject, learned once and applied to every later request of the run."""

    token_parameter: str | None = None  # None: not decided yet (from the model name); "" : send no budget at all
    dropped: list[str] = field(default_factory=list)
    json_mode: str | None = None
    logprobs: bool | None = None
    log: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The adaptations as JSON-ready data (kept with the run)."""
        return {
            "token_parameter": self.token_parameter,
            "dropped": list(self.dropped),
            "json_mode": self.json_mode,
            "logprobs": self.logprobs,
            "log": list(self.log),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Adaptations:
        """Adaptations read back from :meth:`to_dict`."""
        return cls(
            token_parameter=data.get("token_parameter"),
            dropped=list(data.get("dropped") or []),
            json_mode=data.get("json_mode"),
            logprobs=data.get("logprobs"),
            log=list(data.get("log") or []),
        )


def _schema_name(template_id: str) -> str:
    name = re.sub(r"[^a-zA-Z0-9_-]+", "_", template_id).strip("_") or "judgment"
    return name[:64]


def compact_response(resp: Any, latency: float, route: str = "chat") -> Completion:
    """An SDK ``ChatCompletion`` as the cached :class:`Completion`, hidden reasoning tokens counted as output."""
    choice = resp.choices[0] if resp.choices else None
    usage = getattr(resp, "usage", None)
    lp = getattr(choice, "logprobs", None) if choice is not None else None
    content = getattr(lp, "content", None) if lp is not None else None
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    completion = int(getattr(usage, "completion_tokens", 0) or 0)
    details = getattr(usage, "completion_tokens_details", None)
    reasoning = int(getattr(details, "reasoning_tokens", 0) or 0)
    total = int(getattr(usage, "total_tokens", 0) or 0)
    if total > prompt + completion:  # providers that leave thinking tokens out of completion_tokens still bill them
        reasoning = max(reasoning, total - prompt - completion)
        completion = total - prompt
    return Completion(
        text=choice.message.content if choice is not None else None,
        finish_reason=getattr(choice, "finish_reason", None),
        prompt_tokens=prompt,
        completion_tokens=completion,
        reasoning_tokens=reasoning,
        logprobs=compact_logprobs(content),
        model=getattr(resp, "model", None),
        latency_s=round(latency, 4),
        route=route,
    )


def _match_model_id(wanted: str, served: list[str]) -> str | None:
    """The id under which an endpoint serves ``wanted``: itself, or with/without a ``models/`` (Gemini) or router
    prefix (``openai/gpt-5-mini``); None when no id matches."""
    if wanted in served:
        return wanted
    for candidate in served:
        if candidate.split("/")[-1] == wanted.split("/")[-1] and (
            candidate.startswith("models/") or wanted.startswith("models/")
        ):
            return candidate
    return None


@register_backend("openai")
class OpenAICompatibleBackend(ChatBackend):
    """Chat completions over the ``openai`` SDK at ``base_url`` (None = OpenAI itself)."""

    name = "openai"
    options_model: ClassVar[type[BackendOptions] | None] = OpenAIOptions

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        api_key_header: str | None = None,
        max_concurrency: int = 4,
        json_mode: str = "auto",
        logprobs: bool | str = "auto",
        top_logprobs: int = 20,
        timeout: float | None = None,
        offline: bool = False,
        generation: GenerationSettings | Mapping[str, Any] | None = None,
    ) -> None:
        self.base_url = (base_url or _OPENAI_BASE_URL).rstrip("/")
        self.endpoint_id = self.base_url
        self.api_model = model
        self.price_model = model
        host = urlparse(self.base_url).hostname or ""
        self.model_name = model if base_url is None else f"{model} @ {host}"
        self.max_concurrency = max(1, int(max_concurrency))
        self.api_key_env = api_key_env
        self.api_key_header = api_key_header
        self.json_mode = "json_schema" if json_mode == "auto" else json_mode
        self.logprobs_mode: bool | str = logprobs
        self.top_logprobs = int(top_logprobs)
        self.timeout = 120.0 if timeout is None else float(timeout)
        self.offline = offline
        self.generation = GenerationSettings.of(generation)
        self.adapted = Adaptations()
        self.adaptations_path: Path | None = None
        self._adapt_lock = threading.Lock()
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
        """``text`` with the API key replaced, before it is written anywhere."""
        if self._secret and len(self._secret) >= 6 and self._secret in text:
            text = text.replace(self._secret, _REDACTED)
        return text

    def describe(self) -> str:
        """The endpoint and model, for error messages."""
        return f"{self.base_url} model {self.api_model!r}"

    def _per_request_headers(self) -> dict[str, Any] | None:
        """Headers every call adds: no ``Authorization`` when the key travels in ``api_key_header`` (the SDK honours
        its removal only per request)."""
        if not self.api_key_header:
            return None
        import openai

        return {"Authorization": openai.Omit()}

    @property
    def sdk(self) -> Any:
        """The ``openai.OpenAI`` client, created on first use (an offline replay never creates one)."""
        if self.offline:
            raise RuntimeError(f"{self.describe()}: offline replay makes no calls")
        with self._client_lock:
            if self._client is None:
                import openai

                key = self._api_key()
                headers: dict[str, Any] = dict(self.generation.headers)
                if self.api_key_header:  # e.g. Azure's api-key: the key goes there and not in Authorization
                    headers[self.api_key_header] = key
                self._client = openai.OpenAI(
                    base_url=self.base_url,
                    api_key=key,
                    max_retries=0,
                    timeout=self.timeout,
                    default_headers=headers or None,
                    default_query=dict(self.generation.query) or None,
                )
            return self._client

    # -- what the endpoint accepts ----------------------------------------------------------------------------
    def bind(self, run_dir: Path, run_name: str, progress: bool) -> None:
        """Apply what this endpoint rejected earlier in the run (``run_dir`` is the notebook's folder in it)."""
        self.adaptations_path = run_dir.parent / ADAPTATIONS_FILE
        stored = self._stored_adaptations().get(self._adaptation_key())
        if stored:
            with self._adapt_lock:
                self.adapted = Adaptations.from_dict(stored)

    def _adaptation_key(self) -> str:
        return f"{self.endpoint_id} model {self.api_model}"

    def _stored_adaptations(self) -> dict[str, Any]:
        if self.adaptations_path is None or not self.adaptations_path.exists():
            return {}
        try:
            data = json.loads(self.adaptations_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _save_adaptations(self) -> None:
        if self.adaptations_path is None:
            return
        data = self._stored_adaptations()
        data[self._adaptation_key()] = self.adapted.to_dict()
        self.adaptations_path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.adaptations_path, json.dumps(data, indent=1, sort_keys=True) + "\n")

    def token_parameter(self) -> str:
        """``max_tokens``, ``max_completion_tokens`` (reasoning models), or ``""`` (the endpoint takes neither)."""
        if self.adapted.token_parameter is not None:
            return self.adapted.token_parameter
        return "max_completion_tokens" if _REASONING_NAME.search(self.api_model) else "max_tokens"

    def output_budget(self, request: JudgeRequest) -> int:
        """Tokens the answer may use: never below the prompt's own budget."""
        if self.generation.max_output_tokens is not None:
            return max(int(request.max_tokens), int(self.generation.max_output_tokens))
        if self.token_parameter() == "max_completion_tokens":
            return int(request.max_tokens) + REASONING_HEADROOM
        return int(request.max_tokens)

    def current_json_mode(self) -> str:
        """The response format asked for now (after any the endpoint rejected)."""
        return self.adapted.json_mode or self.json_mode

    def wants_logprobs(self, request: JudgeRequest) -> bool:
        """Whether this request asks for logprobs (it has label options and the endpoint takes them)."""
        if self.adapted.logprobs is False:
            return False
        return bool(request.label_options) and self.logprobs_mode in ("auto", True)

    def downgrade(self, names: tuple[str, ...], message: str, sent: Mapping[str, object]) -> bool:
        """Adapt to the first of ``names`` that the rejected body ``sent`` holds; False when none can be adapted (or
        another thread, refused the same way, already did)."""
        rf = sent.get("response_format")
        in_body = [
            n for n in names if n in sent or (n == "json_schema" and isinstance(rf, dict) and "json_schema" in rf)
        ]
        with self._adapt_lock:
            for name in in_body:
                action = self._adapt(name)
                if action is not None:
                    self.adapted.log.append({"parameter": name, "action": action, "message": message[:300]})
                    print(
                        f"recjudge: {self.describe()} rejected {name!r} ({message[:160].strip()}): {action} "
                        "for the rest of this run",
                        file=sys.stderr,
                        flush=True,
                    )
                    self._save_adaptations()
                    return True
        return False

    def _adapt(self, name: str) -> str | None:
        """Change the request state for a rejected ``name``; a sentence saying what changed, or None."""
        a = self.adapted
        if name in ("max_tokens", "max_completion_tokens"):
            current = self.token_parameter()
            if name != current:
                return None
            rejected = {entry["parameter"] for entry in a.log}
            other = "max_completion_tokens" if name == "max_tokens" else "max_tokens"
            a.token_parameter = "" if other in rejected else other
            return f"sending the answer budget as {other!r}" if a.token_parameter else "sending no answer budget"
        if name in ("logprobs", "top_logprobs"):
            if a.logprobs is False or self.logprobs_mode not in ("auto", True):
                return None
            a.logprobs = False
            return "asking for no logprobs"
        if name in ("json_schema", "response_format"):
            mode = self.current_json_mode()
            if name == "json_schema" and mode != "json_schema":
                return None
            new = "json_object" if mode == "json_schema" else "none"
            if mode == "none":
                return None
            a.json_mode = new
            return f"asking for {new} answers" if new != "none" else "asking for no response format"
        if name in a.dropped:
            return None
        a.dropped.append(name)
        return "dropping it"

    # -- planning -----------------------------------------------------------------------------------------
    def response_format(self, request: JudgeRequest, json_mode: str | None = None) -> dict[str, object] | None:
        """The ``response_format`` body field for the request's JSON schema under ``json_mode``."""
        mode = json_mode or self.current_json_mode()
        if request.json_schema is None or mode == "none":
            return None
        schema = dict(request.json_schema)
        if mode == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": _schema_name(request.template_id), "schema": schema}}
        if mode == "llama_schema":  # llama.cpp server: grammar-constrained JSON
            return {"type": "json_object", "schema": schema}
        return {"type": "json_object"}

    def body(self, request: JudgeRequest, json_mode: str, logprobs: bool) -> dict[str, object]:
        """The JSON body sent for ``request`` under the adaptations learned so far."""
        gen = self.generation
        params: dict[str, object] = {"model": self.api_model, "messages": [dict(m) for m in request.messages]}
        temperature = gen.temperature if gen.temperature is not None else request.temperature
        seed = gen.seed if gen.seed is not None else request.seed
        optional: dict[str, object | None] = {
            "temperature": None if temperature is None else float(temperature),
            "seed": None if seed is None else int(seed),
            "reasoning_effort": gen.reasoning_effort,
        }
        token_parameter = self.token_parameter()
        if token_parameter:
            optional[token_parameter] = self.output_budget(request)
        rf = self.response_format(request, json_mode)
        if rf is not None:
            optional["response_format"] = rf
        if logprobs:
            optional["logprobs"] = True
            optional["top_logprobs"] = self.top_logprobs
        optional.update(dict(gen.extra_body))
        dropped = set(self.adapted.dropped)
        params.update({k: v for k, v in optional.items() if v is not None and k not in dropped})
        return params

    def _prepare(self, request: JudgeRequest, json_mode: str, logprobs: bool) -> PreparedCall:
        params = self.body(request, json_mode, logprobs)
        sent = {k: v for k, v in params.items() if k not in ("model", "messages")}
        budget = params.get(self.token_parameter()) if self.token_parameter() else None
        return PreparedCall.for_request(
            request,
            params,
            endpoint=self.endpoint_id,
            model=self.api_model,
            response_format=params.get("response_format"),  # type: ignore[arg-type]
            extra={"sent": sent, "headers": dict(self.generation.headers), "query": dict(self.generation.query)},
            sampling={"temperature": params.get("temperature"), "seed": params.get("seed"), "max_tokens": budget},
            version=self.adaptation_version(),
        )

    def adaptation_version(self) -> int:
        """Every adaptation is logged once: the log's length counts them."""
        return len(self.adapted.log)

    def prepare(self, request: JudgeRequest) -> PreparedCall:
        """The request body and cache key under the endpoint's current adaptations."""
        return self._prepare(request, self.current_json_mode(), self.wants_logprobs(request))

    def prepare_variants(self, request: JudgeRequest) -> list[PreparedCall]:
        """Every call the request may have been answered under (for an offline replay)."""
        mode = self.current_json_mode()
        modes = [mode] + (["json_object"] if mode == "json_schema" else [])
        lps = [self.wants_logprobs(request)] + ([False] if self.wants_logprobs(request) else [])
        out: list[PreparedCall] = []
        for m in modes:
            for lp in lps:
                plan = self._prepare(request, m, lp)
                if plan.key not in {p.key for p in out}:
                    out.append(plan)
        return out

    # -- calling ------------------------------------------------------------------------------------------
    def classify(self, exc: Exception) -> Failure:
        """Whether an SDK error is worth a retry (429, 5xx, timeouts) and what to say about it."""
        return classify_openai_error(exc, self.timeout, tuple(self.generation.extra_body))

    def call(self, plan: PreparedCall) -> Completion:
        """One chat-completions call with the planned body."""
        started = time.perf_counter()
        params = dict(plan.params)
        # everything but model and messages goes as the raw body: the SDK's keyword checks would refuse parameters
        # it does not know yet, and the body must be exactly what the plan (and its cache key) says
        resp = self.sdk.chat.completions.create(
            model=params.pop("model"),
            messages=params.pop("messages"),
            extra_body=params or None,
            extra_headers=self._per_request_headers(),
        )
        return compact_response(resp, time.perf_counter() - started)

    def served_models(self) -> list[str]:
        """Model ids the endpoint lists at ``/models``."""
        return [m.id for m in self.sdk.models.list(extra_headers=self._per_request_headers())]

    def preflight(self) -> None:
        """Check the endpoint answers ``GET /models`` and lists the model (an endpoint that does not list models,
        such as an Azure deployment URL, answers 404 there: then only the connection is checked)."""
        import openai

        try:
            served = self.served_models()
        except openai.NotFoundError:
            print(f"recjudge: {self.base_url} lists no models (GET /models: 404); not checking the model id")
            return
        except Exception as exc:
            raise RuntimeError(f"{self.base_url} did not answer a preflight call (GET /models): {exc}") from None
        if not served or _match_model_id(self.api_model, served) is not None:
            return
        close = difflib.get_close_matches(self.api_model, served, n=3, cutoff=0.5)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        shown = ", ".join(served[:10]) + (" ..." if len(served) > 10 else "")
        raise RuntimeError(f"{self.base_url} does not list model {self.api_model!r}{hint} (it lists: {shown})")

    def close(self) -> None:
        """Close the SDK client."""
        if self._client is not None:
            try:
                with contextlib.suppress(Exception):
                    self._client.close()
            finally:
                self._client = None
