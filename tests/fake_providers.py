"""Providers as the fake OpenAI server plays them: what each endpoint rejects, lists, demands and reports.

``FakeOpenAIServer(script=..., provider=PROVIDERS["openai-reasoning"])`` answers like OpenAI's reasoning models: 400
for ``temperature`` other than 1 (``unsupported_value``), for ``max_tokens`` and for ``logprobs``
(``unsupported_parameter``), and a few hundred hidden reasoning tokens spent from ``max_completion_tokens`` before the
answer (an empty answer with ``finish_reason: "length"`` when the budget runs out first), reported in
``usage.completion_tokens_details.reasoning_tokens``. The error texts are those the providers send (see the closing
notes of the issue that added them); the other providers below are played the same way.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

__all__ = ["PROVIDERS", "Provider"]


@dataclass(frozen=True)
class Provider:
    """How one provider's OpenAI-compatible endpoint behaves."""

    name: str
    path_prefix: str = "/v1"  # where chat/completions and models live under the server root
    models: tuple[str, ...] | None = ("fake-model",)  # ids at GET <prefix>/models; None: 404 (Azure deployment URL)
    #: body parameters answered with 400, in the order the provider checks them: name -> error kind
    rejects: tuple[tuple[str, str], ...] = ()
    temperature_default_only: bool = False  # 400 for any temperature but 1 (reasoning models)
    reasoning_tokens: tuple[int, int] = (0, 0)  # hidden tokens spent before the answer (min, max)
    thinking_outside_completion: bool = False  # Gemini: thinking tokens only in total_tokens
    required_query: tuple[tuple[str, str], ...] = ()
    key_header: str | None = None  # the key must come in this header and Authorization must be absent
    error_shape: str = "openai"  # openai | gemini | anthropic | litellm
    no_logprobs: bool = False  # accepted and ignored (Anthropic, Ollama)
    fences: bool = False  # ignores response_format and wraps its JSON in a Markdown fence (Anthropic)
    served_model: str | None = None  # the model name the answers carry

    def chat_path(self) -> str:
        return f"{self.path_prefix}/chat/completions"

    def models_path(self) -> str:
        return f"{self.path_prefix}/models"

    # ------------------------------------------------------------------ checks of a request
    def refuse(self, body: dict[str, Any], query: dict[str, str], headers: dict[str, str]) -> tuple[int, Any] | None:
        """(status, error body) when the provider refuses the request, else None."""
        for key, value in self.required_query:
            if query.get(key) != value:
                return 404, {"error": {"code": "404", "message": "Resource not found"}}
        if self.key_header:
            if not headers.get(self.key_header.lower()):
                return 401, {"error": {"code": "401", "message": f"Access denied: missing {self.key_header} header"}}
            if "authorization" in headers:
                return 401, {"error": {"code": "401", "message": "Access denied: invalid bearer token"}}
        if self.temperature_default_only and "temperature" in body and body["temperature"] != 1:
            message = (
                f"Unsupported value: 'temperature' does not support {body['temperature']} with this model. "
                "Only the default (1) value is supported."
            )
            return 400, self.error(message, "temperature", "unsupported_value")
        for key, kind in self.rejects:
            if key in body:
                return 400, self.error(self.rejection_text(key, kind), key, kind)
        return None

    def rejection_text(self, key: str, kind: str) -> str:
        if self.error_shape == "gemini":
            return f'Invalid JSON payload received. Unknown name "{key}": Cannot find field.'
        if self.error_shape == "litellm":
            return (
                f"litellm.UnsupportedParamsError: openai does not support parameters: ['{key}'], for model="
                f"{self.served_model}. To drop these, set `litellm.drop_params=True` or for proxy: "
                "`litellm_settings: drop_params: true`."
            )
        if key == "max_tokens":
            return (
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead."
            )
        return f"Unsupported parameter: '{key}' is not supported with this model."

    def error(self, message: str, param: str | None, code: str) -> Any:
        if self.error_shape == "gemini":
            return [{"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}]
        if self.error_shape == "anthropic":
            return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
        if self.error_shape == "litellm":
            return {"error": {"message": message, "type": "None", "param": None, "code": "400"}}
        return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}

    # ------------------------------------------------------------------ answers
    def hidden_tokens(self, body: dict[str, Any]) -> int:
        low, high = self.reasoning_tokens
        if high <= 0:
            return 0
        digest = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).digest()
        return low + int.from_bytes(digest[:4], "little") % (high - low + 1)

    def shape(self, completion: dict[str, Any], body: dict[str, Any], answer_tokens: int) -> dict[str, Any]:
        """Turn an ordinary completion into this provider's: hidden reasoning, budget, fences, no logprobs."""
        choice = completion["choices"][0]
        usage = completion["usage"]
        hidden = self.hidden_tokens(body)
        if self.served_model:
            completion["model"] = self.served_model
        if self.no_logprobs:
            choice["logprobs"] = None
        content = choice["message"]["content"]
        if self.fences and content:
            choice["message"]["content"] = f"```json\n{content}\n```"
        if hidden:
            budget = body.get("max_completion_tokens", body.get("max_tokens"))
            if budget is not None and hidden + answer_tokens > int(budget):
                choice["message"]["content"] = ""
                choice["finish_reason"] = "length"
                choice["logprobs"] = None
                spent = int(budget)
                hidden = min(hidden, spent)
            else:
                spent = hidden + answer_tokens
            if self.thinking_outside_completion:
                usage["completion_tokens"] = spent - hidden
                usage["total_tokens"] = usage["prompt_tokens"] + spent
            else:
                usage["completion_tokens"] = spent
                usage["total_tokens"] = usage["prompt_tokens"] + spent
                usage["completion_tokens_details"] = {"reasoning_tokens": hidden}
        return completion


