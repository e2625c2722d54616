"""Tools: registries say which tools exist, backends run them, a source joins the two.

==========================  ==============================================================
``ToolRegistry``            protocol: ``list_tools`` / ``resolve`` / ``resolve_all``
``ToolBackend``             protocol: ``execute(call, schema, context)``, never raises
``ToolSource``              protocol the kernel uses: ``tools()`` and ``execute(call, context)``
``GrailRegistry/Backend``   ``.pym`` scripts run in the pydantic-monty sandbox
``PythonRegistry/Backend``  Python callables, schemas from signatures and docstrings
``MCPRegistry/Backend``     tools of an MCP server over stdio or streamable HTTP
``CompositeRegistry``       several registries, name clashes explicit
``CompositeBackend``        routes by ``ToolSchema.backend``, runs context providers
``RegistryBackendToolSource``  a registry plus a backend as a ``ToolSource``
==========================  ==============================================================

The MCP names are imported on first use: importing ``mcp`` costs about half a second.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from structured_agents.tools.composite import CompositeBackend, CompositeRegistry, ContextProviderRunner
from structured_agents.tools.grail import GrailBackend, GrailRegistry
from structured_agents.tools.protocol import ToolBackend, ToolRegistry, ToolSource
from structured_agents.tools.python import PythonBackend, PythonRegistry, PythonTool
from structured_agents.tools.source import RegistryBackendToolSource

if TYPE_CHECKING:
    from structured_agents.tools.mcp import MCPBackend, MCPRegistry

__all__ = [
    "CompositeBackend",
    "CompositeRegistry",
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
