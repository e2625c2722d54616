"""Plugin registry: plugins by name, built-ins loaded lazily, no if/else on names."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable

from structured_agents.errors import PluginNotFoundError
from structured_agents.plugins.protocol import ModelPlugin

__all__ = ["available_plugins", "get_plugin", "register_plugin"]

PluginFactory = Callable[[], ModelPlugin]

# Built-ins as "module:attribute", imported on first use.
_BUILTINS: dict[str, str] = {
    "function_gemma": "structured_agents.plugins.function_gemma.plugin:FunctionGemmaPlugin",
    "qwen": "structured_agents.plugins.qwen.plugin:QwenPlugin",
}
_registered: dict[str, PluginFactory] = {}
_lock = threading.Lock()


def register_plugin(name: str, factory: PluginFactory, *, replace: bool = False) -> None:
    """Register a plugin factory (a class or any zero-argument callable) under ``name``."""
    key = name.strip().lower()
    if not key:
        raise ValueError("plugin name must not be empty")
    with _lock:
        if not replace and (key in _registered or key in _BUILTINS):
            raise ValueError(f"a plugin named {key!r} is already registered (pass replace=True)")
        _registered[key] = factory


def available_plugins() -> list[str]:
    """Names of every plugin that ``get_plugin`` can build."""
    return sorted(set(_BUILTINS) | set(_registered))


def get_plugin(name: str) -> ModelPlugin:
    """A new instance of the plugin registered as ``name`` (case-insensitive)."""
    key = name.strip().lower()
    factory = _registered.get(key)
    if factory is None and key in _BUILTINS:
        module_name, _, attr = _BUILTINS[key].partition(":")
        factory = getattr(importlib.import_module(module_name), attr)
    if factory is None:
        raise PluginNotFoundError(
            f"unknown model plugin {name!r}; available: {', '.join(available_plugins())}"
        )
    return factory()
