"""Families of pluggable things by name (model plugins, tasks): built-ins imported lazily,
more registered at run time, no if/else on names anywhere."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from typing import Generic, TypeVar

__all__ = ["Named"]

T = TypeVar("T")


class Named(Generic[T]):
    """Factories of one family by case-insensitive name.

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
        self._registered: dict[str, Callable[[], T]] = {}
        self._lock = threading.Lock()

    def register(self, name: str, factory: Callable[[], T], *, replace: bool = False) -> None:
        """Register a factory (a class or any zero-argument callable) under ``name``."""
        key = name.strip().lower()
        if not key:
            raise ValueError(f"{self.family} name must not be empty")
        with self._lock:
            if not replace and (key in self._registered or key in self._builtins):
                raise ValueError(f"a {self.family} named {key!r} is already registered (pass replace=True)")
            self._registered[key] = factory

    def names(self) -> list[str]:
        """Every name :meth:`get` can build."""
        return sorted(set(self._builtins) | set(self._registered))

    def get(self, name: str) -> T:
        """A new instance of what is registered as ``name``."""
        key = name.strip().lower()
        factory = self._registered.get(key)
        if factory is None and key in self._builtins:
            module_name, _, attr = self._builtins[key].partition(":")
            factory = getattr(importlib.import_module(module_name), attr)
        if factory is None:
            raise self._unknown(name, self.names())
        return factory()
