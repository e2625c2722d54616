"""Plugin registry: plugins by name, built-ins loaded lazily, no if/else on names."""

from __future__ import annotations

from collections.abc import Callable

from structured_agents.errors import PluginNotFoundError
from structured_agents.named import Named
from structured_agents.plugins.protocol import ModelPlugin

__all__ = ["available_plugins", "get_plugin", "register_plugin"]

PluginFactory = Callable[[], ModelPlugin]

_PLUGINS: Named[[], ModelPlugin] = Named(
    "plugin",
    {
        "function_gemma": "structured_agents.plugins.function_gemma.plugin:FunctionGemmaPlugin",
        "qwen": "structured_agents.plugins.qwen.plugin:QwenPlugin",
        "python_docstring": "structured_agents.plugins.python_docstring.plugin:PythonDocstringPlugin",
    },
    lambda name, known: PluginNotFoundError(f"unknown model plugin {name!r}; available: {', '.join(known)}"),
)


def register_plugin(name: str, factory: PluginFactory, *, replace: bool = False) -> None:
    """Register a plugin factory (a class or any zero-argument callable) under ``name``."""
    _PLUGINS.register(name, factory, replace=replace)


def available_plugins() -> list[str]:
    """Names of every plugin that ``get_plugin`` can build."""
    return _PLUGINS.names()


def get_plugin(name: str) -> ModelPlugin:
    """A new instance of the plugin registered as ``name`` (case-insensitive)."""
    return _PLUGINS.get(name)
