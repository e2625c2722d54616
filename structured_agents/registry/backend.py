"""The backends of a registry's tools: server tools, and the one backend that runs any of them.

:class:`SourceBackend` runs the tools that come from a server. It wraps the backend that
really reaches servers (a :class:`~structured_agents.tools.composite.CompositeBackend` of the
``.pym``, Python and MCP backends, or any ToolBackend answering by ``ToolSchema.server``,
``doc-service:1.2.0``). For a tool of its registry it builds the arguments (defaults, hidden
and bound fields, validation), calls the server's own tool (:attr:`CompiledTool.target`), and
transforms and validates the output; the result keeps the call's id and the registry tool's
name. Any other schema is passed to the wrapped backend unchanged.

:class:`RegistryBackend` runs every tool of a registry: pipelines on a
:class:`~structured_agents.registry.pipelines.PipelineBackend`, the rest on a SourceBackend.
"""

from __future__ import annotations

import dataclasses

from structured_agents.context import RunContext
from structured_agents.errors import ToolExecutionError
from structured_agents.registry.catalog import ToolCatalog
from structured_agents.registry.pipelines import PipelineBackend
from structured_agents.tools.protocol import ToolBackend
from structured_agents.types import ToolCall, ToolResult, ToolSchema

__all__ = ["RegistryBackend", "SourceBackend"]


class SourceBackend:
    """Runs a registry's server tools on ``inner`` (a ToolBackend; never raises)."""

    def __init__(self, registry: ToolCatalog, inner: ToolBackend) -> None:
        self.registry = registry
        self.inner = inner

    async def execute(self, call: ToolCall, schema: ToolSchema, context: RunContext) -> ToolResult:
        """Run one call; invalid arguments or outputs are error results."""
        compiled = self.registry.compiled(schema.name)
        target = compiled.target if compiled is not None else None
        if compiled is None or target is None or compiled.schema != schema:
            return await self.inner.execute(call, schema, context)
        try:
            arguments = compiled.arguments(call.arguments, context.inputs)
        except ToolExecutionError as exc:
            return ToolResult(call.id, call.name, str(exc), True)
        result = await self.inner.execute(ToolCall(target.name, arguments, call.id), target, context)
        if result.is_error:
            return dataclasses.replace(result, call_id=call.id, name=call.name)
        try:
            return ToolResult(call.id, call.name, compiled.output(result.output))
        except ToolExecutionError as exc:
            return ToolResult(call.id, call.name, str(exc), True)


class RegistryBackend:
    """Runs any tool of a registry: its pipelines with ``pipelines``, the rest with ``sources``."""

    def __init__(self, registry: ToolCatalog, sources: SourceBackend, pipelines: PipelineBackend) -> None:
        self.registry = registry
        self.sources = sources
        self.pipelines = pipelines

    async def execute(self, call: ToolCall, schema: ToolSchema, context: RunContext) -> ToolResult:
        """Run one call (never raises)."""
        if self.registry.pipeline(schema.name) is not None:
            return await self.pipelines.execute(call, schema, context)
        return await self.sources.execute(call, schema, context)
