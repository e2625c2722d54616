"""The backend of a registry's server tools: arguments in, server call, output back.

:class:`SourceBackend` wraps the backend that really reaches servers (an
:class:`~structured_agents.tools.mcp.MCPBackend` whose registries are named by route key,
``doc-service:1.2.0``) and is registered in a
:class:`~structured_agents.tools.composite.CompositeBackend` under ``mcp`` in its place. For a
tool of its registry it merges defaults and hidden fields into the arguments, validates them,
calls the server's own tool name on the routed server, and transforms and validates the
output; the result keeps the call's id and the registry tool's name. Any other schema is
passed to the wrapped backend unchanged, so plain MCP registries can share it.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from structured_agents.context import RunContext
from structured_agents.errors import ToolExecutionError
from structured_agents.tools.protocol import ToolBackend
from structured_agents.types import ToolCall, ToolResult, ToolSchema

if TYPE_CHECKING:
    from structured_agents.registry_v2.registry import RegistryV2

__all__ = ["SourceBackend"]


class SourceBackend:
    """Runs a registry's ``source`` tools on ``inner`` (a ToolBackend; never raises)."""

    def __init__(self, registry: RegistryV2, inner: ToolBackend) -> None:
        self.registry = registry
        self.inner = inner

    async def execute(self, call: ToolCall, schema: ToolSchema, context: RunContext) -> ToolResult:
        """Run one call; invalid arguments or outputs are error results."""
        compiled = self.registry.compiled(schema.name)
        source = compiled.definition.source if compiled is not None else None
        if compiled is None or source is None or compiled.schema != schema:
            return await self.inner.execute(call, schema, context)
        try:
            arguments = compiled.arguments(call.arguments)
        except ToolExecutionError as exc:
            return ToolResult(call.id, call.name, str(exc), True)
        server_schema = dataclasses.replace(schema, name=source.tool, parameters=compiled.full_parameters)
        result = await self.inner.execute(
            ToolCall(name=source.tool, arguments=arguments, id=call.id), server_schema, context
        )
        if result.is_error:
            return dataclasses.replace(result, call_id=call.id, name=call.name)
        try:
            return ToolResult(call.id, call.name, compiled.output(result.output))
        except ToolExecutionError as exc:
            return ToolResult(call.id, call.name, str(exc), True)
