"""Tools from MCP servers: a registry per server connection, a backend that calls them.

:class:`MCPRegistry` holds one connection (``mcp.Client``, over stdio or streamable HTTP) to one
server. Connecting lists the server's tools into a cache; the synchronous
:class:`~structured_agents.tools.protocol.ToolRegistry` methods (``list_tools``, ``resolve``) answer
from that cache and raise :class:`~structured_agents.errors.ToolError` while the registry is
not connected. :meth:`MCPRegistry.refresh` re-lists the tools.

Lifecycle: ``async with MCPRegistry.stdio(...) as registry:`` or ``await registry.aconnect()``
... ``await registry.aclose()``. The connection lives in a task of its own, so connecting and
closing may happen in different tasks (the anyio scopes inside ``mcp.Client`` are entered and
left in that one task). A connection left open is closed when the event loop cancels its task.

:class:`MCPBackend` runs ``backend="mcp"`` tools on the registry named by ``ToolSchema.server``,
with a timeout; the server's ``isError`` results and every exception become error results.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import mcp_types
import pydantic_core
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from structured_agents.context import RunContext
from structured_agents.errors import ConfigError, ToolError
from structured_agents.types import ToolCall, ToolResult, ToolSchema

__all__ = ["MCPBackend", "MCPRegistry", "render_call_result"]

logger = logging.getLogger(__name__)

_MAX_PAGES = 100  # a tools/list paginator that never ends cannot hang connecting


def describe_exception(exc: BaseException) -> str:
    """``Type: message`` of an exception, unwrapping (anyio) exception groups to their leaves."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe_exception(e) for e in exc.exceptions)
    if isinstance(exc, MCPError):
        return f"MCP error {exc.code}: {exc.message}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class MCPRegistry:
    """The tools of one MCP server, as ``ToolSchema(backend="mcp", server=name)``."""

    def __init__(
        self, name: str, server: StdioServerParameters | str, *, connect_timeout: float = 30.0
    ) -> None:
        if not name:
            raise ConfigError("MCPRegistry.name must not be empty")
        if connect_timeout <= 0:
            raise ConfigError(f"MCPRegistry.connect_timeout must be > 0, got {connect_timeout!r}")
        self.name = name
        self.server = server
        self.connect_timeout = connect_timeout
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self._tools: dict[str, ToolSchema] = {}

    @classmethod
    def stdio(
        cls,
        name: str,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        connect_timeout: float = 30.0,
    ) -> MCPRegistry:
        """A server started as a subprocess (``env`` is merged over a minimal default environment)."""
        params = StdioServerParameters(
            command=command, args=list(args), env=dict(env) if env is not None else None, cwd=cwd
        )
        return cls(name, params, connect_timeout=connect_timeout)

    @classmethod
    def http(cls, name: str, url: str, *, connect_timeout: float = 30.0) -> MCPRegistry:
        """A server reached over streamable HTTP at ``url`` (e.g. ``http://127.0.0.1:8000/mcp``)."""
        return cls(name, url, connect_timeout=connect_timeout)

    @property
    def connected(self) -> bool:
        """Whether a connection is open and its tools are cached."""
        return self._client is not None

    async def aconnect(self) -> None:
        """Open the connection and cache the tool list; ToolError if it fails or times out."""
        if self._task is not None:
            raise ToolError(f"MCP registry {self.name!r} is already connected")
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._closing = asyncio.Event()
        task = asyncio.create_task(self._hold(ready), name=f"mcp-connection:{self.name}")
        self._task = task
        try:
            done, _ = await asyncio.wait(
                {ready, task}, timeout=self.connect_timeout, return_when="FIRST_COMPLETED"
            )
        except asyncio.CancelledError:
            await self._abandon(task)
            raise
        if ready in done:
            return
        if task in done:
            self._task = None
            exc = task.exception()
            reason = describe_exception(exc) if exc is not None else "connection ended"
            raise ToolError(f"cannot connect to MCP server {self.name!r}: {reason}") from exc
        await self._abandon(task)
        raise ToolError(
            f"cannot connect to MCP server {self.name!r}: timed out after {self.connect_timeout:g}s"
        )

    async def _abandon(self, task: asyncio.Task[None]) -> None:
        """Stop a connection attempt that will not be used."""
        self._task = None
        task.cancel()
        with contextlib.suppress(BaseException):
            await task

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        """Own the client for the connection's lifetime: enter it, list tools, wait for close."""
        try:
            async with Client(_transport(self.server)) as client:
                self._tools = await self._list(client)
                self._client = client
                ready.set_result(None)
                await self._closing.wait()
        finally:
            self._client = None
            self._tools = {}

    async def _list(self, client: Client) -> dict[str, ToolSchema]:
        tools: dict[str, ToolSchema] = {}
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            for tool in page.tools:
                tools[tool.name] = ToolSchema(
                    name=tool.name,
                    description=tool.description or f"MCP tool {tool.name} of server {self.name}",
                    parameters=dict(tool.input_schema),
                    backend="mcp",
                    server=self.name,
                )
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    async def refresh(self) -> None:
        """List the server's tools again (after the server says its list changed)."""
        self._tools = await self._list(self._require_client())

    async def aclose(self) -> None:
        """Close the connection (stops a stdio server); closing a closed registry does nothing."""
        task, self._task = self._task, None
        if task is None:
            return
        self._closing.set()
        try:
            await task
        except Exception as exc:  # the server may already be gone; closing still succeeded
            logger.debug("closing MCP server %r: %s", self.name, describe_exception(exc))

    async def __aenter__(self) -> MCPRegistry:
        await self.aconnect()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def _require_client(self) -> Client:
        if self._client is None:
            raise ToolError(f"MCP registry {self.name!r} is not connected; call aconnect() first")
        return self._client

    def list_tools(self) -> list[str]:
        """Names of the server's tools, as listed at connect (or the last refresh)."""
        self._require_client()
        return list(self._tools)

    def resolve(self, tool_name: str) -> ToolSchema | None:
        """The schema of one tool, or None."""
        self._require_client()
        return self._tools.get(tool_name)

    async def call_tool(self, tool_name: str, arguments: Mapping[str, Any]) -> mcp_types.CallToolResult:
        """Call a tool on the server (no timeout of its own: :class:`MCPBackend` sets one)."""
        return await self._require_client().call_tool(tool_name, dict(arguments))


