"""Judge profiles: one YAML file per judge, naming everything a rerun with that judge needs.

A profile (shipped examples under ``judges/`` in the repository; ``judges/profile.schema.json`` is the JSON Schema an
editor can check them against)::

    name: gpt-5-mini             # how tables and run folders name this judge
    backend: openai              # openai | batch | embedded | sim | panel (default: from model and batch)
    model: gpt-5-mini            # the id the endpoint serves (a router's provider/model, an Azure deployment name)
    base_url: https://api.openai.com/v1
    api_key_env: OPENAI_API_KEY  # the NAME of the environment variable holding the key; never the key
    api_key_header: null         # send the key in this header instead of Authorization (Azure: api-key)
    max_concurrency: 8           # requests in flight
    json_mode: auto              # auto | json_schema | json_object | llama_schema | none
    logprobs: auto               # auto | true | false
    timeout: 120                 # seconds per request
    retries: 6                   # retries after the first attempt on 429/5xx/timeouts
    repair: false                # one extra call asking for bare JSON when an answer is unparseable
    prices: {input: 0.25, output: 2.0}   # USD per 1M tokens (None: the built-in table)
    generation:                  # decoding; every field is optional and not sent unless set
      temperature: null          # reasoning models accept only their default
      max_output_tokens: 8000    # answer budget incl. hidden reasoning (never below a prompt's own budget)
      reasoning_effort: low
      seed: null
      extra_body: {}             # merged into every request body
      headers: {}                # added to every HTTP request (never a key: see api_key_header)
      query: {}                  # added to every URL, e.g. {api-version: 2024-10-21} for Azure
    options: {}                  # backend-specific, validated per backend (embedded: llama.cpp server; sim: its
                                 # error model; batch: polling; openai: top_logprobs)

:func:`load_profile` accepts a profile name (a file under ``judges/``), a path, a mapping (what the book runner
passes to every notebook as the ``judge`` parameter) or a :class:`JudgeProfile`. Each backend has its own pydantic
model with ``extra="forbid"``, so a typo fails with one message naming the file and the field; with
:meth:`JudgeProfile.check`, so do a missing key variable, an endpoint that does not answer a preflight call and a
model it does not list.

A *panel* (``backend: panel``, :class:`PanelProfile`) is a judge made of judges: ``members`` (profile names, paths or
inline profiles), ``aggregate`` (the rule per answer format) and ``min_members``; its client asks every member and
aggregates their answers (:mod:`recjudge_utils.judge.panel`)::

    name: panel-sim
    backend: panel
    members: [sim-a, judges/sim-b.yaml, {name: sim-c, backend: sim, options: {noise: 0.8, seed: 3}}]
    aggregate: {json_levels: median}   # json_levels: median | mean; json_list_score: mean | median;
                                       # saer_list_label: median | majority; the rest: strict majority
    min_members: 2                     # default: a majority of the members
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    field_validator,
    with_config,
)
from typing_extensions import TypedDict

from recjudge_utils.judge.backends import backend_class, backend_names, create_backend
from recjudge_utils.judge.client import JudgeClient
from recjudge_utils.judge.panel import PanelClient, PanelMember, member_run_dir
from recjudge_utils.judge.transport import RetryPolicy
from recjudge_utils.paths import current_run_dir, ensure_run_dir, project_root, run_mode

if TYPE_CHECKING:
    from recjudge_utils.judge.backends.base import Backend

__all__ = [
    "BatchProfile",
    "CustomProfile",
    "EmbeddedProfile",
    "GenerationSettings",
    "JudgeProfile",
    "OpenAIProfile",
    "PanelAggregate",
    "PanelProfile",
    "ProfileError",
    "SimProfile",
    "client_for",
    "load_profile",
    "open_judge",
    "profile_dir",
    "profile_json_schema",
]

_LOOPBACK = ("127.0.0.1", "localhost", "::1")
SCHEMA_FILE = "profile.schema.json"
# header names that carry a credential: a profile names the key's variable, it never holds a key
_SECRET_HEADERS = {"authorization", "api-key", "x-api-key", "x-goog-api-key", "proxy-authorization"}


class ProfileError(ValueError):
    """A judge profile is invalid; the message names the file and the field."""


@with_config(ConfigDict(extra="forbid"))
class Prices(TypedDict):
    """USD per 1M tokens."""

    input: float
    output: float


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GenerationSettings(_Strict):
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


class OpenAIOptions(_Strict):
    """Options of the ``openai`` backend."""

    top_logprobs: int = Field(20, ge=0, le=20, description="logprobs per token when logprobs are asked for")


class BatchOptions(_Strict):
    """Options of the ``batch`` backend: polling and the completion window."""

    poll_interval: float = Field(30.0, gt=0, description="seconds between status checks")
    completion_window: str = "24h"
    batch_timeout: float | None = Field(None, gt=0, description="give up waiting after this many seconds (resumable)")
    max_lines: int = Field(50_000, ge=1)
    retry_failed_with_chat: bool = False


class EmbeddedOptions(_Strict):
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


class SimOptions(_Strict):
    """The simulated judge's error model (:class:`recjudge_utils.judge.backends.sim.SimParameters`)."""

    noise: float = Field(0.0, ge=0)
    leniency: float = 0.0
    position_bias: float = Field(0.0, ge=0, le=1)
    tie_propensity: float = Field(0.0, ge=0, le=1)
    context_neglect: float = Field(0.0, ge=0, le=1)
    unparseable: float = Field(0.0, ge=0, le=1)
    failing: float = Field(0.0, ge=0, le=1)
    margin: float = Field(0.5, ge=0)
    seed: int = 0