_REASONING = {
    "rejects": (("max_tokens", "unsupported_parameter"), ("logprobs", "unsupported_parameter")),
    "temperature_default_only": True,
    "reasoning_tokens": (150, 450),
}

PROVIDERS: dict[str, Provider] = {
    # OpenAI's reasoning models (gpt-5 family, o-series), under their own name
    "openai-reasoning": Provider("openai-reasoning", models=("gpt-5-mini", "gpt-4.1-mini"), **_REASONING),  # type: ignore[arg-type]
    # the same model behind a name that says nothing (a deployment, a proxy alias)
    "opaque-reasoning": Provider("opaque-reasoning", models=("my-judge-deployment",), **_REASONING),  # type: ignore[arg-type]
    "openai-chat": Provider("openai-chat", models=("gpt-4.1-mini", "gpt-4o-mini", "gpt-5-mini")),
    # Azure OpenAI: deployment in the URL, api-version query, key in the api-key header, no model list there
    "azure": Provider(
        "azure",
        path_prefix="/openai/deployments/my-judge-deployment",
        models=None,
        required_query=(("api-version", "2024-10-21"),),
        key_header="api-key",
        **_REASONING,  # type: ignore[arg-type]
    ),
    # Anthropic's OpenAI-compatible endpoint: logprobs, response_format and seed ignored (its documented behaviour)
    "anthropic": Provider(
        "anthropic",
        models=("claude-sonnet-4-5", "claude-haiku-4-5"),
        error_shape="anthropic",
        no_logprobs=True,
        fences=True,
    ),
    # Gemini's OpenAI-compatible endpoint: models listed as models/<id>, unknown fields refused, thinking tokens
    # billed in total_tokens only
    "gemini": Provider(
        "gemini",
        path_prefix="/v1beta/openai",
        models=("models/gemini-2.5-flash", "models/gemini-2.5-pro"),
        rejects=(("logprobs", "unknown_field"), ("top_logprobs", "unknown_field"), ("seed", "unknown_field")),
        error_shape="gemini",
        reasoning_tokens=(50, 200),
        thinking_outside_completion=True,
    ),
    # a router with provider/model names that passes reasoning models through
    "openrouter": Provider(
        "openrouter",
        path_prefix="/api/v1",
        models=("openai/gpt-5-mini", "anthropic/claude-sonnet-4.5", "google/gemini-2.5-flash"),
        **_REASONING,  # type: ignore[arg-type]
    ),
    # a LiteLLM proxy without drop_params: unsupported parameters are its own 400
    "litellm": Provider(
        "litellm",
        models=("gpt-5-mini", "claude-sonnet-4-5"),
        rejects=(("temperature", "unsupported"), ("max_tokens", "unsupported"), ("logprobs", "unsupported")),
        error_shape="litellm",
        served_model="gpt-5-mini",
        reasoning_tokens=(150, 450),
    ),
    "ollama": Provider("ollama", models=("qwen2.5:7b",), no_logprobs=True),
    "vllm": Provider("vllm", models=("meta-llama/Llama-3.1-8B-Instruct",)),
}
