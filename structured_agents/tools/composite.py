"""One backend that routes calls to several, by ``ToolSchema.backend``.

Several registries become one through a registry document (:mod:`structured_agents.registry`),
whose tools name the server each comes from; this backend runs what they resolve to.

Context providers (:class:`CompositeBackend`)
    ``ToolSchema.context_providers`` are ``.pym`` scripts run, in order, before the tool, by a
    :class:`ContextProviderRunner` (the Grail backend is one); their outputs are prepended to
    the tool's output, separated from it by a blank line. A provider that fails (or that has
    no runner to run it) does not stop the tool: its place holds a ``[context provider ...]``
    note saying why, and the result's ``is_error`` is the tool's own.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from structured_agents.context import RunContext
from structured_agents.errors import ConfigError
from structured_agents.tools.protocol import ToolBackend
from structured_agents.types import ToolCall, ToolResult, ToolSchema

__all__ = ["CompositeBackend", "ContextProviderRunner"]


@runtime_checkable
class ContextProviderRunner(Protocol):
    """Runs one context-provider script; the Grail backend implements it."""

    async def run_script(self, path: Path, inputs: dict[str, Any], context: RunContext) -> ToolResult:
        """Run the script at ``path`` with ``inputs``; failures are error results, not exceptions."""
        ...


class CompositeBackend:
    """Routes each call to the backend named by ``ToolSchema.backend``, context providers first.

    ``timeout`` bounds a whole call (providers and tool together). The call's arguments are the
    providers' inputs; the runner picks the ones a script declares.
    """

    def __init__(
        self,
        backends: Mapping[str, ToolBackend] | None = None,
        *,
        providers: ContextProviderRunner | None = None,
        timeout: float = 60.0,
    ) -> None:
        if timeout <= 0:
            raise ConfigError(f"CompositeBackend.timeout must be > 0, got {timeout!r}")
        self._backends: dict[str, ToolBackend] = dict(backends or {})
        self.providers = providers
        self.timeout = timeout

    def register(self, name: str, backend: ToolBackend) -> None:
        """Route tools whose schema says ``backend=name`` to ``backend``; ConfigError if taken."""
        if name in self._backends:
            raise ConfigError(f"CompositeBackend already has a backend named {name!r}")
        self._backends[name] = backend

    async def execute(self, call: ToolCall, schema: ToolSchema, context: RunContext) -> ToolResult:
        """Run one call through its backend; never raises."""
        try:
            async with asyncio.timeout(self.timeout):
                return await self._execute(call, schema, context)
        except TimeoutError:
            return ToolResult(call.id, call.name, f"{call.name} timed out after {self.timeout:g}s", True)

    async def _execute(self, call: ToolCall, schema: ToolSchema, context: RunContext) -> ToolResult:
        backend = self._backends.get(schema.backend)
        if backend is None:
            known = ", ".join(self._backends) or "(none)"
            message = f"no backend {schema.backend!r} for tool {schema.name}; registered backends: {known}"
            return ToolResult(call.id, call.name, message, True)
        notes = [await self._provide(path, call, context) for path in schema.context_providers]
        try:
            result = await backend.execute(call, schema, context)
        except Exception as exc:  # a backend must not raise; keep the run going anyway
            result = ToolResult(call.id, call.name, f"{call.name} failed: {type(exc).__name__}: {exc}", True)
        prefix = "\n".join(n for n in notes if n)
        return dataclasses.replace(result, output=f"{prefix}\n\n{result.output}") if prefix else result

    async def _provide(self, path: Path, call: ToolCall, context: RunContext) -> str:
        """One provider's output, or a note saying why there is none."""
        if self.providers is None:
            return f"[context provider {path}: not run, no context provider runner configured]"
        try:
            result = await self.providers.run_script(path, dict(call.arguments), context)
        except Exception as exc:  # the runner should return errors; a tool still runs if it raises
            return f"[context provider {path} failed: {type(exc).__name__}: {exc}]"
        return f"[context provider {path} failed: {result.output}]" if result.is_error else result.output