class JudgeProfile(_Strict):
    """What every judge profile has; one subclass per backend adds (and checks) the backend's own fields."""

    backend: str
    name: str = Field(description="how tables and run folders name this judge")
    model: str
    max_concurrency: int = Field(4, ge=1, description="requests in flight")
    timeout: float | None = Field(None, gt=0, description="seconds per request")
    retries: int = Field(6, ge=0, description="retries after the first attempt on 429/5xx/timeouts")
    prices: Prices | None = Field(None, description="USD per 1M tokens; None: the built-in price table")
    repair: bool = Field(False, description="one extra call asking for bare JSON when an answer is unparseable")
    _source: str = PrivateAttr("<dict>")
    #: backends whose requests go over the OpenAI protocol (they take generation settings)
    remote: ClassVar[bool] = False

    @property
    def source(self) -> str:
        """The file (or "judge profile" for a mapping) the profile came from, for error messages."""
        return self._source

    @property
    def backend_name(self) -> str:
        """The registry name of the profile's backend."""
        return self.backend

    def to_dict(self) -> dict[str, Any]:
        """The profile as the runner passes it to notebooks and writes it to manifests (no secret in it)."""
        return self.model_dump(mode="json")

    def model_for_prices(self) -> str:
        """The model the price table prices this judge's tokens by."""
        return "local" if self.backend == "embedded" else self.model

    def _needs_key(self) -> bool:
        return False

    def check(self, preflight: bool = False) -> None:
        """Raise :class:`ProfileError` when the key variable is missing, or (``preflight``) the endpoint does not
        answer or does not list the model."""
        if self._needs_key():
            env = getattr(self, "api_key_env", None)
            if not env:
                raise ProfileError(f"{self.source}: field 'api_key_env' must name the environment variable of the key")
            if not os.environ.get(env):
                raise ProfileError(
                    f"{self.source}: field 'api_key_env': the environment variable {env} is not set "
                    f"(export it before running; the key is read from the environment only)"
                )
        if preflight:
            backend = self.create_backend()
            try:
                backend.preflight()
            except Exception as exc:
                field_name = "model" if "does not list model" in str(exc) else "base_url"
                raise ProfileError(f"{self.source}: field {field_name!r}: {exc}") from None
            finally:
                backend.close()

    def backend_options(self, offline: bool = False) -> dict[str, Any]:
        """Keyword options of the backend's constructor: the one place a profile becomes a backend."""
        return {"model": self.model, "offline": offline, **dict(getattr(self, "options", None) or {})}

    def create_backend(self, offline: bool = False, **extra: Any) -> Backend:
        """The profile's backend (``extra``: keyword options beyond the profile's, e.g. the sim's error model)."""
        return create_backend(self.backend, **{**self.backend_options(offline=offline), **extra})

    @property
    def computes_answers(self) -> bool:
        """Whether this judge computes its answers on this machine (the simulated judge): no model, key or cost, and
        an offline replay needs none of its answers."""
        return bool(backend_class(self.backend_name).computes_answers)

    def open_client(self, offline: bool = False, **client_options: Any) -> JudgeClient | PanelClient:
        """The judge a notebook talks to: the profile's :meth:`client`, or a panel's client of clients."""
        return self.client(offline=offline, **client_options)

    def plan_client(self, plan_cache: Path, **client_options: Any) -> JudgeClient | PanelClient:
        """The judge in plan mode: every request recorded under this judge's cache keys, none sent
        (:class:`~recjudge_utils.judge.planning.PlanBackend`), answers kept in ``plan_cache``."""
        from recjudge_utils.judge.planning import PlanBackend

        client_options.setdefault("name", self.name)
        return JudgeClient(PlanBackend(self.create_backend(offline=True)), cache_path=plan_cache, **client_options)

    def client(
        self, offline: bool = False, backend_options: Mapping[str, Any] | None = None, **overrides: Any
    ) -> JudgeClient:
        """The one way a profile becomes a :class:`~recjudge_utils.judge.client.JudgeClient` (``offline``: cache
        only; ``backend_options``: the backend's keyword options beyond the profile's; ``overrides``: the client's)."""
        pricing = {self.model_for_prices(): dict(self.prices)} if self.prices is not None else None
        kwargs: dict[str, Any] = {
            "retry": RetryPolicy(max_retries=self.retries),
            "pricing": pricing,
            "offline": offline,
            "repair": self.repair,
            "name": self.name,
        }
        kwargs.update(overrides)
        return JudgeClient(self.create_backend(offline=offline, **(backend_options or {})), **kwargs)


