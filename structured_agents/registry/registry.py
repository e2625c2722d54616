"""``Registry``: a v2 registry document, checked as a whole and offered as a ToolRegistry.

Loading (:meth:`Registry.from_file`, :meth:`Registry.from_dict`) migrates a v1 document
(:attr:`Registry.migration` says what changed), validates it, and checks everything that
spans the document, each failure a :class:`RegistryError` naming the file, the line (YAML) and
the JSON path of the fault: schema refs and cycles, server versions and routes, tools' hidden
fields and transforms, agents' skills (examples are validated against the skill's input
schema) and dependencies, pipelines' paths and agents, and pipelines that call themselves.

Tools resolve to ``ToolSchema(backend="mcp", server="<server>:<version>")`` for server tools
and ``backend="pipeline"`` for pipelines; :meth:`Registry.tool_source` runs both (a
:class:`~structured_agents.registry.backend.RegistryBackend`). :meth:`Registry.bind` looks each
server tool up on its server (a ``.pym`` folder, Python functions, an MCP server...): the tool's
schema and backend then come from there where the document declares none.
:meth:`Registry.scoped_for` is the registry as one agent may see it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jsonschema.protocols import Validator

from structured_agents.errors import ConfigError
from structured_agents.registry.agents import AgentRunner
from structured_agents.registry.backend import RegistryBackend, SourceBackend
from structured_agents.registry.compiled import CompiledTool, compile_tool, first_error
from structured_agents.registry.errors import Loc, RegistryError, RoutingError
from structured_agents.registry.loading import RawDocument, parse_document, read_document, write_document
from structured_agents.registry.migrate import MigrationReport, migrate_document
from structured_agents.registry.models import AgentCall, AgentDefinition, RegistryDocument, ToolDefinition
from structured_agents.registry.pipelines import PipelineBackend
from structured_agents.registry.plans import PipelinePlan, plan_pipeline
from structured_agents.registry.routing import Route, ServerRouter
from structured_agents.registry.schemas import SchemaResolver
from structured_agents.registry.scoping import ScopedRegistry
from structured_agents.registry.served import Server, served_tool
from structured_agents.registry.versions import Version, VersionConstraint
from structured_agents.tools.protocol import ToolBackend
from structured_agents.tools.source import RegistryBackendToolSource
from structured_agents.types import ToolSchema

__all__ = ["Registry", "migrate_file"]

_Skill = tuple[Validator | None, Validator | None]


class Registry:
    """A checked v2 registry; raises RegistryError (with the path of the fault) when built."""

    def __init__(
        self,
        document: RegistryDocument,
        *,
        name: str = "registry",
        base: Path | None = None,
        migration: MigrationReport | None = None,
        servers: Mapping[str, Server] | None = None,
        raw: RawDocument | None = None,
    ) -> None:
        self.name = name
        self.document = document
        self.base = base
        """The folder relative paths (endpoints, context providers, agent bundles) start from."""
        self.migration = migration if migration is not None else MigrationReport("2.0")
        """What loading changed (empty for a v2 document)."""
        self.servers = dict(servers) if servers is not None else None
        """The servers by route key, once bound (:meth:`bind`)."""
        self._raw = raw
        self.schemas = SchemaResolver(document.schemas)
        self.router = ServerRouter(document.servers)
        self._check_provided_tools()
        self._agents: dict[str, dict[Version, AgentDefinition]] = {}
        self._skills: dict[tuple[str, Version, str], _Skill] = {}
        for i, agent in enumerate(document.agents):
            self._add_agent(agent, ("agents", i))
        tool_names = [tool.name for tool in document.tools]
        for i, agent in enumerate(document.agents):
            self._check_dependencies(agent, ("agents", i), tool_names)
        self._tools: dict[str, CompiledTool] = {}
        self._plans: dict[str, PipelinePlan] = {}
        for i, tool in enumerate(document.tools):
            if tool.name in self._tools:
                raise RegistryError(f"tool {tool.name!r} is defined twice", ("tools", i, "name"))
            self._tools[tool.name] = self._compile(tool, ("tools", i))
        self._check_pipeline_cycles()

    # -- loading --------------------------------------------------------------------------

    @classmethod
    def from_file(cls, path: str | Path, *, name: str | None = None) -> Registry:
        """Load a JSON or YAML registry file (v1 files are migrated); named after the file by default."""
        path = Path(path)
        raw = read_document(path)
        return cls._load(raw, name or path.stem, path.parent)

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, name: str = "registry", source: str = "<dict>"
    ) -> Registry:
        """Load a registry document given as data (v1 documents are migrated)."""
        return cls._load(RawDocument(source, data), name, None)

    @classmethod
    def _load(cls, raw: RawDocument, name: str, base: Path | None) -> Registry:
        try:
            if not isinstance(raw.data, Mapping):
                raise RegistryError(f"a registry document is a mapping, got {type(raw.data).__name__}")
            data, report = migrate_document(raw.data)
            return cls(parse_document(data, raw), name=name, base=base, migration=report, raw=raw)
        except RegistryError as exc:
            if exc.source is None:
                raw.locate(exc)
            raise

    # -- ToolRegistry ---------------------------------------------------------------------

    def list_tools(self) -> list[str]:
        """Every tool, in document order."""
        return list(self._tools)

    def resolve(self, tool_name: str) -> ToolSchema | None:
        """The schema the model sees, or None."""
        compiled = self._tools.get(tool_name)
        return compiled.schema if compiled is not None else None

    def compiled(self, tool_name: str) -> CompiledTool | None:
        """A tool ready to run (defaults, validators, transform, route), or None."""
        return self._tools.get(tool_name)

    def pipeline(self, tool_name: str) -> PipelinePlan | None:
        """The plan of a pipeline tool, or None."""
        return self._plans.get(tool_name)

    def route(self, key: str) -> Route:
        """Route a direct ``server:constraint`` call (``doc-service:^1.2``) among declared servers."""
        return self.router.route_key(key)

    def agent(self, name: str, constraint: str | None = None) -> AgentDefinition:
        """The highest version of agent ``name`` that ``constraint`` allows; ConfigError if none."""
        versions = self._agents.get(name)
        if versions is None:
            raise ConfigError(
                f"registry {self.name!r} has no agent {name!r} (agents: {', '.join(self._agents) or 'none'})"
            )
        chosen = VersionConstraint.parse(constraint or "*").best(versions)
        if chosen is None and constraint is None:
            chosen = max(versions)  # there are only pre-releases
        if chosen is None:
            have = ", ".join(map(str, sorted(versions)))
            raise RoutingError(f"no version of agent {name!r} satisfies {constraint!r} ({have})")
        return versions[chosen]

    def scoped_for(self, agent_name: str, version: str | None = None) -> ScopedRegistry:
        """The tools agent ``agent_name`` may discover (see :mod:`.scoping`), as a ToolRegistry."""
        return ScopedRegistry(self, self.agent(agent_name, version))

    def tool_source(
        self, servers: ToolBackend, *, agents: AgentRunner | None = None, caller: str | None = None
    ) -> RegistryBackendToolSource:
        """A ToolSource of this registry: server tools run on ``servers`` (e.g. an MCPBackend),
        pipelines with ``agents``; only ``caller``'s granted tools are offered when it is given.
        Pipeline tool steps may call any tool of the registry."""
        backend = self.backend(servers, agents=agents)
        offered = self.scoped_for(caller) if caller is not None else self
        return RegistryBackendToolSource(offered, backend)

    def backend(self, servers: ToolBackend, *, agents: AgentRunner | None = None) -> RegistryBackend:
        """The backend of every tool of this registry (see :meth:`tool_source`)."""
        pipelines = PipelineBackend(self, agents=agents)
        backend = RegistryBackend(self, SourceBackend(self, servers), pipelines)
        pipelines.tools = RegistryBackendToolSource(self, backend)
        return backend

    def bind(self, servers: Mapping[str, Server]) -> Registry:
        """This registry with its tools looked up on ``servers`` (by route key, ``calc:2.0.0``,
        or plain server name); RegistryError naming the tool when a server or tool is missing."""
        try:
            return Registry(
                self.document,
                name=self.name,
                base=self.base,
                migration=self.migration,
                servers=servers,
                raw=self._raw,
            )
        except RegistryError as exc:
            raise self.locate(exc) from None

    def locate(self, error: RegistryError) -> RegistryError:
        """``error`` naming this registry's file (and line) when it has a file and names none."""
        if self._raw is not None and error.source is None:
            self._raw.locate(error)
        return error

    # -- checks ---------------------------------------------------------------------------

    def _check_provided_tools(self) -> None:
        for i, server in enumerate(self.document.servers):
            for j, provided in enumerate(server.provided_tools):
                refs = {
                    "inputSchemaRef": provided.input_schema_ref,
                    "outputSchemaRef": provided.output_schema_ref,
                }
                for field, ref in refs.items():
                    if ref is not None:
                        self.schemas.canonical_ref(ref, ("servers", i, "providedTools", j, field))

    def _add_agent(self, agent: AgentDefinition, loc: Loc) -> None:
        versions = self._agents.setdefault(agent.name, {})
        version = Version.parse(agent.version)
        if version in versions:
            raise RegistryError(f"agent {agent.name!r} version {version} is defined twice", (*loc, "version"))
        versions[version] = agent
        for j, skill in enumerate(agent.skills):
            skill_loc = (*loc, "skills", j)
            if (agent.name, version, skill.name) in self._skills:
                raise RegistryError(f"skill {skill.name!r} is defined twice", (*skill_loc, "name"))
            validators: list[Validator | None] = []
            for field, schema in (("inputSchema", skill.input_schema), ("outputSchema", skill.output_schema)):
                canonical = (
                    self.schemas.canonical(schema, (*skill_loc, field)) if schema is not None else None
                )
                validators.append(self.schemas.validator(canonical) if canonical is not None else None)
            self._skills[(agent.name, version, skill.name)] = (validators[0], validators[1])
            for k, example in enumerate(skill.examples):
                error = first_error(validators[0], example.input)
                if error is not None:
                    raise RegistryError(
                        f"example input does not match the skill's input schema: {error}",
                        (*skill_loc, "examples", k, "input"),
                    )

    def _check_dependencies(self, agent: AgentDefinition, loc: Loc, tool_names: list[str]) -> None:
        for j, dep in enumerate(agent.dependencies):
            dep_loc = (*loc, "dependencies", j)
            if dep.tool is not None and dep.tool not in tool_names:
                raise RegistryError(
                    f"depends on tool {dep.tool!r}, which the registry does not define", (*dep_loc, "tool")
                )
            if dep.agent is not None and dep.agent not in self._agents:
                raise RegistryError(
                    f"depends on agent {dep.agent!r}, which the registry does not define", (*dep_loc, "agent")
                )
            if dep.server is not None:
                server_loc = (*dep_loc, "server")
                if not self.router.versions(dep.server.name):
                    raise RoutingError(
                        f"depends on server {dep.server.name!r}, which is not declared", server_loc
                    )
                wanted = VersionConstraint.parse(dep.server.version_constraint or "*")
                if wanted.best(self.router.versions(dep.server.name)) is None:
                    raise RoutingError(
                        f"no declared version of server {dep.server.name!r} satisfies {wanted}",
                        (*server_loc, "versionConstraint"),
                    )

    def _compile(self, tool: ToolDefinition, loc: Loc) -> CompiledTool:
        route = None
        if tool.source is not None:
            source, source_loc = tool.source, (*loc, "source")
            where = (*source_loc, "serverVersion" if source.server_version else "server")
            route = self.router.route(
                source.server, source.server_version, loc=where, caller=f"tool {tool.name}"
            )
            server = route.definition
            if server is not None and server.capabilities is not None and not server.capabilities.tools:
                raise RegistryError(
                    f"server {route.key} does not declare the 'tools' capability", (*source_loc, "server")
                )
            provided = [t.name for t in server.provided_tools] if server is not None else []
            if provided and source.tool not in provided:
                raise RegistryError(
                    f"server {route.key} provides no tool {source.tool!r} ({', '.join(provided)})",
                    (*source_loc, "tool"),
                )
        served = None
        if self.servers is not None and tool.source is not None and route is not None:
            served = served_tool(self.servers, route.key, tool.source.tool, (*loc, "source"))
        compiled = compile_tool(tool, loc, self.schemas, route, served, self.base)
        if tool.spec is not None:
            self._plans[tool.name] = plan_pipeline(
                tool.name, tool.spec.pipeline, (*loc, "spec", "pipeline"), self._agent_step
            )
        return compiled

    def _agent_step(
        self, call: AgentCall, loc: Loc
    ) -> tuple[AgentDefinition, Validator | None, Validator | None]:
        if call.name not in self._agents:
            raise RegistryError(f"no agent {call.name!r} in the registry", (*loc, "name"))
        try:
            agent = self.agent(call.name, call.version)
        except RoutingError as exc:
            raise RoutingError(exc.detail, (*loc, "version")) from None
        if call.skill is None:
            return agent, None, None
        skill = self._skills.get((agent.name, Version.parse(agent.version), call.skill))
        if skill is None:
            have = ", ".join(s.name for s in agent.skills) or "none"
            raise RegistryError(
                f"agent {agent.name} {agent.version} has no skill {call.skill!r} ({have})", (*loc, "skill")
            )
        return agent, skill[0], skill[1]

    def _check_pipeline_cycles(self) -> None:
        calls = {
            name: [s.tool for s in plan.steps if s.tool is not None and s.tool in self._plans]
            for name, plan in self._plans.items()
        }
        done: set[str] = set()

        def visit(name: str, stack: list[str]) -> None:
            if name in stack:
                cycle = [*stack[stack.index(name) :], name]
                index = [t.name for t in self.document.tools].index(stack[-1])
                raise RegistryError(
                    f"pipelines call each other in a cycle: {' -> '.join(cycle)}", ("tools", index, "spec")
                )
            if name in done:
                return
            for callee in calls[name]:
                visit(callee, [*stack, name])
            done.add(name)

        for name in calls:
            visit(name, [])


def migrate_file(source: str | Path, target: str | Path) -> MigrationReport:
    """Load ``source`` (v1 or v2), check it, write it as v2 to ``target`` (JSON/YAML by extension)."""
    registry = Registry.from_file(source)
    write_document(registry.document, Path(target))
    return registry.migration
