"""The tool registry: named schemas with ``$ref``, versioned servers, agents, agent-as-tool.

The one registry of the package: a registry file (``schemaVersion: "2.0"``) and every
bundle's tool declarations (built into a registry document in memory) go through it. Its
servers are the tool families of :mod:`structured_agents.tools` (``.pym`` folders, Python
functions, MCP servers), which it binds by name and version.

==============================  ==========================================================
``Registry``                    a checked registry file; a ``ToolRegistry`` of its tools
``Registry.bind``               its tools looked up on their servers (``Server``)
``Registry.scoped_for``         the tools one agent's dependencies allow (``ScopedRegistry``)
``Registry.tool_source``        a ``ToolSource`` running server tools and pipelines
``RegistryBackend``             runs any tool of a registry
``SourceBackend``               server tools: defaults, hidden and bound fields, transforms
``PipelineBackend``             pipeline tools: tool and agent steps wired by JSON paths
``KernelAgentRunner``           runs this project's agents (``AgentKernel``) as steps
``SchemaResolver``              ``#/schemas/Name[@version]`` refs via ``referencing``
``ServerRouter`` / ``Route``    ``server:version`` routing with constraints and fallback
``Version`` / ``VersionConstraint``  SemVer and ``^`` ``~`` ``>=,<`` constraints
``migrate_document`` / ``migrate_file``  v1 -> v2 with a ``MigrationReport``
==============================  ==========================================================
"""

from structured_agents.registry.agents import AgentRunner, KernelAgentRunner, LocalAgent, default_task
from structured_agents.registry.backend import RegistryBackend, SourceBackend
from structured_agents.registry.compiled import CompiledTool
from structured_agents.registry.errors import (
    MigrationError,
    PipelineError,
    RegistryError,
    RoutingError,
    SchemaCycleError,
    SchemaRefError,
    VersionError,
)
from structured_agents.registry.jsonpath import JsonPath
from structured_agents.registry.migrate import Change, MigrationReport, migrate_document
from structured_agents.registry.models import RegistryDocument
from structured_agents.registry.pipelines import PipelineBackend
from structured_agents.registry.plans import PipelinePlan
from structured_agents.registry.registry import Registry, migrate_file
from structured_agents.registry.routing import Route, ServerRouter
from structured_agents.registry.schemas import SchemaResolver
from structured_agents.registry.scoping import ScopedRegistry
from structured_agents.registry.served import ServedTool, Server
from structured_agents.registry.versions import Version, VersionConstraint

__all__ = [
    "AgentRunner",
    "Change",
    "CompiledTool",
    "JsonPath",
    "KernelAgentRunner",
    "LocalAgent",
    "MigrationError",
    "MigrationReport",
    "PipelineBackend",
    "PipelineError",
    "PipelinePlan",
    "Registry",
    "RegistryBackend",
    "RegistryDocument",
    "RegistryError",
    "Route",
    "RoutingError",
    "SchemaCycleError",
    "SchemaRefError",
    "SchemaResolver",
    "ScopedRegistry",
    "ServedTool",
    "Server",
    "ServerRouter",
    "SourceBackend",
    "Version",
    "VersionConstraint",
    "VersionError",
    "default_task",
    "migrate_document",
    "migrate_file",
]
