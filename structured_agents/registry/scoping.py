"""Dependency-scoped discovery: an agent sees only the tools its declared dependencies allow.

An agent's ``dependencies`` grant tools this way:

* ``{"tool": "web_search"}``: that tool;
* ``{"server": {"name": "citation-service", "versionConstraint": ">=1.0"}}``: every tool routed
  to a version of that server the constraint allows (no constraint: any version);
* ``{"agent": "research-agent"}``: every pipeline tool that exposes that agent, i.e. whose agent
  steps all run declared agents (its tool steps run with the pipeline's authority, not the
  caller's: the pipeline is the unit the caller is allowed to use).

:class:`ScopedRegistry` is a :class:`~structured_agents.tools.protocol.ToolRegistry` with the
registry's name, offering only those tools. Asking it for a tool the registry has but the
agent did not declare logs a warning (the seed's "log access attempts to undeclared
dependencies") and answers as if the tool did not exist.
"""

from __future__ import annotations

import logging

from structured_agents.registry.catalog import ToolCatalog
from structured_agents.registry.compiled import CompiledTool
from structured_agents.registry.models import AgentDefinition
from structured_agents.registry.plans import PipelinePlan
from structured_agents.registry.versions import VersionConstraint
from structured_agents.types import ToolSchema

__all__ = ["ScopedRegistry", "granted_tools"]

logger = logging.getLogger(__name__)


def granted_tools(registry: ToolCatalog, agent: AgentDefinition) -> dict[str, str]:
    """The tools ``agent`` may use, in registry order, each with the dependency that grants it."""
    grants: dict[str, str] = {}
    agents = {dep.agent for dep in agent.dependencies if dep.agent is not None}
    for name in registry.list_tools():
        compiled = registry.compiled(name)
        plan = registry.pipeline(name)
        route = compiled.route if compiled is not None else None
        for dep in agent.dependencies:
            if dep.tool == name:
                grants[name] = f"tool {name}"
            elif dep.server is not None and route is not None and route.server == dep.server.name:
                wanted = dep.server.version_constraint
                if route.version is None or VersionConstraint.parse(wanted or "*").allows(route.version):
                    grants[name] = f"server {dep.server.name} {wanted or '*'}"
        called = {step.agent.name for step in plan.steps if step.agent is not None} if plan else set()
        if name not in grants and called and called <= agents:
            grants[name] = f"agent {', '.join(sorted(called))}"
    return grants


class ScopedRegistry:
    """The tools of a registry one agent may discover and use."""

    def __init__(self, registry: ToolCatalog, agent: AgentDefinition) -> None:
        self.name = registry.name
        self.registry = registry
        self.agent = agent
        self.grants = granted_tools(registry, agent)
        """Tool name -> the dependency that grants it."""

    def list_tools(self) -> list[str]:
        """The granted tools, in registry order."""
        return list(self.grants)

    def resolve(self, tool_name: str) -> ToolSchema | None:
        """The tool's schema when granted; None (and a logged warning if it exists) otherwise."""
        schema = self.registry.resolve(tool_name)
        if schema is not None and tool_name not in self.grants:
            logger.warning(
                "agent %r asked for tool %r of registry %r, which is not among its declared dependencies",
                self.agent.name,
                tool_name,
                self.name,
            )
            return None
        return schema

    def compiled(self, tool_name: str) -> CompiledTool | None:
        """A granted tool ready to run, or None."""
        return self.registry.compiled(tool_name) if tool_name in self.grants else None

    def pipeline(self, tool_name: str) -> PipelinePlan | None:
        """The plan of a granted pipeline tool, or None."""
        return self.registry.pipeline(tool_name) if tool_name in self.grants else None
