"""Families of pluggable things by name (model plugins, tasks, engines): built-ins imported
lazily, more registered at run time, no if/else on names anywhere."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from typing import Generic, ParamSpec, TypeVar

from structured_agents.errors import ConfigError

__all__ = ["Named"]

P = ParamSpec("P")
T = TypeVar("T")


class Named(Generic[P, T]):
    """Factories of one family by case-insensitive name, each called with the family's
    arguments ``P`` (none for plugins and tasks; the engine settings for engines).

    ``builtins`` maps names to ``"module:attribute"`` factories imported on first use;
    ``unknown`` builds the error raised for a name nobody registered (it gets the name and the
    available names).
    """

    def __init__(
        self, family: str, builtins: Mapping[str, str], unknown: Callable[[str, list[str]], Exception]
    ) -> None:
        self.family = family
        self._builtins = dict(builtins)
        self._unknown = unknown
        self._registered: dict[str, Callable[P, T]] = {}
        self._lock = threading.Lock()

    def register(self, name: str, factory: Callable[P, T], *, replace: bool = False) -> None:
        """Register a factory (a class or any callable taking the family's arguments) under ``name``."""
        key = name.strip().lower()
        if not key:
            raise ConfigError(f"{self.family} name must not be empty")
        with self._lock:
            if not replace and (key in self._registered or key in self._builtins):
                raise ConfigError(f"a {self.family} named {key!r} is already registered (pass replace=True)")
            self._registered[key] = factory

    def names(self) -> list[str]:
        """Every name :meth:`get` can build."""
        return sorted(set(self._builtins) | set(self._registered))

    def get(self, name: str, *args: P.args, **kwargs: P.kwargs) -> T:
        """A new instance of what is registered as ``name``, built with ``args``."""
        key = name.strip().lower()
        factory = self._registered.get(key)
        if factory is None and key in self._builtins:
            module_name, _, attr = self._builtins[key].partition(":")
            factory = getattr(importlib.import_module(module_name), attr)
        if factory is None:
            raise self._unknown(name, self.names())
        built: T = factory(*args, **kwargs)
        return built
