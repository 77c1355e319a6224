"""What a judge is: a judge profile's schema, its identity and the backend and client it makes.

A profile is the fields every judge has (:class:`JudgeProfile`: name, model, limits, prices) plus its backend's: one
subclass per built-in backend, whose ``options`` are the options model the backend declares in the backend registry
(:func:`recjudge_utils.judge.backends.backend_options_model`; the ``sim`` backend's :class:`SimParameters`, the
``openai`` backend's :class:`OpenAIOptions`, ...). Every model refuses unknown fields (``extra="forbid"``), so a typo
fails with one message naming the file and the field. A profile file, field by field::

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
    generation:                  # decoding (GenerationSettings); every field is optional and not sent unless set
      temperature: null          # reasoning models accept only their default
      max_output_tokens: 8000    # answer budget incl. hidden reasoning (never below a prompt's own budget)
      reasoning_effort: low
      seed: null
      extra_body: {}             # merged into every request body
      headers: {}                # added to every HTTP request (never a key: see api_key_header)
      query: {}                  # added to every URL, e.g. {api-version: 2024-10-21} for Azure
    options: {}                  # the backend's own options model (embedded: llama.cpp server; sim: its error model;
                                 # batch: polling; openai: top_logprobs)

A *panel* (``backend: panel``, :class:`PanelProfile`) is a judge made of judges: ``members`` (profile names, paths or
inline profiles), ``aggregate`` (the rule per answer format) and ``min_members``; its client asks every member and
aggregates their answers (:mod:`recjudge_utils.judge.panel`)::

    name: panel-sim
    backend: panel
    members: [sim-a, judges/sim-b.yaml, {name: sim-c, backend: sim, options: {noise: 0.8, seed: 3}}]
    aggregate: {json_levels: median}   # json_levels: median | mean; json_list_score: mean | median;
                                       # saer_list_label: median | majority; the rest: strict majority
    min_members: 2                     # default: a majority of the members

"Is this the same judge?" has one answer here: :func:`judge_identity` (what its answers depend on) and
:func:`same_judge` (that, and the same name). Where profiles come from (names under ``judges/``, files, mappings) and
how a notebook opens one: :mod:`recjudge_utils.judge.loading`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter, with_config
from typing_extensions import TypedDict

from recjudge_utils.judge.backends import backend_class, create_backend
from recjudge_utils.judge.backends.batch import BatchOptions
from recjudge_utils.judge.backends.embedded import EmbeddedOptions
from recjudge_utils.judge.backends.openai_compatible import GenerationSettings, OpenAIOptions
from recjudge_utils.judge.backends.sim import SimParameters
from recjudge_utils.judge.client import JudgeClient
from recjudge_utils.judge.panel import PanelClient, PanelMember, member_run_dir
from recjudge_utils.judge.transport import RetryPolicy
from recjudge_utils.paths import current_run_dir

if TYPE_CHECKING:
    from recjudge_utils.judge.backends.base import Backend

__all__ = [
    "PROFILE_CLASSES",
    "BatchProfile",
    "CustomProfile",
    "EmbeddedProfile",
    "JudgeProfile",
    "OpenAIProfile",
    "PanelAggregate",
    "PanelProfile",
    "ProfileError",
    "SimProfile",
    "judge_identity",
    "profile_json_schema",
    "same_judge",
]

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


class ProfileError(ValueError):
    """A judge profile is invalid; the message names the file and the field."""


@with_config(ConfigDict(extra="forbid"))
class Prices(TypedDict):
    """USD per 1M tokens."""

    input: float
    output: float


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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
            "generation": self.generation,
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
    options: SimParameters = SimParameters()

    def backend_options(self, offline: bool = False) -> dict[str, Any]:
        """The error model's parameters."""
        return {"model": self.model, "offline": offline, **self.options.model_dump()}


class CustomProfile(JudgeProfile):
    """A backend registered by a user (``@register_backend``): its options are checked by its constructor."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    options: dict[str, Any] = Field(default_factory=dict)


#: what a panel has none of: each member's profile sets its own
PANEL_UNUSED = ("max_concurrency", "timeout", "retries", "prices", "repair")


def _panel_schema(schema: dict[str, Any]) -> None:
    properties = schema.get("properties", {})
    for name in PANEL_UNUSED:
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


PROFILE_CLASSES: dict[str, type[JudgeProfile]] = {
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
    schema["$comment"] = "generated by: python -m recjudge_utils.judge.profiles_cli --write-schema"
    return schema


#: what a judge's answers do not depend on: the name it goes by, how many calls it makes at once, how long it waits,
#: how often it retries, whether it asks again for bare JSON, and its prices (profiles differing only there make the
#: same calls under the same cache keys)
_NOT_IDENTITY = frozenset({"name", "max_concurrency", "timeout", "retries", "repair", "prices"})


def judge_identity(judge: JudgeProfile | Mapping[str, Any]) -> str:
    """What makes a judge's answers its own: the profile (or the dict a run manifest or plan recorded of one) without
    the fields its answers do not depend on, as canonical JSON."""
    fields = judge.to_dict() if isinstance(judge, JudgeProfile) else dict(judge)
    return json.dumps({k: v for k, v in fields.items() if k not in _NOT_IDENTITY}, sort_keys=True)


def same_judge(a: JudgeProfile | Mapping[str, Any], b: JudgeProfile | Mapping[str, Any]) -> bool:
    """Whether ``a`` and ``b`` are one judge: the same name (tables and run folders name a judge by it) and the same
    :func:`judge_identity` (the same answers). The one rule a run folder, a plan and a panel ask."""

    def name(judge: JudgeProfile | Mapping[str, Any]) -> Any:
        return judge.name if isinstance(judge, JudgeProfile) else judge.get("name")

    return bool(name(a) == name(b) and judge_identity(a) == judge_identity(b))
