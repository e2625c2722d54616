"""A bundle's tools: registries built from the manifest, each tool resolved and adjusted.

Every problem is a :class:`BundleError` naming the manifest file, the line of the offending
entry, and what is wrong (a missing tool lists what its registry has; a broken ``.pym``
script gives its own ``file:line`` diagnostics).

A tool reference can change what the model sees without touching the script: a
``description``, ``inputs_override`` (replaces entries of the schema's ``properties``, keeping
``type: object``), and ``bind``: inputs the model never sees, filled from the job's inputs on
every call (``source``, ``path``...), so a tiny model does not have to copy them. A job without
one of them leaves that input to its default; without a default, the call is an error result.

Backends are routed by ``ToolSchema.backend``: ``grail`` (one backend for every ``.pym``
registry, also the runner of context providers), ``mcp`` (by server name), and
``python:NAME`` (one per Python registry).
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from structured_agents.bundles.echoes import EchoCheck
from structured_agents.bundles.manifest import (
    BundleError,
    BundleManifest,
    GrailRegistrySpec,
    MCPRegistrySpec,
    PythonRegistrySpec,
    ToolReference,
)
from structured_agents.context import RunContext
from structured_agents.errors import StructuredAgentsError
from structured_agents.pym.externals import ExternalRegistry, check_grants
from structured_agents.pym.loader import ScriptLoader
from structured_agents.tools.grail import GrailRegistry
from structured_agents.tools.protocol import ToolBackend, ToolRegistry
from structured_agents.tools.python import PythonBackend, PythonRegistry
from structured_agents.types import JsonDict, ToolCall, ToolResult, ToolSchema
from structured_agents.yaml_lines import LocatedYaml

__all__ = ["BoundTool", "BundleToolSource", "build_registries", "check_script", "resolve_tool"]


@dataclass(frozen=True, slots=True)
class BoundTool:
    """One tool of a bundle: what the model sees and what the backend runs."""

    schema: ToolSchema
    """The schema offered to the model (overrides applied, bound inputs removed)."""
    target: ToolSchema
    """The schema the backend runs (the script's own inputs)."""
    bind: tuple[str, ...] = ()
    """Inputs filled from the job's inputs on every call (a missing one takes its default)."""


class BundleToolSource:
    """The :class:`~structured_agents.tools.protocol.ToolSource` of a bundle; never raises."""

    def __init__(
        self, tools: Sequence[BoundTool], backend: ToolBackend, echoes: EchoCheck | None = None
    ) -> None:
        self._tools = {tool.schema.name: tool for tool in tools}
        self.backend = backend
        self._echoes = echoes

    def tools(self) -> list[ToolSchema]:
        """The tools as the model sees them, in the manifest's order."""
        return [tool.schema for tool in self._tools.values()]

    async def execute(self, call: ToolCall, context: RunContext) -> ToolResult:
        """Run one call with its bound inputs added; problems are error results."""
        tool = self._tools.get(call.name)
        if tool is None:
            offered = ", ".join(self._tools) or "(none)"
            return ToolResult(call.id, call.name, f"unknown tool {call.name}; offered: {offered}", True)
        refusal = self._echoes.refusal(call, context.inputs) if self._echoes is not None else None
        if refusal is not None:
            return ToolResult(call.id, call.name, refusal.message, True, ban=refusal.ban)
        missing = [name for name in tool.bind if name not in context.inputs and name in tool.target.required]
        if missing:
            message = f"{call.name} needs the job input(s) {', '.join(missing)}, which this job lacks"
            return ToolResult(call.id, call.name, message, True)
        bound = {name: context.inputs[name] for name in tool.bind if name in context.inputs}
        full = ToolCall(call.name, {**call.arguments, **bound}, call.id)
        try:
            return await self.backend.execute(full, tool.target, context)
        except Exception as exc:  # a backend must not raise; the run goes on regardless
            return ToolResult(call.id, call.name, f"{call.name} failed: {type(exc).__name__}: {exc}", True)


def check_script(
    path: Path, loader: ScriptLoader, externals: ExternalRegistry, grants: list[str]
) -> str | None:
    """Why the ``.pym`` script at ``path`` cannot run under ``grants``, or None when it can."""
    if not path.is_file():
        return f"no such .pym script {path}"
    try:
        script = loader.load(path)
    except StructuredAgentsError as exc:
        return str(exc)
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror or exc}"
    diagnostics = check_grants(script, externals, grants)
    return "; ".join(str(d) for d in diagnostics) or None


