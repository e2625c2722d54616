"""A bundle's tools: its servers and registry files, opened, connected and bound in one registry.

:class:`BundleTools` builds the registry of a bundle (:func:`~.toolset.bundle_document`) and
its servers, by the manifest's ``registries:``:

* ``grail`` / ``python`` / ``mcp``: a ``.pym`` folder, a Python module, an MCP server, opened
  like the servers of a registry file (:class:`~structured_agents.registry.endpoints.ServerSet`);
* ``registry``: a registry file, itself bound to its servers (each server version a tool is
  routed to must have an ``endpoint``) and offered, whole or as one of its agents may see it, as
  one server of the bundle's registry. Its agents that are bundles are loaded with it
  (``load_agent``) and run as tools on the engine given to :meth:`BundleTools.tool_source`.

MCP servers are known only once connected, so a bundle with any is bound in
:meth:`BundleTools.aconnect`; others are bound at once. Every problem is a BundleError naming
the manifest line (and the registry file's own file, line and path, for a fault there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from structured_agents.bundles.agents import AgentBundle, BundleAgentRunner
from structured_agents.bundles.manifest import (
    BundleError,
    BundleManifest,
    GrailRegistrySpec,
    PythonRegistrySpec,
    RegistryFileSpec,
    RegistrySpec,
)
from structured_agents.bundles.toolset import bundle_document, bundle_error
from structured_agents.errors import ConfigError
from structured_agents.kernel.engine import Engine
from structured_agents.pym.externals import ExternalRegistry
from structured_agents.pym.loader import ScriptLoader
from structured_agents.registry import Registry, RegistryError, Server
from structured_agents.registry.endpoints import ServerSet
from structured_agents.registry.models import ServerEndpoint
from structured_agents.tools.grail import GrailBackend
from structured_agents.tools.protocol import ToolBackend, ToolSource
from structured_agents.tools.resolve import resolve_all
from structured_agents.tools.source import ToolSourceBackend
from structured_agents.types import ToolSchema
from structured_agents.yaml_lines import LocatedYaml

__all__ = ["AgentLoader", "BundleTools", "RegistryFile"]

AgentLoader = Callable[[Path], AgentBundle]
"""Loads the bundle at a path (an agent of a registry file) in the loading bundle's session."""

_MANIFEST_FIELDS = {"pym": "path", "python": "module"}
"""Endpoint fields as the manifest's registry entries name them."""


@dataclass
class RegistryFile:
    """A registry file a bundle uses: the registry, its servers, the bundles of its agents."""

    name: str
    """The entry's name in ``registries:`` (what the bundle's tools name)."""
    path: Path
    registry: Registry
    servers: ServerSet
    agents: dict[str, AgentBundle] = field(default_factory=dict)
    """Agent bundles by ``name:version`` and by name."""
    agent: str | None = None
    """The agent whose view of the registry the bundle gets, if any."""
    bound: Registry | None = None
    """The registry bound to its servers."""


