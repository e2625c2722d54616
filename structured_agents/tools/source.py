"""The ToolSource the kernel uses: a registry's tools, run by a backend (and a source as a backend).

:class:`RegistryBackendToolSource` resolves its tools once, at construction (so a registry that
needs a connection, like :class:`~structured_agents.tools.mcp.MCPRegistry`, must be connected
first), and from then on never raises: an unknown tool or a backend that breaks its contract
by raising becomes an error :class:`ToolResult` the model sees.
"""

from __future__ import annotations

from collections.abc import Sequence

from structured_agents.context import RunContext
from structured_agents.tools.protocol import ToolBackend, ToolRegistry, ToolSource
from structured_agents.tools.resolve import resolve_all
from structured_agents.types import ToolCall, ToolResult, ToolSchema

__all__ = ["RegistryBackendToolSource", "ToolSourceBackend"]


class RegistryBackendToolSource:
    """Offers ``tool_names`` (default: every tool of ``registry``) and runs them with ``backend``.

    Raises :class:`~structured_agents.errors.ToolNotFoundError` at construction when a named
    tool is missing, naming all of them; ``execute`` never raises.
    """

    def __init__(
        self, registry: ToolRegistry, backend: ToolBackend, tool_names: Sequence[str] | None = None
    ) -> None:
        self.registry = registry
        self.backend = backend
        names = registry.list_tools() if tool_names is None else list(tool_names)
        self._schemas: dict[str, ToolSchema] = {s.name: s for s in resolve_all(registry, names)}

    def tools(self) -> list[ToolSchema]:
        """The offered tools, in the order they were named (or the registry lists them)."""
        return list(self._schemas.values())

    async def execute(self, call: ToolCall, context: RunContext) -> ToolResult:
        """Run one call; unknown tools and backend exceptions become error results."""
        schema = self._schemas.get(call.name)
        if schema is None:
            available = ", ".join(self._schemas) or "(none)"
            return ToolResult(call.id, call.name, f"unknown tool {call.name}; available: {available}", True)
        try:
            return await self.backend.execute(call, schema, context)
        except Exception as exc:  # a backend must not raise; the run goes on regardless
            return ToolResult(call.id, call.name, f"{call.name} failed: {type(exc).__name__}: {exc}", True)


class ToolSourceBackend:
    """A :class:`ToolSource` as a :class:`ToolBackend`: a call runs as the source's tool of the
    same name (the schema given is not used), so one registry can be a server of another."""

    def __init__(self, source: ToolSource) -> None:
        self.source = source

    async def execute(self, call: ToolCall, schema: ToolSchema, context: RunContext) -> ToolResult:
        """Run ``call`` on the source (never raises: the source does not)."""
        return await self.source.execute(call, context)
