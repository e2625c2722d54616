"""Real doubles for the registry tests: servers played by Python functions, and a registry loader.

``FunctionServers`` is a ToolBackend standing where an MCPBackend would: it answers a call of
tool ``name`` on the server its schema is routed to (``schema.server``, e.g.
``weather-service:1.4.1``) with the function registered as ``"<route key>/<tool>"``.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from structured_agents.context import RunContext
from structured_agents.registry import Registry
from structured_agents.tools.python import PythonRegistry
from structured_agents.types import JsonDict, ToolCall, ToolResult, ToolSchema

FIXTURES = Path(__file__).parent / "fixtures"


def fixture_registry(name: str = "registry.yaml") -> Registry:
    """A registry loaded from ``fixtures/``."""
    return Registry.from_file(FIXTURES / name)


class FunctionServers:
    """Servers as functions keyed ``"<server:version>/<tool>"``; records every call."""

    def __init__(self, handlers: dict[str, Callable[..., Any]]) -> None:
        self.handlers = handlers
        self.calls: list[tuple[str, str, JsonDict]] = []
        """``(route key, server tool name, arguments)`` of every call, in order."""

    async def execute(self, call: ToolCall, schema: ToolSchema, context: RunContext) -> ToolResult:
        self.calls.append((schema.server or "", call.name, dict(call.arguments)))
        handler = self.handlers.get(f"{schema.server}/{call.name}")
        if handler is None:
            return ToolResult(call.id, call.name, f"no handler for {schema.server}/{call.name}", True)
        try:
            out = handler(**call.arguments)
            if inspect.isawaitable(out):
                out = await out
        except Exception as exc:
            return ToolResult(call.id, call.name, f"{type(exc).__name__}: {exc}", True)
        return ToolResult(call.id, call.name, out if isinstance(out, str) else json.dumps(out))


registry = PythonRegistry("doubles")
"""Python tools a registry file reaches as ``endpoint: {python: registry_doubles}``."""


@registry.tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b