class _OpenAIProtocol(JudgeProfile):
    json_mode: Literal["auto", "json_schema", "json_object", "llama_schema", "none"] = "auto"
    logprobs: bool | Literal["auto"] = "auto"
    generation: GenerationSettings = GenerationSettings()
    remote: ClassVar[bool] = True

    def _protocol_options(self, offline: bool) -> dict[str, Any]:
        return {
            "model": self.model,
            "offline": offline,
            "max_concurrency": self.max_concurrency,
            "json_mode": self.json_mode,
            "logprobs": self.logprobs,
            "timeout": self.timeout,
            "generation": self.generation.model_dump(exclude_none=True),
        }


class OpenAIProfile(_OpenAIProtocol):
    """Any OpenAI-compatible chat-completions endpoint (OpenAI, Azure, Anthropic, Gemini, routers, vLLM, Ollama)."""

    backend: Literal["openai"] = "openai"
    base_url: str | None = Field(None, description="None: OpenAI itself")
    api_key_env: str | None = Field("OPENAI_API_KEY", description="name of the environment variable with the key")
    api_key_header: str | None = Field(None, description="send the key in this header (Azure: api-key)")
    batch: Literal[False] = False
    options: OpenAIOptions = OpenAIOptions()

    def _needs_key(self) -> bool:
        from urllib.parse import urlparse

        host = urlparse(self.base_url or "https://api.openai.com/v1").hostname or ""
        return host not in _LOOPBACK

    def _endpoint_options(self, offline: bool) -> dict[str, Any]:
        return {
            **self._protocol_options(offline),
            "base_url": self.base_url,
            "api_key_env": self.api_key_env or "OPENAI_API_KEY",
            "api_key_header": self.api_key_header,
        }

    def backend_options(self, offline: bool = False) -> dict[str, Any]:
        """The endpoint, the OpenAI-protocol settings and ``top_logprobs``."""
        return {**self._endpoint_options(offline), "top_logprobs": self.options.top_logprobs}


class BatchProfile(OpenAIProfile):
    """The OpenAI Batch API (half price, answers within the completion window)."""

    backend: Literal["batch"] = "batch"  # type: ignore[assignment]
    batch: Literal[True] = True  # type: ignore[assignment]
    options: BatchOptions = BatchOptions()  # type: ignore[assignment]

    def backend_options(self, offline: bool = False) -> dict[str, Any]:
        """The endpoint, the OpenAI-protocol settings and the polling options."""
        return {**self._endpoint_options(offline), **self.options.model_dump()}


