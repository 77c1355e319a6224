"""Judge backends, registered by name.

=============  ==========================================================================================
name           module
=============  ==========================================================================================
``openai``     :mod:`.openai_compatible`: any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, ...)
``embedded``   :mod:`.embedded`: SmolLM2-135M-Instruct served on this machine by llama.cpp (the default)
``batch``      :mod:`.batch`: the OpenAI Batch API (half price, answers within the completion window)
``sim``        :mod:`.sim`: a simulated judge of known quality that answers from the attached truth
=============  ==========================================================================================

What every backend implements, and the prepared HTTP call (``PreparedCall``) a chat backend sends, are in
:mod:`.base`. Adding a backend is one module: subclass :class:`~.base.Backend` (or :class:`~.base.ChatBackend` for a
request/response API), decorate it with ``@register_backend("name")`` and list the module in
``BACKENDS``'s ``lazy`` table (or import it before use). Judge profiles name the backend with ``backend: name``; a
backend declares the options a profile gives it as its ``options_model`` (a :class:`~.base.BackendOptions`), which the
registry hands to the profile (:func:`backend_options_model`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from recjudge_utils.registry import Registry

if TYPE_CHECKING:
    from recjudge_utils.judge.backends.base import Backend, BackendOptions

__all__ = [
    "BACKENDS",
    "backend_class",
    "backend_names",
    "backend_options_model",
    "create_backend",
    "register_backend",
]

BACKENDS: Registry[type[Backend]] = Registry(
    "judge backend",
    lazy={
        "openai": f"{__name__}.openai_compatible",
        "embedded": f"{__name__}.embedded",
        "batch": f"{__name__}.batch",
        "sim": f"{__name__}.sim",
    },
)


def register_backend(name: str) -> Callable[[type[Backend]], type[Backend]]:
    """Class decorator: make a backend available as ``name`` (a second class under one name is an error)."""
    return BACKENDS.decorator(name)


def backend_names() -> list[str]:
    """Every known backend name (built-in and registered), sorted."""
    return sorted(BACKENDS)


def backend_class(name: str) -> type[Backend]:
    """The backend class registered as ``name`` (importing its built-in module on first use)."""
    return BACKENDS[name]


def backend_options_model(name: str) -> type[BackendOptions] | None:
    """The options model of the backend registered as ``name`` (None: its constructor checks its options)."""
    return backend_class(name).options_model


def create_backend(name: str, **options: object) -> Backend:
    """Instantiate the backend registered as ``name`` with its keyword options."""
    return backend_class(name)(**options)
