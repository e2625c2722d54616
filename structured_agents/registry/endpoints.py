"""Opening the servers a registry binds: ``.pym`` folders, Python modules and MCP servers.

A :class:`ServerSet` holds one registry's servers by route key (``calc:2.0.0``, or a plain
name): :meth:`ServerSet.open` opens one from its :class:`~structured_agents.registry.models.
ServerEndpoint` (a ``.pym`` folder is scanned, a Python module imported, an MCP server only
described: it starts in :meth:`ServerSet.aconnect`, since its tools are known only once it
answers). :meth:`ServerSet.backend` is the backend that runs their tools: the ``.pym``
backend given (shared with the bundle, under its limits and grants), one Python backend per
module, and one MCP backend for every MCP server, routed by route key.

Bundles use it for the servers their manifest declares (``registries:``) and for the servers
of the registry files they use, so both are opened the same way.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from structured_agents.errors import ToolError
from structured_agents.pym.externals import ExternalRegistry
from structured_agents.pym.loader import ScriptLoader
from structured_agents.registry.errors import Loc, RegistryError
from structured_agents.registry.models import ServerEndpoint
from structured_agents.registry.registry import Registry
from structured_agents.registry.served import Server
from structured_agents.tools.composite import CompositeBackend
from structured_agents.tools.grail import GrailBackend, GrailRegistry
from structured_agents.tools.protocol import ToolBackend
from structured_agents.tools.python import PythonBackend, PythonRegistry

if TYPE_CHECKING:
    from structured_agents.tools.mcp import MCPRegistry

__all__ = ["ServerSet"]

_PYTHONS = frozenset({"python", "python3"})


class ServerSet:
    """The opened servers of one registry, by route key; MCP servers connect in :meth:`aconnect`."""

    def __init__(self, *, loader: ScriptLoader, externals: ExternalRegistry, grants: Collection[str]) -> None:
        self.loader = loader
        self.externals = externals
        self.grants = tuple(grants)
        self.servers: dict[str, Server] = {}
        """Every opened server by route key (MCP servers once connected)."""
        self._python: dict[str, ToolBackend] = {}
        self._mcp: list[MCPRegistry] = []
        self._where: dict[str, Loc] = {}
        self._connected = False

    @property
    def needs_connect(self) -> bool:
        """Whether some server is an MCP server, whose tools are known only once connected."""
        return bool(self._mcp)

    def open(self, key: str, endpoint: ServerEndpoint, base: Path, loc: Loc = ()) -> None:
        """Open the server at ``endpoint`` (paths relative to ``base``) under route key ``key``;
        RegistryError at ``loc`` when its folder or module is missing."""
        if key in self.servers or any(r.name == key for r in self._mcp):
            raise RegistryError(f"server {key!r} is declared twice", loc)
        if endpoint.pym is not None:
            root = base / endpoint.pym
            if not root.is_dir():
                raise RegistryError(f"no such folder {root}", (*loc, "pym"))
            registry = GrailRegistry(
                root, name=key, loader=self.loader, externals=self.externals, grants=self.grants
            )
            self.servers[key] = Server(registry, "grail")
        elif endpoint.python is not None:
            python = _python_registry(endpoint.python, (*loc, "python"))
            self._python[f"python:{key}"] = PythonBackend(python)
            self.servers[key] = Server(python, f"python:{key}")
        else:
            self._mcp.append(_mcp_registry(key, endpoint, base))
            self._where[key] = loc

    def open_routes(self, registry: Registry) -> None:
        """Open every server version a tool of ``registry`` is routed to (from its ``endpoint``);
        RegistryError (located in the registry's file) when one has none, or cannot open."""
        servers = registry.document.servers
        try:
            for index, name in enumerate(registry.list_tools()):
                compiled = registry.compiled(name)
                route = compiled.route if compiled is not None else None
                if route is None or route.key in self.servers or route.key in self._where:
                    continue
                definition = route.definition
                if definition is None or definition.endpoint is None:
                    raise RegistryError(
                        f"tool {name!r} is routed to server {route.key!r}, which has no endpoint to start it",
                        ("tools", index, "source", "server"),
                    )
                where = ("servers", servers.index(definition), "endpoint")
                base = registry.base if registry.base is not None else Path()
                self.open(route.key, definition.endpoint, base, where)
        except RegistryError as exc:
            raise registry.locate(exc) from None

    def backend(
        self, grail: GrailBackend, extra: Mapping[str, ToolBackend] | None = None
    ) -> CompositeBackend:
        """The backend of every opened server (and ``extra`` ones), ``grail`` running context providers."""
        backends: dict[str, ToolBackend] = {"grail": grail, **self._python, **(extra or {})}
        if self._mcp:
            from structured_agents.tools.mcp import MCPBackend

            backends["mcp"] = MCPBackend(self._mcp)
        return CompositeBackend(backends, providers=grail)

    async def aconnect(self) -> None:
        """Start and connect every MCP server (all or none: a failure closes those started, and is
        a RegistryError at the server's location)."""
        if self._connected:
            return
        connected: list[MCPRegistry] = []
        for registry in self._mcp:
            try:
                await registry.aconnect()
            except ToolError as exc:
                for started in connected:
                    await started.aclose()
                raise RegistryError(str(exc), self._where[registry.name]) from None
            connected.append(registry)
        for registry in self._mcp:
            self.servers[registry.name] = Server(registry, "mcp")
        self._connected = True

    async def aclose(self) -> None:
        """Stop the MCP servers."""
        for registry in self._mcp:
            await registry.aclose()
            self.servers.pop(registry.name, None)
        self._connected = False


def _python_registry(module_name: str, loc: Loc) -> PythonRegistry:
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise RegistryError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}", loc) from None
    registry = getattr(module, "registry", None)
    if not isinstance(registry, PythonRegistry):
        raise RegistryError(f"{module_name} has no PythonRegistry named 'registry'", loc)
    return registry


def _mcp_registry(key: str, endpoint: ServerEndpoint, base: Path) -> MCPRegistry:
    from structured_agents.tools.mcp import MCPRegistry

    if endpoint.command is None:
        assert endpoint.url is not None  # a ServerEndpoint has exactly one kind
        return MCPRegistry.http(key, endpoint.url)
    command, *args = endpoint.command
    if command in _PYTHONS:
        command = sys.executable
    return MCPRegistry.stdio(key, command, args, env=endpoint.env or None, cwd=base)
