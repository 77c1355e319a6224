"""One registry for everything chosen by name: judge backends, recommenders and datasets.

A :class:`Registry` maps names to entries in registration order. A module registers its entry next to its
definition (with :meth:`Registry.decorator` or :meth:`Registry.register`); the package that owns the registry lists
each built-in name with the module that registers it (``lazy``), so that module is imported only when the name is
first looked up and importing the package stays cheap (the torch recommenders, the HTTP backends). An unknown name
raises :class:`UnknownNameError`, which lists the known names and suggests the closest one.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Generic, TypeVar

__all__ = ["Registry", "UnknownNameError", "suggestion"]

T = TypeVar("T")
U = TypeVar("U")


def suggestion(name: str, known: Iterable[str], n: int = 1) -> str:
    """`` (did you mean 'x'?)`` with the up to ``n`` known names closest to ``name``, or an empty string."""
    close = difflib.get_close_matches(name, sorted(known), n=n, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


class UnknownNameError(KeyError):
    """No entry is registered under the name; the message lists the known names and the closest match."""

    def __str__(self) -> str:
        # KeyError's own str() is the repr of its argument, which would quote the whole message
        return str(self.args[0])


class Registry(Mapping[str, T]):
    """Entries of one kind by name, in registration order; ``lazy`` names are imported on first lookup."""

    def __init__(self, kind: str, lazy: Mapping[str, str] | None = None) -> None:
        self.kind = kind
        self._lazy = dict(lazy or {})  # name -> the module that registers it
        self._entries: dict[str, T] = {}
        # built-in names keep their listed order whichever module happens to be imported first
        self._order: list[str] = list(self._lazy)

    def register(self, name: str, entry: T) -> T:
        """Register ``entry`` as ``name`` and return it; another entry under a taken name is an error."""
        known = self._entries.get(name)
        if known is not None and known != entry:
            raise ValueError(f"{self.kind} {name!r} is already registered as {known!r}")
        self._entries[name] = entry
        if name not in self._order:
            self._order.append(name)
        return entry

    def decorator(self, name: str) -> Callable[[T], T]:
        """A decorator registering the decorated object itself (a class or a function) as ``name``."""

        def decorate(entry: T) -> T:
            return self.register(name, entry)

        return decorate

    def __getitem__(self, name: str) -> T:
        if name not in self._entries and name in self._lazy:
            module = self._lazy[name]
            importlib.import_module(module)
            if name not in self._entries:
                raise LookupError(f"module {module} is listed for {self.kind} {name!r} but does not register it")
        if name not in self._entries:
            raise UnknownNameError(
                f"unknown {self.kind} {name!r}; known: {', '.join(self._order)}{suggestion(name, self._order)}"
            )
        return self._entries[name]

    def __contains__(self, name: object) -> bool:
        return name in self._order  # without importing the module that registers it

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._order))

    def __len__(self) -> int:
        return len(self._order)

    def view(self, select: Callable[[T], U | None]) -> Mapping[str, U]:
        """A live read-only mapping name -> ``select(entry)`` over the entries for which it is not None."""
        return _View[T, U](self, select)


class _View(Mapping[str, U], Generic[T, U]):
    """One field of a registry's entries, by name; follows later registrations."""

    def __init__(self, registry: Registry[T], select: Callable[[T], U | None]) -> None:
        self._registry = registry
        self._select = select

    def __getitem__(self, name: str) -> U:
        value = self._select(self._registry[name])
        if value is None:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return (name for name in self._registry if self._select(self._registry[name]) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)