class EmbeddedProfile(_OpenAIProtocol):
    """SmolLM2-135M-Instruct served on this machine by llama.cpp's llama-server (the default judge)."""

    backend: Literal["embedded"] = "embedded"
    name: str = "embedded"
    model: Literal["local"] = "local"
    max_concurrency: int = Field(
        1,
        ge=1,
        le=64,
        description="llama-server slots, requests served at once: 1 on 2 cores (each slot evaluates the shared prompt "
        "prefix again, so two measured no faster); more may pay with cores or a GPU to spare",
    )
    options: EmbeddedOptions = EmbeddedOptions()

    def backend_options(self, offline: bool = False) -> dict[str, Any]:
        """The OpenAI-protocol settings and llama-server's options."""
        return {**self._protocol_options(offline), "server_options": self.options.model_dump(exclude_none=True)}


class SimProfile(JudgeProfile):
    """The simulated judge: answers from the truth each request carries, with a known error model."""

    backend: Literal["sim"] = "sim"
    model: str = "sim"
    max_concurrency: int = Field(1, ge=1)
    options: SimOptions = SimOptions()

    def backend_options(self, offline: bool = False) -> dict[str, Any]:
        """The error model's parameters."""
        return {"model": self.model, "offline": offline, **self.options.model_dump()}


