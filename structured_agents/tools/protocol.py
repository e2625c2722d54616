"""Tool seams: registries say which tools exist, backends run them, a source joins both."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from structured_agents.context import RunContext
from structured_agents.types import ToolCall, ToolResult, ToolSchema

__all__ = ["ToolBackend", "ToolRegistry", "ToolSource"]


@runtime_checkable
class ToolRegistry(Protocol):
    """Resolves tool schemas by name from one source (a folder of .pym, Python callables, MCP)."""

    name: str

    def list_tools(self) -> list[str]:
        """Names of every tool this registry provides."""
        ...

    def resolve(self, tool_name: str) -> ToolSchema | None:
        """The schema of one tool, or None when this registry does not provide it."""
        ...


@runtime_checkable
class ToolBackend(Protocol):
    """Executes tool calls. Failures come back as ``ToolResult(is_error=True)``, never raised."""

    async def execute(self, call: ToolCall, schema: ToolSchema, context: RunContext) -> ToolResult: ...


@runtime_checkable
class ToolSource(Protocol):
    """What the kernel needs: the tools to offer and a way to run a call of one of them."""

    def tools(self) -> list[ToolSchema]:
        """The tools offered to the model, in a stable order."""
        ...

    async def execute(self, call: ToolCall, context: RunContext) -> ToolResult:
        """Run one call; an unknown tool or a failure is an error result, not an exception."""
        ...
