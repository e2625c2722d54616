"""A bundle's tools as a registry document built in memory, and the tool source the kernel gets.

Every bundle goes through the one tool registry (:mod:`structured_agents.registry`): its
``tools:`` become the tools of a registry document (:func:`bundle_document`), each a tool of
the server its ``registry:`` names (a ``.pym`` folder, a Python module, an MCP server, or a
registry file), so a tool reference's options are the registry's own:

=====================  ======================================================================
``description``        the tool's description
``inputs_override``    ``inputsOverride``: replaces entries of the ``properties`` the model sees
``bind``               ``source.bind``: inputs filled from the job's inputs, hidden from the model
``context_providers``  ``contextProviders``: ``.pym`` scripts whose outputs precede the tool's
=====================  ======================================================================

:func:`bundle_error` turns the registry's errors about that document into a
:class:`BundleError` naming the manifest line of the tool reference.

:class:`BundleToolSource` is what the kernel gets: the registry's tool source, plus the
bundle's refusal of submissions that copy its worked examples (:mod:`.echoes`).
"""

from __future__ import annotations

from pathlib import Path

from structured_agents.bundles.echoes import EchoCheck
from structured_agents.bundles.manifest import BundleError, BundleManifest
from structured_agents.context import RunContext
from structured_agents.errors import StructuredAgentsError
from structured_agents.pym.externals import ExternalRegistry, check_grants
from structured_agents.pym.loader import ScriptLoader
from structured_agents.registry.errors import RegistryError
from structured_agents.registry.models import RegistryDocument, SourceTool, ToolDefinition
from structured_agents.tools.protocol import ToolSource
from structured_agents.types import ToolCall, ToolResult, ToolSchema
from structured_agents.yaml_lines import LocatedYaml

__all__ = ["BundleToolSource", "bundle_document", "bundle_error", "check_script"]


class BundleToolSource:
    """The :class:`~structured_agents.tools.protocol.ToolSource` of a bundle; never raises."""

    def __init__(self, source: ToolSource, echoes: EchoCheck | None = None) -> None:
        self.source = source
        self._echoes = echoes

    def tools(self) -> list[ToolSchema]:
        """The tools as the model sees them, in the manifest's order."""
        return self.source.tools()

    async def execute(self, call: ToolCall, context: RunContext) -> ToolResult:
        """Run one call, unless it is a submission copying the worked examples."""
        refusal = self._echoes.refusal(call, context.inputs) if self._echoes is not None else None
        if refusal is not None:
            return ToolResult(call.id, call.name, refusal.message, True, ban=refusal.ban)
        return await self.source.execute(call, context)


def bundle_document(manifest: BundleManifest) -> RegistryDocument:
    """The registry document of the bundle's ``tools:``, in manifest order (so ``tools[i]`` of
    the document is ``tools[i]`` of the manifest); servers are the ``registries:`` by name."""
    tools = [
        ToolDefinition(
            name=ref.name,
            description=ref.description,
            source=SourceTool(server=ref.registry, tool=ref.name, bind=list(ref.bind)),
            inputs_override=ref.inputs_override or {},
            context_providers=[str(path) for path in ref.context_providers],
        )
        for ref in manifest.tools
    ]
    return RegistryDocument(schema_version="2.0", tools=tools)


def bundle_error(exc: RegistryError, located: LocatedYaml) -> BundleError:
    """``exc``, about :func:`bundle_document`'s document, naming the manifest line it is about."""
    loc = exc.loc
    manifest_loc: tuple[str | int, ...] = loc[:2]
    if loc[:1] == ("tools",) and loc[2:4] == ("source", "bind"):
        manifest_loc = (*loc[:2], "bind", *loc[4:5])
    field = ".".join(str(part) for part in manifest_loc)
    return BundleError(f"{located.where(manifest_loc)}: {field}: {exc.detail}")


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