class CustomProfile(JudgeProfile):
    """A backend registered by a user (``@register_backend``): its options are checked by its constructor."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    options: dict[str, Any] = Field(default_factory=dict)


#: what a panel has none of: each member's profile sets its own
_PANEL_UNUSED = ("max_concurrency", "timeout", "retries", "prices", "repair")
#: fields two members may differ in and still be the same judge (the same cache keys, so the same answers)
_SAME_JUDGE_FIELDS = {"name", "max_concurrency", "timeout", "retries", "repair", "prices"}


def _panel_schema(schema: dict[str, Any]) -> None:
    properties = schema.get("properties", {})
    for name in _PANEL_UNUSED:
        properties.pop(name, None)


class PanelAggregate(_Strict):
    """How a panel combines its members' usable answers, per answer format (the ``answer_format`` of the prompt file;
    :mod:`recjudge_utils.judge.aggregation`). A member whose answer did not parse casts no vote."""

    json_levels: Literal["median", "mean"] = Field(
        "median",
        description="five-level scores (the serendipity judge): the median of the members' levels, or their mean "
        "rounded to the nearest level; a value halfway between two levels takes the lower one",
    )
    json_list_score: Literal["mean", "median"] = Field(
        "mean", description="Arena's absolute list score in [0, 1]: the mean or median"
    )
    arena_pairwise: Literal["majority"] = Field(
        "majority", description="per aspect and overall: the verdict of a strict majority, else Tie (no majority)"
    )
    saer_list_label: Literal["median", "majority"] = Field(
        "median",
        description="SAER's label: median, the median label (Poor < Partial < Good Match; the lower middle one for an "
        "even count), the majority label whenever there is one; majority, a strict majority, else the judgment is "
        "unparsed (no majority); flagged items: those a strict majority flags",
    )
    saer_pairwise: Literal["majority"] = Field(
        "majority", description="SAER's set verdict: a strict majority, else Tie (no majority)"
    )


class PanelProfile(JudgeProfile):
    """A judge made of judges: every member is asked every request and the panel aggregates their answers
    (:mod:`recjudge_utils.judge.panel`). Members are all simulated judges or all LLM judges."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=_panel_schema)
    backend: Literal["panel"] = "panel"
    name: str = Field("panel", description="how tables and run folders name this judge")
    model: str = Field("panel", description="set from the members' models")
    members: list[str | dict[str, Any]] = Field(
        min_length=2,
        description="the judges: profile names (judges/NAME.yaml), YAML paths (relative to this file or the "
        "checkout) or inline profiles, each with its own name; all simulated judges or all LLM judges",
    )
    aggregate: PanelAggregate = PanelAggregate()
    min_members: int | None = Field(
        None, ge=1, description="usable member answers below which a judgment is unparsed (default: a majority)"
    )
    _members: tuple[JudgeProfile, ...] = PrivateAttr(())

    @property
    def member_profiles(self) -> tuple[JudgeProfile, ...]:
        """The members' profiles, in the order the panel lists them."""
        return self._members

    @property
    def quorum(self) -> int:
        """Usable answers a judgment needs: ``min_members``, else a majority of the members."""
        return self.min_members if self.min_members is not None else len(self._members) // 2 + 1

    @property
    def computes_answers(self) -> bool:
        """A panel of simulated judges computes its answers (a panel is never a mix)."""
        return all(m.computes_answers for m in self._members)

    def to_dict(self) -> dict[str, Any]:
        """The panel with every member inline (what the manifest records and the notebooks receive)."""
        return {
            "backend": self.backend,
            "name": self.name,
            "model": self.model,
            "members": [m.to_dict() for m in self._members],
            "aggregate": self.aggregate.model_dump(mode="json"),
            "min_members": self.min_members,
        }

    def check(self, preflight: bool = False) -> None:
        """Check every member (its key variable; with ``preflight``, its endpoint and model)."""
        for i, member in enumerate(self._members):
            try:
                member.check(preflight=preflight)
            except ProfileError as exc:
                raise ProfileError(f"{self.source}: field 'members.{i}': {exc}") from None

    def create_backend(self, offline: bool = False, **extra: Any) -> Backend:
        """A panel has no backend: its members' clients answer."""
        raise ProfileError(f"{self.source}: a panel has no backend of its own; open it with open_judge()")

    def client(
        self, offline: bool = False, backend_options: Mapping[str, Any] | None = None, **overrides: Any
    ) -> JudgeClient:
        """A panel is no single client: :meth:`open_client` (or :func:`open_judge`) opens its client of clients."""
        raise ProfileError(f"{self.source}: a panel has no single client; open it with open_judge() or open_client()")

    def open_client(self, offline: bool = False, **client_options: Any) -> PanelClient:
        """The panel's client: one client per member (its own cache keys, retries and prices), ``offline``: each
        answers only from the cache."""
        return self._open(client_options, lambda m, options: m.client(offline=offline, **options), log=True)

    def plan_client(self, plan_cache: Path, **client_options: Any) -> PanelClient:
        """The panel in plan mode: each member's requests recorded under its own keys in its folder of the plan."""
        return self._open(client_options, lambda m, options: m.plan_client(plan_cache, **options), log=False)

    def _open(
        self,
        client_options: Mapping[str, Any],
        member_client: Callable[[JudgeProfile, dict[str, Any]], JudgeClient | PanelClient],
        log: bool,
    ) -> PanelClient:
        options = dict(client_options)
        run_dir = options.pop("run_dir", None)
        run_name = options.pop("run_name", None)
        panel_dir = Path(run_dir) if run_dir is not None else current_run_dir() / (run_name or "judge")
        progress = bool(options.pop("progress", True))
        name = str(options.pop("name", self.name))
        shared = {k: options.pop(k) for k in ("cache_path", "retry") if k in options}
        if options:
            raise TypeError(
                f"a panel's client takes run_dir, run_name, progress, name, cache_path and retry, not {sorted(options)}"
            )
        members: list[PanelMember] = []
        try:
            for m in self._members:
                opts = {"run_dir": member_run_dir(panel_dir, m.name), "progress": progress, "log_judgments": False}
                made = member_client(m, {**opts, **shared})
                if not isinstance(made, JudgeClient):
                    raise ProfileError(f"{self.source}: member {m.name!r} is not a single judge")
                members.append(PanelMember(m.name, made, m.computes_answers))
        except BaseException:
            for member in members:
                member.client.close()
            raise
        return PanelClient(
            members,
            aggregate=self.aggregate.model_dump(),
            min_members=self.quorum,
            run_dir=panel_dir,
            name=name,
            model=self.model,
            progress=progress,
            log_judgments=log,
        )