def build_registries(
    manifest: BundleManifest,
    directory: Path,
    located: LocatedYaml,
    *,
    loader: ScriptLoader,
    externals: ExternalRegistry,
) -> tuple[dict[str, ToolRegistry], dict[str, ToolBackend], list[MCPRegistrySpec]]:
    """The non-MCP registries by name, the Python backends by routing key, and the MCP specs."""
    registries: dict[str, ToolRegistry] = {}
    backends: dict[str, ToolBackend] = {}
    mcp: list[MCPRegistrySpec] = []
    for index, spec in enumerate(manifest.registries):
        where = located.where(("registries", index))
        if spec.name in registries or spec.name in {m.name for m in mcp}:
            raise BundleError(f"{where}: registries.{index}.name: registry {spec.name!r} is declared twice")
        if isinstance(spec, GrailRegistrySpec):
            root = directory / spec.path
            if not root.is_dir():
                where = located.where(("registries", index, "path"))
                raise BundleError(f"{where}: registries.{index}.path: no such folder {root}")
            registries[spec.name] = GrailRegistry(
                root, name=spec.name, loader=loader, externals=externals, grants=manifest.externals
            )
        elif isinstance(spec, PythonRegistrySpec):
            registry = _python_registry(spec, located.where(("registries", index, "module")), index)
            registries[spec.name] = registry
            backends[f"python:{spec.name}"] = PythonBackend(registry)
        else:
            mcp.append(spec)
    return registries, backends, mcp


def _python_registry(spec: PythonRegistrySpec, where: str, index: int) -> PythonRegistry:
    try:
        module = importlib.import_module(spec.module)
    except Exception as exc:
        raise BundleError(
            f"{where}: registries.{index}.module: cannot import {spec.module!r}: {type(exc).__name__}: {exc}"
        ) from None
    registry = getattr(module, "registry", None)
    if not isinstance(registry, PythonRegistry):
        raise BundleError(
            f"{where}: registries.{index}.module: {spec.module} has no PythonRegistry named 'registry'"
        )
    return registry


def resolve_tool(
    ref: ToolReference, index: int, registry: ToolRegistry, located: LocatedYaml, directory: Path
) -> BoundTool:
    """Resolve one tool reference and apply its overrides; BundleError naming its line."""
    where = located.where(("tools", index))
    try:
        target = registry.resolve(ref.name)
    except StructuredAgentsError as exc:  # a broken script: its own diagnostics
        raise BundleError(f"{where}: tools.{index}: tool {ref.name!r} cannot be used: {exc}") from None
    if target is None:
        available = ", ".join(registry.list_tools()) or "none"
        raise BundleError(
            f"{where}: tools.{index}: registry {registry.name!r} has no tool {ref.name!r} "
            f"(available: {available})"
        )
    if isinstance(registry, PythonRegistry):
        target = dataclasses.replace(target, backend=f"python:{registry.name}")
    target = dataclasses.replace(
        target, context_providers=tuple((directory / p).resolve() for p in ref.context_providers)
    )
    properties: JsonDict = {**target.properties, **(ref.inputs_override or {})}
    for position, name in enumerate(ref.bind):
        if name not in target.properties:
            raise BundleError(
                f"{located.where(('tools', index, 'bind', position))}: tools.{index}.bind: tool "
                f"{ref.name!r} has no input {name!r} to bind "
                f"(inputs: {', '.join(target.properties) or 'none'})"
            )
        properties.pop(name, None)
    required = [name for name in target.required if name in properties]
    parameters: JsonDict = {**target.parameters, "properties": properties, "required": required}
    schema = dataclasses.replace(
        target, description=ref.description or target.description, parameters=parameters
    )
    return BoundTool(schema=schema, target=target, bind=tuple(ref.bind))
