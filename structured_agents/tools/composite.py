"""Several registries as one, and one backend that routes calls to several.

Name clashes (:class:`CompositeRegistry`)
    A tool name that two registries provide is an error when it is resolved, naming both
    registries, unless the caller qualifies it with the registry name (``"grail:read_file"``)
    or the composite was built with ``on_conflict="first"`` (the earlier registry wins). A
    qualified name is only recognised when its prefix is the name of one of the registries;
    the resolved schema keeps the plain tool name, which is what the model calls and the
    backend runs, so resolving two tools of the same plain name together is an error too.

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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from structured_agents.context import RunContext
from structured_agents.errors import ConfigError, ToolError, ToolNotFoundError
from structured_agents.tools.protocol import ToolBackend, ToolRegistry
from structured_agents.types import ToolCall, ToolResult, ToolSchema

__all__ = ["QUALIFIER", "CompositeBackend", "CompositeRegistry", "ContextProviderRunner"]

QUALIFIER = ":"
"""Separates a registry name from a tool name in a qualified name: ``"python:add"``."""


class CompositeRegistry:
    """Resolves tools from several registries; see the module docstring for name clashes."""

    def __init__(
        self,
        registries: Sequence[ToolRegistry],
        *,
        name: str = "composite",
        on_conflict: Literal["error", "first"] = "error",
    ) -> None:
        names = [r.name for r in registries]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigError(f"CompositeRegistry.registries: duplicate registry names {duplicates}")
        if on_conflict not in ("error", "first"):
            raise ConfigError(
                f"CompositeRegistry.on_conflict must be 'error' or 'first', got {on_conflict!r}"
            )
        self.name = name
        self.on_conflict = on_conflict
        self._registries = {r.name: r for r in registries}

    def _split(self, tool_name: str) -> tuple[ToolRegistry, str] | None:
        prefix, sep, rest = tool_name.partition(QUALIFIER)
        registry = self._registries.get(prefix) if sep else None
        return (registry, rest) if registry is not None else None

    def list_tools(self) -> list[str]:
        """Every resolvable name: plain names, and qualified ones for tools that clash."""
        providers: dict[str, list[str]] = {}
        for reg_name, registry in self._registries.items():
            for tool in registry.list_tools():
                providers.setdefault(tool, []).append(reg_name)
        out: list[str] = []
        for tool, regs in providers.items():
            if len(regs) == 1 or self.on_conflict == "first":
                out.append(tool)
            else:
                out.extend(f"{reg}{QUALIFIER}{tool}" for reg in regs)
        return out

    def resolve(self, tool_name: str) -> ToolSchema | None:
        """The schema of one tool, plain or qualified; ToolError if a plain name is ambiguous."""
        qualified = self._split(tool_name)
        if qualified is not None:
            return qualified[0].resolve(qualified[1])
        hits = [(n, s) for n, r in self._registries.items() if (s := r.resolve(tool_name)) is not None]
        if len(hits) > 1 and self.on_conflict == "error":
            names = " and ".join(repr(n) for n, _ in hits)
            raise ToolError(
                f"tool {tool_name!r} is provided by registries {names}; qualify it "
                f"(e.g. '{hits[0][0]}{QUALIFIER}{tool_name}') or use on_conflict='first'"
            )
        return hits[0][1] if hits else None

    def resolve_all(self, tool_names: Sequence[str]) -> list[ToolSchema]:
        """Schemas in order; ToolNotFoundError lists every missing name, ToolError a clash."""
        found = [(n, self.resolve(n)) for n in tool_names]
        missing = [n for n, s in found if s is None]
        if missing:
            raise ToolNotFoundError(
                f"no registry provides {', '.join(map(repr, missing))} "
                f"(searched {', '.join(self._registries) or 'no registries'} in {self.name!r})"
            )
        schemas = [s for _, s in found if s is not None]
        plain = [s.name for s in schemas]
        twice = sorted({n for n in plain if plain.count(n) > 1})
        if twice:
            raise ToolError(
                f"{self.name!r} would offer more than one tool named {', '.join(map(repr, twice))}"
            )
        return schemas


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