_BUILTIN: dict[str, type[JudgeProfile]] = {
    "openai": OpenAIProfile,
    "batch": BatchProfile,
    "embedded": EmbeddedProfile,
    "sim": SimProfile,
    "panel": PanelProfile,
}
_PROFILE_UNION: Any = Annotated[
    OpenAIProfile | BatchProfile | EmbeddedProfile | SimProfile | PanelProfile, Field(discriminator="backend")
]
_SCHEMA_ADAPTER: TypeAdapter[Any] = TypeAdapter(_PROFILE_UNION)


def profile_json_schema() -> dict[str, Any]:
    """The JSON Schema of a judge profile file (``judges/profile.schema.json``)."""
    schema = _SCHEMA_ADAPTER.json_schema()
    schema["title"] = "recjudge judge profile"
    schema["$comment"] = "generated by: python -m recjudge_utils.judge.profiles --write-schema"
    return schema


def profile_dir() -> Path | None:
    """``judges/`` of the repository checkout, where the shipped profiles live."""
    root = project_root()
    return root / "judges" if root is not None and (root / "judges").is_dir() else None


def _backend_of(data: Mapping[str, Any]) -> str:
    if data.get("backend"):
        return str(data["backend"])
    if data.get("batch") is True:
        return "batch"
    return "embedded" if data.get("model", "local") == "local" else "openai"


def _describe(error: Mapping[str, Any], model: type[JudgeProfile]) -> str:
    loc = ".".join(str(p) for p in error.get("loc", ()))
    kind = error.get("type")
    if kind == "extra_forbidden":
        parent = error.get("loc", ())[:-1]
        fields = model.model_fields if not parent else {}
        known = f" (known: {', '.join(sorted(fields))})" if fields else ""
        return f"unknown field {loc!r}{known}"
    if kind == "missing":
        return f"field {loc!r} is required"
    value = error.get("input")
    return f"field {loc!r}: {error.get('msg')} (got {value!r})"


def _panel_member(spec: Any, index: int, source: str) -> JudgeProfile:
    """Member ``index`` of the panel read from ``source``: a profile name, a YAML path (relative to the panel's file
    first) or an inline profile."""
    where = f"{source}: field 'members.{index}'"
    try:
        if isinstance(spec, JudgeProfile):
            return spec
        if isinstance(spec, Mapping):
            return _from_mapping(spec, "inline profile")
        if isinstance(spec, str | Path) and str(spec).strip():
            here = Path(source).parent if source.endswith((".yaml", ".yml")) else None
            if here is not None and not Path(spec).is_absolute() and (here / spec).is_file():
                return load_profile(here / spec)
            return load_profile(str(spec))
    except ProfileError as exc:
        raise ProfileError(f"{where}: {exc}") from None
    raise ProfileError(f"{where}: a member is a profile name, a YAML path or an inline profile, not {spec!r}")


def _panel_from_mapping(data: dict[str, Any], source: str) -> PanelProfile:
    unused = [k for k in _PANEL_UNUSED if k in data]
    if unused:
        raise ProfileError(
            f"{source}: field {unused[0]!r}: a panel has no {unused[0]} of its own; set it in its members' profiles"
        )
    raw = data.get("members")
    if not isinstance(raw, list) or len(raw) < 2:
        raise ProfileError(
            f"{source}: field 'members': a panel needs a list of at least two judges (profile names, YAML paths or "
            f"inline profiles), not {raw!r}"
        )
    members = [_panel_member(spec, i, source) for i, spec in enumerate(raw)]
    names: dict[str, int] = {}
    judges: dict[str, int] = {}
    for i, m in enumerate(members):
        where = f"{source}: field 'members.{i}'"
        if isinstance(m, PanelProfile):
            raise ProfileError(f"{where}: {m.name!r} is itself a panel; list its members instead")
        if m.name in names:
            raise ProfileError(
                f"{where}: the name {m.name!r} is also members.{names[m.name]}'s; give each member its own name (it "
                "names the member's answers in the judgment log)"
            )
        names[m.name] = i
        identity = json.dumps({k: v for k, v in m.to_dict().items() if k not in _SAME_JUDGE_FIELDS}, sort_keys=True)
        if identity in judges:
            raise ProfileError(
                f"{where}: the same judge as members.{judges[identity]} (only its name or limits differ): its answers "
                "would be that member's, counted twice; give it another model or options (a simulated judge: another "
                "seed)"
            )
        judges[identity] = i
    simulated = [m.name for m in members if m.computes_answers]
    if simulated and len(simulated) < len(members):
        llms = [m.name for m in members if not m.computes_answers]
        raise ProfileError(
            f"{source}: field 'members': simulated judges ({', '.join(simulated)}) beside LLM judges "
            f"({', '.join(llms)}): a panel is made of simulated judges only or of LLM judges only, so that the "
            "simulated judge never mixes into an LLM's numbers (the book keeps the two apart)"
        )
    data = {**data, "members": [m.to_dict() for m in members]}
    data.setdefault("name", "panel")
    data.setdefault("model", f"panel({', '.join(m.model for m in members)})")
    try:
        profile = PanelProfile.model_validate(data)
    except ValidationError as exc:
        raise ProfileError(f"{source}: {_describe(exc.errors()[0], PanelProfile)}") from None
    if profile.min_members is not None and profile.min_members > len(members):
        raise ProfileError(
            f"{source}: field 'min_members': {profile.min_members} is more than the panel's {len(members)} members"
        )
    profile._members = tuple(members)
    profile._source = source
    return profile


