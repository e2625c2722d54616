"""Tools: registries say which tools exist, backends run them, a source joins the two.

==========================  ==============================================================
``ToolRegistry``            protocol: ``list_tools`` / ``resolve``
``resolve_all``             names to schemas for any registry; the one "no such tool" error
``ToolBackend``             protocol: ``execute(call, schema, context)``, never raises
``ToolSource``              protocol the kernel uses: ``tools()`` and ``execute(call, context)``
``GrailRegistry/Backend``   ``.pym`` scripts run in the pydantic-monty sandbox
``PythonRegistry/Backend``  Python callables, schemas from signatures and docstrings
``MCPRegistry/Backend``     tools of an MCP server over stdio or streamable HTTP
``CompositeBackend``        routes by ``ToolSchema.backend``, runs context providers
``RegistryBackendToolSource``  a registry plus a backend as a ``ToolSource``
==========================  ==============================================================

These are the servers and backends of the one tool registry (:mod:`structured_agents.registry`):
a registry document names the tools it offers and the server each comes from.

The MCP names are imported on first use: importing ``mcp`` costs about half a second.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from structured_agents.tools.composite import CompositeBackend, ContextProviderRunner
from structured_agents.tools.grail import GrailBackend, GrailRegistry
from structured_agents.tools.protocol import ToolBackend, ToolRegistry, ToolSource
from structured_agents.tools.python import PythonBackend, PythonRegistry, PythonTool
from structured_agents.tools.resolve import resolve_all
from structured_agents.tools.source import RegistryBackendToolSource

if TYPE_CHECKING:
    from structured_agents.tools.mcp import MCPBackend, MCPRegistry

__all__ = [
    "CompositeBackend",
    "ContextProviderRunner",
    "GrailBackend",
    "GrailRegistry",
    "MCPBackend",
    "MCPRegistry",
    "PythonBackend",
    "PythonRegistry",
    "PythonTool",
    "RegistryBackendToolSource",
    "ToolBackend",
    "ToolRegistry",
    "ToolSource",
    "resolve_all",
]

_LAZY = {
    "MCPBackend": "structured_agents.tools.mcp",
    "MCPRegistry": "structured_agents.tools.mcp",
}


def __getattr__(name: str) -> Any:
    """Import the lazily exported names on first access."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
