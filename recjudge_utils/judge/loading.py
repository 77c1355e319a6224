"""Where a judge comes from: a profile name (a file under ``judges/``), a YAML path, a mapping, or a model name alone.

:func:`load_profile` accepts a profile name, a path, a mapping (what the book runner passes to every notebook as the
``judge`` parameter) or a :class:`~recjudge_utils.judge.profile.JudgeProfile`, and validates it once against its
backend's profile class (:mod:`recjudge_utils.judge.profile`, the schema); a bad field fails with one message naming
the file and the field. It also resolves a panel's members (names, paths relative to the panel's file, inline
profiles) and refuses a panel with the same judge twice or simulated judges beside LLM judges.

:func:`open_judge` is how a notebook opens its judge (loaded, its key checked, its run folder made, its client opened
in the book runner's mode); :func:`client_for` opens a client from a model name alone. Checking profiles and writing
their JSON Schema from the command line: :mod:`recjudge_utils.judge.profiles_cli`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from recjudge_utils.judge.backends import backend_names, backend_options_model
from recjudge_utils.judge.client import JudgeClient
from recjudge_utils.judge.panel import PanelClient
from recjudge_utils.judge.profile import (
    PANEL_UNUSED,
    PROFILE_CLASSES,
    CustomProfile,
    JudgeProfile,
    PanelProfile,
    ProfileError,
    judge_identity,
)
from recjudge_utils.judge.transport import RetryPolicy
from recjudge_utils.paths import ensure_run_dir, project_root, run_mode

__all__ = ["client_for", "load_profile", "open_judge", "profile_dir"]


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
    unused = [k for k in PANEL_UNUSED if k in data]
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
        identity = judge_identity(m)
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
    model_cls = PROFILE_CLASSES.get(backend)
    if model_cls is None:
        if backend not in backend_names():
            known = ", ".join(sorted({*backend_names(), *PROFILE_CLASSES}))
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
    if isinstance(profile, CustomProfile):
        _check_custom_options(profile, source)
    profile._source = source
    return profile


def _check_custom_options(profile: CustomProfile, source: str) -> None:
    """A registered backend's options against the options model it declares (none: its constructor checks them)."""
    options_model = backend_options_model(profile.backend)
    if options_model is None:
        return
    try:
        options_model.model_validate(profile.options)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = {**error, "loc": ("options", *error["loc"])}
        raise ProfileError(f"{source}: {_describe(where, CustomProfile)}") from None


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