def _from_mapping(data: Mapping[str, Any], source: str) -> JudgeProfile:
    data = dict(data)
    backend = _backend_of(data)
    if backend == "panel":
        return _panel_from_mapping(data, source)
    model_cls = _BUILTIN.get(backend)
    if model_cls is None:
        if backend not in backend_names():
            known = ", ".join(sorted({*backend_names(), *_BUILTIN}))
            raise ProfileError(f"{source}: field 'backend': unknown backend {backend!r} ({known})")
        model_cls = CustomProfile
    if backend == "openai" and data.get("batch") is True:
        raise ProfileError(f"{source}: field 'batch': true needs backend 'batch' (or no backend)")
    if backend == "embedded" and data.get("base_url") is not None:
        raise ProfileError(f"{source}: field 'base_url': the embedded judge serves itself; leave base_url empty")
    data["backend"] = backend
    default_name = backend if backend in ("embedded", "sim") else str(data.get("model", backend))
    data.setdefault("name", default_name.replace("/", "_").replace(":", "_"))
    if backend == "embedded":
        data.pop("base_url", None)
        data.pop("api_key_env", None)  # older embedded profiles named a key variable they never used
    try:
        profile = model_cls.model_validate(data)
    except ValidationError as exc:
        raise ProfileError(f"{source}: {_describe(exc.errors()[0], model_cls)}") from None
    profile._source = source
    return profile


def _resolve_path(spec: str | Path) -> Path:
    path = Path(spec)
    if path.is_file():
        return path
    root = project_root()
    if not path.is_absolute() and root is not None and (root / path).is_file():
        return root / path  # a path relative to the checkout, from a kernel whose working directory is notebooks/
    if path.suffix in (".yaml", ".yml"):
        raise ProfileError(f"{path}: no such judge profile file")
    folder = profile_dir()
    candidate = folder / f"{spec}.yaml" if folder else None
    if candidate is not None and candidate.is_file():
        return candidate
    known = sorted(p.stem for p in folder.glob("*.yaml")) if folder else []
    raise ProfileError(f"no judge profile {str(spec)!r} (known: {', '.join(known) or 'none'}; or give a path)")


def load_profile(spec: str | Path | Mapping[str, Any] | JudgeProfile | None = None, **overrides: Any) -> JudgeProfile:
    """A judge profile from a name (``judges/<name>.yaml``), a YAML path, a mapping or a profile; ``overrides``
    replace single fields (e.g. ``max_concurrency=1``). None is the embedded default judge."""
    if spec is None:
        spec = "embedded"
    if isinstance(spec, JudgeProfile):
        profile = spec
    elif isinstance(spec, Mapping):
        profile = _from_mapping(spec, "judge profile")
    elif str(spec) == "embedded" and profile_dir() is None:
        profile = _from_mapping({"name": "embedded", "backend": "embedded"}, "embedded")
    else:
        path = _resolve_path(spec)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise ProfileError(f"{path}: not valid YAML ({exc})") from None
        if not isinstance(data, dict):
            raise ProfileError(f"{path}: a judge profile is a YAML mapping of fields")
        profile = _from_mapping(data, str(path))
    return _from_mapping({**profile.to_dict(), **overrides}, profile.source) if overrides else profile


