"""MCP servers of a bundle: connected when the bundle is, their tools resolved then.

An MCP server's tool list is known only once connected, so :func:`connect_mcp` runs from
:meth:`Bundle.connect` (async) instead of :func:`load_bundle`; a missing tool is the same
:class:`BundleError`, naming the manifest line of the tool reference.
"""

from __future__ import annotations

from collections.abc import Iterable

from structured_agents.bundles.manifest import BundleError, BundleManifest, MCPRegistrySpec
from structured_agents.bundles.toolset import BoundTool, resolve_tool
from structured_agents.errors import ToolError
from structured_agents.tools.composite import CompositeBackend
from structured_agents.tools.mcp import MCPBackend, MCPRegistry
from structured_agents.yaml_lines import LocatedYaml

__all__ = ["connect_mcp"]


def _registry(spec: MCPRegistrySpec) -> MCPRegistry:
    if spec.command is not None:
        return MCPRegistry.stdio(spec.name, spec.command[0], spec.command[1:])
    assert spec.url is not None  # the manifest requires one of the two
    return MCPRegistry.http(spec.name, spec.url)


async def connect_mcp(
    manifest: BundleManifest, located: LocatedYaml, backend: CompositeBackend, resolved: list[BoundTool]
) -> tuple[list[BoundTool], list[MCPRegistry]]:
    """Connect every MCP registry and route ``mcp`` tools to them; every tool of the bundle in
    manifest order, and the connected registries (the caller closes them)."""
    registries: dict[str, MCPRegistry] = {}
    for index, spec in enumerate(manifest.registries):
        if not isinstance(spec, MCPRegistrySpec):
            continue
        registry = _registry(spec)
        try:
            await registry.aconnect()
        except ToolError as exc:
            await _close(registries.values())
            raise BundleError(f"{located.where(('registries', index))}: registries.{index}: {exc}") from None
        registries[spec.name] = registry
    by_name = {tool.schema.name: tool for tool in resolved}
    out: list[BoundTool] = []
    try:
        for index, ref in enumerate(manifest.tools):
            if ref.registry in registries:
                out.append(resolve_tool(ref, index, registries[ref.registry], located, located.path.parent))
            else:
                out.append(by_name[ref.name])
    except BundleError:
        await _close(registries.values())
        raise
    backend.register("mcp", MCPBackend(registries.values()))
    return out, list(registries.values())


async def _close(registries: Iterable[MCPRegistry]) -> None:
    for registry in registries:
        await registry.aclose()
