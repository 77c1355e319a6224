"""Judge backends, registered by name.

=============  ==========================================================================================
name           module
=============  ==========================================================================================
``openai``     :mod:`.openai_compatible`: any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, ...)
``embedded``   :mod:`.embedded`: SmolLM2-135M-Instruct served on this machine by llama.cpp (the default)
``batch``      :mod:`.batch`: the OpenAI Batch API (half price, answers within the completion window)
``sim``        :mod:`.sim`: a simulated judge of known quality that answers from the attached truth
=============  ==========================================================================================

Adding a backend is one module: subclass :class:`~.base.Backend` (or :class:`~.base.ChatBackend` for a
request/response API), decorate it with ``@register_backend("name")`` and list the module in
``_BUILTIN_MODULES`` (or import it before use). Judge profiles name the backend with ``backend: name``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from recjudge_utils.judge.backends.base import Backend

__all__ = ["backend_class", "backend_names", "create_backend", "register_backend"]

_REGISTRY: dict[str, type[Backend]] = {}
_BUILTIN_MODULES = {
    "openai": "openai_compatible",
    "embedded": "embedded",
    "batch": "batch",
    "sim": "sim",
}
B = TypeVar("B", bound="type[Backend]")


def register_backend(name: str) -> Callable[[B], B]:
    """Class decorator: make a backend available as ``name`` (a second class under one name is an error)."""

    def decorate(cls: B) -> B:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"backend {name!r} is already registered by {_REGISTRY[name].__name__}")
        _REGISTRY[name] = cls
        return cls

    return decorate


def backend_names() -> list[str]:
    """Every known backend name (built-in and registered)."""
    return sorted(set(_REGISTRY) | set(_BUILTIN_MODULES))


def backend_class(name: str) -> type[Backend]:
    if name not in _REGISTRY and name in _BUILTIN_MODULES:
        importlib.import_module(f"{__name__}.{_BUILTIN_MODULES[name]}")
    if name not in _REGISTRY:
        raise KeyError(f"unknown judge backend {name!r}; known: {', '.join(backend_names())}")
    return _REGISTRY[name]


def create_backend(name: str, **options: object) -> Backend:
    """Instantiate the backend registered as ``name`` with its keyword options."""
    return backend_class(name)(**options)
