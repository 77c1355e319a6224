"""Judge profiles: one YAML file per judge, naming everything a rerun with that judge needs.

A profile (shipped examples under ``judges/`` in the repository)::

    name: gpt-4o-mini            # how tables and run folders name this judge
    backend: openai              # registry name: openai | batch | embedded | sim (default: from model/batch)
    model: gpt-4o-mini
    base_url: https://api.openai.com/v1
    api_key_env: OPENAI_API_KEY  # the NAME of the environment variable holding the key; never the key
    max_concurrency: 8           # requests in flight
    batch: false                 # true: the OpenAI Batch API route (half price)
    json_mode: auto              # auto | json_schema | json_object | llama_schema | none
    logprobs: auto               # auto | true | false
    timeout: 120                 # seconds per request
    retries: 6                   # retries after the first attempt on 429/5xx/timeouts
    prices: {input: 0.15, output: 0.60}   # USD per 1M tokens (None: the built-in table)
    options: {}                  # backend-specific (embedded: server settings; sim: its error model; batch: polling)

:func:`load_profile` accepts a profile name (a file under ``judges/``), a path, a mapping (what the book runner
passes to every notebook as the ``judge`` parameter) or a :class:`JudgeProfile`. A bad profile fails with one
message naming the file and the field: an unknown key, a wrong type, a missing key variable and, with
:meth:`JudgeProfile.check`, an endpoint that does not answer a preflight call or a model it does not list.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import yaml

from recjudge_utils.judge.backends import backend_names
from recjudge_utils.paths import project_root

if TYPE_CHECKING:  # the client imports the backends, which the profiles only name: import it where it is built
    from recjudge_utils.judge.client import JudgeClient

__all__ = ["JudgeProfile", "ProfileError", "load_profile", "open_judge", "profile_dir"]

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


class ProfileError(ValueError):
    """A judge profile is invalid; the message names the file and the field."""


@dataclass(frozen=True)
class JudgeProfile:
    """Everything that decides who judges and how (see the module docstring for the fields)."""

    name: str = "embedded"
    backend: str | None = None
    model: str = "local"
    base_url: str | None = None
    api_key_env: str | None = "OPENAI_API_KEY"
    max_concurrency: int = 4
    batch: bool = False
    json_mode: str = "auto"
    logprobs: bool | str = "auto"
    timeout: float | None = None
    retries: int = 6
    prices: Mapping[str, float] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    source: str = field(default="<dict>", compare=False)

    @property
    def backend_name(self) -> str:
        if self.backend:
            return self.backend
        if self.batch:
            return "batch"
        return "embedded" if self.model == "local" else "openai"

    def to_dict(self) -> dict[str, Any]:
        """The profile as the runner passes it to notebooks and writes it to manifests (no secret in it)."""
        out = asdict(self)
        out["options"] = dict(self.options)
        out["prices"] = None if self.prices is None else dict(self.prices)
        out.pop("source")
        return out

    # -- checks ------------------------------------------------------------------------------------------
    def _needs_key(self) -> bool:
        if self.backend_name not in ("openai", "batch"):
            return False
        host = urlparse(self.base_url or "https://api.openai.com/v1").hostname or ""
        return host not in _LOOPBACK

    def check(self, preflight: bool = False) -> None:
        """Raise :class:`ProfileError` when the key variable is missing, or (``preflight``) the endpoint does not
        answer or does not list the model."""
        if self._needs_key():
            if not self.api_key_env:
                raise ProfileError(f"{self.source}: field 'api_key_env' must name the environment variable of the key")
            if not os.environ.get(self.api_key_env):
                raise ProfileError(
                    f"{self.source}: field 'api_key_env': the environment variable {self.api_key_env} is not set "
                    f"(export it before running; the key is read from the environment only)"
                )
        if preflight:
            from recjudge_utils.judge.backends import create_backend

            backend = create_backend(self.backend_name, **self.backend_options())
            try:
                backend.preflight()
            except Exception as exc:
                field_name = "model" if "does not list model" in str(exc) else "base_url"
                raise ProfileError(f"{self.source}: field {field_name!r}: {exc}") from None
            finally:
                backend.close()

    # -- construction ------------------------------------------------------------------------------------
    def backend_options(self, offline: bool = False) -> dict[str, Any]:
        name = self.backend_name
        opts: dict[str, Any] = {"model": self.model, "offline": offline}
        if name in ("openai", "batch", "embedded"):
            opts.update(
                api_key_env=self.api_key_env or "OPENAI_API_KEY",
                max_concurrency=self.max_concurrency,
                json_mode=self.json_mode,
                logprobs=self.logprobs,
                timeout=self.timeout,
            )
            if name == "embedded":
                opts["server_options"] = dict(self.options)
            else:
                opts["base_url"] = self.base_url
                opts.update(self.options)
        else:
            opts.update(self.options)
        return opts

    def client(self, offline: bool = False, **overrides: Any) -> JudgeClient:
        """A :class:`~recjudge_utils.judge.client.JudgeClient` for this profile (``offline``: cache only)."""
        from recjudge_utils.judge.backends import create_backend
        from recjudge_utils.judge.client import JudgeClient

        pricing = {self.model_for_prices(): dict(self.prices)} if self.prices is not None else None
        backend = create_backend(self.backend_name, **self.backend_options(offline=offline))
        kwargs: dict[str, Any] = {"max_retries": self.retries, "pricing": pricing, "offline": offline}
        kwargs.update(overrides)
        client = JudgeClient(backend=backend, **kwargs)
        client.profile_name = self.name
        return client

    def model_for_prices(self) -> str:
        return "local" if self.backend_name == "embedded" else self.model


def profile_dir() -> Path | None:
    """``judges/`` of the repository checkout, where the shipped profiles live."""
    root = project_root()
    return root / "judges" if root is not None and (root / "judges").is_dir() else None


_TYPES: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "backend": (str, type(None)),
    "model": (str,),
    "base_url": (str, type(None)),
    "api_key_env": (str, type(None)),
    "max_concurrency": (int,),
    "batch": (bool,),
    "json_mode": (str,),
    "logprobs": (bool, str),
    "timeout": (int, float, type(None)),
    "retries": (int,),
    "prices": (dict, type(None)),
    "options": (dict,),
}


def _from_mapping(data: Mapping[str, Any], source: str) -> JudgeProfile:
    known = {f.name for f in fields(JudgeProfile)} - {"source"}
    for key in data:
        if key not in known:
            raise ProfileError(f"{source}: unknown field {key!r} (known: {', '.join(sorted(known))})")
    for key, value in data.items():
        if not isinstance(value, _TYPES[key]) or (isinstance(value, bool) and bool not in _TYPES[key]):
            want = " or ".join(t.__name__ for t in _TYPES[key])
            raise ProfileError(f"{source}: field {key!r} must be {want}, not {value!r}")
    profile = JudgeProfile(**dict(data), source=source)
    if profile.backend_name not in backend_names():
        raise ProfileError(
            f"{source}: field 'backend': unknown backend {profile.backend!r} ({', '.join(backend_names())})"
        )
    if profile.max_concurrency < 1:
        raise ProfileError(f"{source}: field 'max_concurrency' must be at least 1")
    if profile.json_mode not in ("auto", "json_schema", "json_object", "llama_schema", "none"):
        raise ProfileError(f"{source}: field 'json_mode': unknown mode {profile.json_mode!r}")
    if isinstance(profile.logprobs, str) and profile.logprobs != "auto":
        raise ProfileError(f"{source}: field 'logprobs' must be auto, true or false")
    if profile.prices is not None and not {"input", "output"} <= set(profile.prices):
        raise ProfileError(f"{source}: field 'prices' needs 'input' and 'output' (USD per 1M tokens)")
    if profile.batch and profile.backend not in (None, "batch"):
        raise ProfileError(f"{source}: field 'batch': true needs backend 'batch' (or no backend)")
    if profile.backend_name == "embedded" and profile.base_url is not None:
        raise ProfileError(f"{source}: field 'base_url': the embedded judge serves itself; leave base_url empty")
    return profile


def load_profile(spec: str | Path | Mapping[str, Any] | JudgeProfile | None = None, **overrides: Any) -> JudgeProfile:
    """A judge profile from a name (``judges/<name>.yaml``), a YAML path, a mapping or a profile; ``overrides``
    replace single fields (e.g. ``max_concurrency=1``). None is the embedded default judge."""
    if spec is None:
        spec = "embedded"
    if isinstance(spec, JudgeProfile):
        profile = spec
    elif isinstance(spec, Mapping):
        profile = _from_mapping(spec, "judge profile")
    else:
        path = Path(spec)
        if path.suffix not in (".yaml", ".yml") and not path.exists():
            folder = profile_dir()
            candidate = folder / f"{spec}.yaml" if folder else None
            if candidate is not None and candidate.is_file():
                path = candidate
            elif str(spec) == "embedded":
                return replace(JudgeProfile(name="embedded", max_concurrency=1), **overrides)
            else:
                known = sorted(p.stem for p in folder.glob("*.yaml")) if folder else []
                raise ProfileError(
                    f"no judge profile {str(spec)!r} (known: {', '.join(known) or 'none'}; or give a path)"
                )
        if not path.is_file():
            raise ProfileError(f"{path}: no such judge profile file")
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise ProfileError(f"{path}: not valid YAML ({exc})") from None
        if not isinstance(data, dict):
            raise ProfileError(f"{path}: a judge profile is a YAML mapping of fields")
        profile = _from_mapping(data, str(path))
    return _from_mapping({**profile.to_dict(), **overrides}, profile.source) if overrides else profile


def open_judge(spec: str | Path | Mapping[str, Any] | JudgeProfile | None = None, **client_options: Any) -> JudgeClient:
    """Load a profile, check it, and open its client (``client_options``: run_name, progress, ...).

    The book runner's modes reach the notebooks through the environment: ``RECJUDGE_PLAN`` (``--plan``: record every
    request, call nothing) and ``RECJUDGE_OFFLINE=1`` (``--replay``: answer only from the imported archive).
    """
    profile = load_profile(spec)
    if os.environ.get("RECJUDGE_PLAN"):
        from recjudge_utils.judge.backends import create_backend
        from recjudge_utils.judge.client import JudgeClient
        from recjudge_utils.judge.planning import PlanBackend

        inner = create_backend(profile.backend_name, **profile.backend_options(offline=True))
        plan_cache = Path(os.environ["RECJUDGE_PLAN"]) / "plan-answers.sqlite"
        client = JudgeClient(backend=PlanBackend(inner), cache_path=plan_cache, **client_options)
        client.profile_name = profile.name
        return client
    offline = os.environ.get("RECJUDGE_OFFLINE") == "1"
    if not offline:
        profile.check()
    return profile.client(offline=offline, **client_options)
