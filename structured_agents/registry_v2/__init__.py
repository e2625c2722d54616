"""Tool Registry v2: named schemas with ``$ref``, versioned servers, agents, agent-as-tool.

==============================  ==========================================================
``RegistryV2``                  a checked registry file; a ``ToolRegistry`` of its tools
``RegistryV2.scoped_for``       the tools one agent's dependencies allow (``ScopedRegistry``)
``RegistryV2.tool_source``      a ``ToolSource`` running server tools and pipelines
``SourceBackend``               server tools: defaults, hidden fields, routing, transforms
``PipelineBackend``             pipeline tools: tool and agent steps wired by JSON paths
``KernelAgentRunner``           runs this project's agents (``AgentKernel``) as steps
``SchemaResolver``              ``#/schemas/Name[@version]`` refs via ``referencing``
``ServerRouter`` / ``Route``    ``server:version`` routing with constraints and fallback
``Version`` / ``VersionConstraint``  SemVer and ``^`` ``~`` ``>=,<`` constraints
``migrate_document`` / ``migrate_file``  v1 -> v2 with a ``MigrationReport``
==============================  ==========================================================
"""

from structured_agents.registry_v2.agents import AgentRunner, KernelAgentRunner, LocalAgent, default_task
from structured_agents.registry_v2.backend import SourceBackend
from structured_agents.registry_v2.compiled import CompiledTool
from structured_agents.registry_v2.errors import (
    MigrationError,
    PipelineError,
    RegistryError,
    RoutingError,
    SchemaCycleError,
    SchemaRefError,
    VersionError,
)
from structured_agents.registry_v2.jsonpath import JsonPath
from structured_agents.registry_v2.migrate import Change, MigrationReport, migrate_document
from structured_agents.registry_v2.models import RegistryDocument
from structured_agents.registry_v2.pipelines import PipelineBackend, PipelinePlan
from structured_agents.registry_v2.registry import RegistryV2, migrate_file
from structured_agents.registry_v2.routing import Route, ServerRouter
from structured_agents.registry_v2.schemas import SchemaResolver
from structured_agents.registry_v2.scoping import ScopedRegistry
from structured_agents.registry_v2.versions import Version, VersionConstraint

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
    "RegistryDocument",
    "RegistryError",
    "RegistryV2",
    "Route",
    "RoutingError",
    "SchemaCycleError",
    "SchemaRefError",
    "SchemaResolver",
    "ScopedRegistry",
    "ServerRouter",
    "SourceBackend",
    "Version",
    "VersionConstraint",
    "VersionError",
    "default_task",
    "migrate_document",
    "migrate_file",
]