class BundleTools:
    """The tools of one bundle; see the module docstring."""

    def __init__(
        self,
        manifest: BundleManifest,
        located: LocatedYaml,
        *,
        loader: ScriptLoader,
        externals: ExternalRegistry,
        load_agent: AgentLoader,
    ) -> None:
        self.manifest = manifest
        self.located = located
        self.directory = located.path.parent
        self._loader = loader
        self._externals = externals
        try:
            self.registry = Registry(bundle_document(manifest), name=manifest.name, base=self.directory)
        except RegistryError as exc:
            raise bundle_error(exc, located) from None
        self.servers = self._server_set()
        self.files: dict[str, RegistryFile] = {}
        seen: set[str] = set()
        for index, spec in enumerate(manifest.registries):
            if spec.name in seen:
                raise self._error(("registries", index, "name"), f"registry {spec.name!r} is declared twice")
            seen.add(spec.name)
            if isinstance(spec, RegistryFileSpec):
                self.files[spec.name] = self._open_file(spec, index, load_agent)
            else:
                self._open(spec, index)
        self.bound: Registry | None = None
        if not self.needs_connect:
            self._bind()

    @property
    def needs_connect(self) -> bool:
        """Whether an MCP server must start before the tools are known."""
        return self.servers.needs_connect or any(f.servers.needs_connect for f in self.files.values())

    def schemas(self) -> list[ToolSchema]:
        """The tools the model sees, in manifest order (once bound)."""
        return resolve_all(self._bound(), self._bound().list_tools())

    def tool_source(self, engine: Engine | None, grail: GrailBackend) -> ToolSource:
        """The bundle's tools, agents as tools decoding with ``engine`` (refused when None)."""
        extra: dict[str, ToolBackend] = {}
        for file in self.files.values():
            assert file.bound is not None  # bound with the bundle's own registry
            source = file.bound.tool_source(
                file.servers.backend(grail), agents=BundleAgentRunner(file.agents, engine), caller=file.agent
            )
            extra[f"registry:{file.name}"] = ToolSourceBackend(source)
        return self._bound().tool_source(self.servers.backend(grail, extra))

    async def aconnect(self) -> None:
        """Start the MCP servers and bind the tools (nothing to do when already bound)."""
        if self.bound is not None:
            return
        try:
            await self.servers.aconnect()
        except RegistryError as exc:
            raise self._error(exc.loc, exc.detail) from None
        for file in self.files.values():
            try:
                await file.servers.aconnect()
            except RegistryError as exc:
                await self.aclose()
                raise self._file_error(file, file.registry.locate(exc)) from None
        try:
            self._bind()
        except BundleError:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        """Stop every MCP server."""
        await self.servers.aclose()
        for file in self.files.values():
            await file.servers.aclose()
        if self.needs_connect:
            self.bound = None

    # -- building -------------------------------------------------------------------------

    def _server_set(self) -> ServerSet:
        return ServerSet(loader=self._loader, externals=self._externals, grants=self.manifest.externals)

    def _open(self, spec: RegistrySpec, index: int) -> None:
        if isinstance(spec, GrailRegistrySpec):
            endpoint = ServerEndpoint(pym=str(spec.path))
        elif isinstance(spec, PythonRegistrySpec):
            endpoint = ServerEndpoint(python=spec.module)
        else:
            assert not isinstance(spec, RegistryFileSpec)
            endpoint = ServerEndpoint(command=spec.command, url=spec.url)
        try:
            self.servers.open(spec.name, endpoint, self.directory, ("registries", index))
        except RegistryError as exc:
            loc = [_MANIFEST_FIELDS.get(str(part), part) for part in exc.loc]
            raise self._error(tuple(loc), exc.detail) from None

    def _open_file(self, spec: RegistryFileSpec, index: int, load_agent: AgentLoader) -> RegistryFile:
        path = self.directory / spec.path
        where = ("registries", index, "path")
        try:
            registry = Registry.from_file(path, name=spec.name)
            if spec.agent is not None:
                registry.scoped_for(spec.agent)
        except ConfigError as exc:
            loc = where if isinstance(exc, RegistryError) else ("registries", index, "agent")
            raise self._error(loc, str(exc)) from None
        file = RegistryFile(spec.name, path, registry, self._server_set(), agent=spec.agent)
        try:
            file.servers.open_routes(registry)
        except RegistryError as exc:
            raise self._file_error(file, exc) from None
        for agent in registry.document.agents:
            if agent.bundle is not None:
                ref = path.parent / agent.bundle
                bundle = load_agent(ref if ref.exists() else Path(agent.bundle))
                file.agents[f"{agent.name}:{agent.version}"] = bundle
                file.agents.setdefault(agent.name, bundle)
        return file

    def _bind(self) -> None:
        servers: dict[str, Server] = dict(self.servers.servers)
        for file in self.files.values():
            try:
                file.bound = file.registry.bind(file.servers.servers)
            except RegistryError as exc:
                raise self._file_error(file, file.registry.locate(exc)) from None
            view = file.bound.scoped_for(file.agent) if file.agent is not None else file.bound
            servers[file.name] = Server(view, f"registry:{file.name}")
        try:
            self.bound = self.registry.bind(servers)
        except RegistryError as exc:
            raise bundle_error(exc, self.located) from None

    def _bound(self) -> Registry:
        if self.bound is None:
            raise ConfigError(f"bundle {self.manifest.name!r} uses MCP servers: await bundle.connect() first")
        return self.bound

    def _error(self, loc: tuple[str | int, ...], detail: str) -> BundleError:
        return BundleError(f"{self.located.where(loc)}: {'.'.join(str(p) for p in loc)}: {detail}")

    def _file_error(self, file: RegistryFile, exc: RegistryError) -> BundleError:
        index = next(i for i, spec in enumerate(self.manifest.registries) if spec.name == file.name)
        return self._error(("registries", index, "path"), str(exc))