def open_judge(
    spec: str | Path | Mapping[str, Any] | JudgeProfile | None = None,
    *,
    run: str | None = None,
    **client_options: Any,
) -> JudgeClient | PanelClient:
    """Load a profile, check it, and open its client (``client_options``: run_name = the notebook's folder in the run,
    progress, ...). Outside the book runner the notebook gets a run of its own: ``runs/<run>/``, or
    ``runs/adhoc-<judge>-<time>/`` when ``run`` is None (never the book's ``runs/default/``).

    The book runner's mode (:func:`~recjudge_utils.paths.run_mode`) decides the client: a plan's client records
    every request and calls nothing; a replay's answers only from the imported archive.
    """
    profile = load_profile(spec)
    mode = run_mode()
    if not mode.planning and not mode.offline:
        profile.check()  # before a run folder is made: a missing key leaves nothing behind
    ensure_run_dir(run=run, judge=profile.to_dict(), notebook=client_options.get("run_name"))
    if mode.plan_folder is not None:
        return profile.plan_client(mode.plan_folder / "plan-answers.sqlite", **client_options)
    return profile.open_client(offline=mode.offline, **client_options)


def client_for(
    model: str = "local",
    base_url: str | None = None,
    *,
    backend: str | None = None,
    backend_options: Mapping[str, Any] | None = None,
    api_key_env: str | None = None,
    max_concurrency: int | None = None,
    timeout: float | None = None,
    json_mode: str | None = None,
    logprobs: bool | str | None = None,
    generation: Mapping[str, Any] | None = None,
    offline: bool = False,
    **client_options: Any,
) -> JudgeClient:
    """A client from a model name alone, through the profile those fields make: ``"local"`` (the embedded
    SmolLM2-135M-Instruct) or the model at ``base_url`` (OpenAI itself when None). ``backend`` is a registry name
    (default ``embedded`` for ``"local"``, else ``openai``); the other fields are the profile's of the same names
    (None: the profile's default); ``client_options`` are the client's (run_dir, cache_path, retry, progress, ...)."""
    fields = {
        "backend": backend or ("embedded" if model == "local" else "openai"),
        "model": model,
        "base_url": base_url,
        "api_key_env": api_key_env,
        "max_concurrency": max_concurrency,
        "timeout": timeout,
        "json_mode": json_mode,
        "logprobs": logprobs,
        "generation": generation,
    }
    profile = load_profile({k: v for k, v in fields.items() if v is not None})
    client_options.setdefault("name", model)
    client_options.setdefault("retry", RetryPolicy())
    client_options.setdefault("pricing", None)
    client_options.setdefault("repair", False)
    return profile.client(offline=offline, backend_options=backend_options, **client_options)


def main(argv: list[str] | None = None, prog: str = "python -m recjudge_utils.judge.profiles") -> int:
    """Check profiles and write their JSON Schema (also ``recjudge profiles``, :mod:`recjudge_utils.cli`)."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    parser.add_argument("--write-schema", action="store_true", help=f"write judges/{SCHEMA_FILE}")
    parser.add_argument(
        "--check", nargs="*", metavar="PROFILE", help="validate profiles (default: every judges/*.yaml)"
    )
    args = parser.parse_args(argv)
    folder = profile_dir()
    if args.write_schema:
        if folder is None:
            parser.error("needs a checkout with judges/")
        target = folder / SCHEMA_FILE
        target.write_text(json.dumps(profile_json_schema(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {target}")
    if args.check is not None:
        paths = args.check or sorted(str(p) for p in (folder.glob("*.yaml") if folder else []))
        for p in paths:
            try:
                profile = load_profile(p)
            except ProfileError as exc:
                print(f"error: {exc}")
                return 2
            print(f"ok: {p} ({profile.backend}, model {profile.model})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