def _transport(server: StdioServerParameters | str) -> Any:
    """What ``mcp.Client`` connects to. A stdio server's stderr goes to the process's own stderr
    (``sys.__stderr__``): a Celery worker replaces ``sys.stderr`` with a proxy that has no file
    descriptor, which a subprocess cannot inherit."""
    if isinstance(server, StdioServerParameters):
        return stdio_client(server, errlog=sys.__stderr__ or sys.stderr)
    return server


def _render_block(block: mcp_types.ContentBlock) -> str:
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.EmbeddedResource):
        res = block.resource
        return res.text if isinstance(res, mcp_types.TextResourceContents) else f"[resource {res.uri}]"
    if isinstance(block, mcp_types.ResourceLink):
        return f"[resource link {block.uri}]"
    return f"[{block.type} {block.mime_type}]"  # image, audio: nothing a text model can read


def render_call_result(result: mcp_types.CallToolResult) -> str:
    """The text of a tool result: its content blocks, or its structured content as JSON if none."""
    if result.content:
        return "\n".join(_render_block(block) for block in result.content)
    if result.structured_content is not None:
        return pydantic_core.to_json(result.structured_content).decode()
    return ""


class MCPBackend:
    """Calls ``backend="mcp"`` tools on the connected registry named by ``ToolSchema.server``."""

    def __init__(self, registries: Iterable[MCPRegistry] = (), *, timeout: float = 30.0) -> None:
        if timeout <= 0:
            raise ConfigError(f"MCPBackend.timeout must be > 0, got {timeout!r}")
        self.timeout = timeout
        self._servers: dict[str, MCPRegistry] = {}
        for registry in registries:
            self.register(registry)

    def register(self, registry: MCPRegistry) -> None:
        """Route calls of tools whose ``server`` is ``registry.name`` to it; ConfigError if taken."""
        if registry.name in self._servers:
            raise ConfigError(f"MCPBackend already has a server named {registry.name!r}")
        self._servers[registry.name] = registry

    async def execute(self, call: ToolCall, schema: ToolSchema, context: RunContext) -> ToolResult:
        """Call the tool; the server's error results, exceptions and timeouts are error results."""
        registry = self._servers.get(schema.server or "")
        if registry is None:
            known = ", ".join(self._servers) or "(none)"
            message = f"no MCP server {schema.server!r} for tool {schema.name}; known servers: {known}"
            return ToolResult(call.id, call.name, message, True)
        deadline = asyncio.timeout(self.timeout)
        try:
            async with deadline:
                result = await registry.call_tool(schema.name, call.arguments)
        except Exception as exc:
            if deadline.expired():
                return ToolResult(call.id, call.name, f"{call.name} timed out after {self.timeout:g}s", True)
            return ToolResult(call.id, call.name, describe_exception(exc), True)
        return ToolResult(call.id, call.name, render_call_result(result), result.is_error)
