"""Servers a registry is bound to, and the tools they serve.

A registry's tools name their server (``source.server``, routed to ``name:version``). When the
servers are known (:meth:`Registry.bind`), each is a :class:`Server`: the ToolRegistry that
lists its tools (a ``.pym`` folder, a Python module's registry, a connected MCP server,
another registry) and the key of the backend that runs them. Binding looks each tool up on
its server (:func:`served_tool`): the tool's schema then comes from the server when the
registry declares none, and calls run the server's own tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from structured_agents.errors import StructuredAgentsError
from structured_agents.registry.errors import Loc, RegistryError
from structured_agents.tools.protocol import ToolRegistry
from structured_agents.tools.resolve import missing_tools_message
from structured_agents.types import ToolSchema

__all__ = ["ServedTool", "Server", "served_tool"]


@dataclass(frozen=True, slots=True)
class Server:
    """A server's tools and where their calls go."""

    tools: ToolRegistry
    """Lists and resolves the server's tools."""
    backend: str
    """The ``CompositeBackend`` key that runs them: ``grail``, ``python:NAME``, ``mcp``..."""


@dataclass(frozen=True, slots=True)
class ServedTool:
    """A tool as its server lists it, and the backend that runs it."""

    schema: ToolSchema
    """The server's own schema of the tool (its name, parameters, script...)."""
    backend: str
    """Where its calls go (:attr:`Server.backend`)."""


def served_tool(servers: Mapping[str, Server], key: str, tool: str, loc: Loc) -> ServedTool:
    """Tool ``tool`` of the server routed to ``key``; RegistryError (at ``loc``, the tool's
    ``source``) when there is no such server or tool, or the server cannot offer it."""
    server = servers.get(key)
    if server is None:
        known = ", ".join(servers) or "none"
        raise RegistryError(f"no server {key!r} to run {tool!r} (servers: {known})", (*loc, "server"))
    try:
        schema = server.tools.resolve(tool)
    except StructuredAgentsError as exc:  # a broken script: its own diagnostics
        raise RegistryError(f"tool {tool!r} cannot be used: {exc}", (*loc, "tool")) from None
    if schema is None:
        raise RegistryError(missing_tools_message(server.tools, [tool]), (*loc, "tool"))
    return ServedTool(schema, server.backend)
