"""The embedded default judge: SmolLM2-135M-Instruct, served by llama.cpp's ``llama-server`` on loopback.

The server (:mod:`recjudge_utils.judge.embedded_server`) starts at the first call that the cache cannot answer, so a
cached rerun or an offline replay never starts it. The cache identity is what serves the answers: the GGUF file's
hash and the llama.cpp build (:func:`~recjudge_utils.judge.embedded_server.embedded_identity`), so answers from
another server or llama.cpp are never taken for this one's (at temperature 0 they may differ slightly). The
profile's ``max_concurrency`` is the server's number of slots. Answers are constrained to the request's JSON schema
(``json_object`` with a ``schema``: llama.cpp compiles it to a grammar); logprobs are the server's ``n_probs`` (the
OpenAI ``top_logprobs`` it maps to them), cheap on llama-server, off unless asked for with ``logprobs=True``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from recjudge_utils.answer_formats import answer_format
from recjudge_utils.judge.backends import register_backend
from recjudge_utils.judge.backends.base import BackendOptions
from recjudge_utils.judge.backends.openai_compatible import GenerationSettings, OpenAICompatibleBackend
from recjudge_utils.judge.embedded_server import (
    LOCAL_MODEL_ALIAS,
    LOCAL_MODEL_NAME,
    LocalServer,
    embedded_identity,
    get_local_server,
    server_program,
)
from recjudge_utils.judge.types import JudgeRequest

__all__ = ["EmbeddedBackend", "EmbeddedOptions"]

_LOCAL_DUMMY_KEY = "sk-local-dummy-not-a-secret"
#: a grammar's free text (printable ASCII: at least one character a token) is capped so that the fixed fields after it
#: (about 25 tokens) fit the answer budget, whatever it holds (SmolLM2 spends a token on each digit of a date)
_CHARS_PER_TOKEN, _FIELD_TOKENS = 1.0, 25


class EmbeddedOptions(BackendOptions):
    """llama-server settings (:func:`recjudge_utils.judge.embedded_server.get_local_server`); its slots are the
    profile's ``max_concurrency``."""

    n_ctx: int | None = Field(None, ge=512, description="tokens of context per slot (default 8192)")
    n_threads: int | None = Field(None, ge=1, description="CPU threads (default: every core)")
    n_batch: int | None = Field(None, ge=1, description="logical batch of prompt tokens (llama-server's default 2048)")
    n_ubatch: int | None = Field(None, ge=1, description="physical batch of prompt tokens (llama-server's default 512)")
    cache_reuse: int | None = Field(
        None, ge=0, description="smallest shifted chunk of an earlier prompt reused, in tokens (default 256; 0: off)"
    )
    cache_ram: int | None = Field(
        None, ge=0, description="MiB of RAM keeping earlier prompts' states (default 1024; 0: off)"
    )
    flash_attn: Literal["auto", "on", "off"] | None = Field(None, description="llama.cpp's flash attention")
    verbose: bool | None = None
    startup_timeout: float | None = Field(None, gt=0)
    log_dir: str | None = None


def _greedy_unless_set(generation: GenerationSettings) -> GenerationSettings:
    return generation if generation.temperature is not None else generation.model_copy(update={"temperature": 0.0})


@register_backend("embedded")
class EmbeddedBackend(OpenAICompatibleBackend):
    """SmolLM2-135M-Instruct on an embedded llama-server (``max_concurrency`` slots)."""

    name = "embedded"
    options_model = EmbeddedOptions

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
        generation: GenerationSettings | Mapping[str, Any] | None = None,
    ) -> None:
        if base_url is not None:
            raise ValueError("the embedded backend serves its own model: base_url must be None")
        if int(max_concurrency) < 1:
            raise ValueError(f"max_concurrency must be at least 1 (got {max_concurrency})")
        options = dict(server_options or {})
        if "slots" in options:
            raise ValueError("the embedded server's slots are the profile's max_concurrency, not a server option")
        self.server_options = {**options, "slots": int(max_concurrency)}
        super().__init__(
            LOCAL_MODEL_ALIAS,
            "http://127.0.0.1:0/v1",
            api_key_env=api_key_env,
            max_concurrency=int(max_concurrency),
            json_mode="llama_schema" if json_mode == "auto" else json_mode,
            logprobs=False if logprobs == "auto" else logprobs,
            top_logprobs=top_logprobs,
            timeout=600.0 if timeout is None else timeout,
            offline=True,  # no key check at construction; the server is started lazily in `sdk`
            # llama.cpp samples at temperature 0.8 unless told otherwise: the embedded judge answers greedily
            generation=_greedy_unless_set(GenerationSettings.of(generation)),
        )
        self.offline = offline
        self.endpoint_id = embedded_identity()
        self.price_model = "local"
        self.model_name = LOCAL_MODEL_NAME
        self._server: LocalServer | None = None
        self._server_lock = threading.Lock()

    def _api_key(self) -> str:
        return _LOCAL_DUMMY_KEY

    def body(self, request: JudgeRequest, json_mode: str, logprobs: bool) -> dict[str, object]:
        """The OpenAI-compatible body, plus llama-server's GBNF ``grammar`` for an answer format that no JSON schema
        describes (SAER's fields): the small model can then only write what the parser reads, within the budget."""
        params = super().body(request, json_mode, logprobs)
        fmt = answer_format(request.answer_format) if request.answer_format else None
        if fmt is not None and fmt.grammar is not None and request.json_schema is None and json_mode != "none":
            # free text before the fields takes what the budget leaves them
            chars = int(_CHARS_PER_TOKEN * max(0, request.max_tokens - _FIELD_TOKENS))
            params["grammar"] = fmt.grammar(reasoning_chars=chars, **dict(request.answer_options))
        return params

    @property
    def server(self) -> LocalServer:
        """The running llama-server (started on first use)."""
        if self.offline:
            raise RuntimeError("offline replay: the embedded server is not started")
        with self._server_lock:
            if self._server is None or not self._server.alive():
                server = get_local_server(**self.server_options)
                if server.identity != self.endpoint_id:  # e.g. $RECJUDGE_LLAMA_SERVER changed since construction
                    raise RuntimeError(
                        f"the embedded server is {server.identity}, but this judge's answers are keyed as "
                        f"{self.endpoint_id}: create the judge again"
                    )
                self._server = server
                self.base_url = server.base_url
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
        return f"embedded llama-server {where} ({self.endpoint_id}) model {self.api_model!r}"

    def preflight(self) -> None:
        """The embedded judge needs no endpoint: its GGUF (checked at init) and a llama-server build on this machine
        (an error saying how to build it when there is none)."""
        server_program()
