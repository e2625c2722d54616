"""Agents as tools: a registry's agents that are bundles, run on the engine of the calling agent.

A registry agent with ``bundle: agents/summarizer`` is that bundle. A pipeline step that runs
it (``operation: {agent: {name: summarizer}}``) becomes an inner run: the bundle's first
messages rendered with the step's arguments as the job's inputs, its kernel (its own plugin,
grammar, tools and limits) on :attr:`BundleAgentRunner.engine`, and its final output (its
termination tool's result) as the step's output. The engine is the one the calling bundle's
kernel was built with (:meth:`Bundle.kernel`), so in ``sa run`` the inner agent's turns are
decoded in the same batches as everyone else's. Inner runs are not runs of the store: the
outer run records the tool call and its result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from structured_agents.context import RunContext
from structured_agents.kernel import AgentKernel
from structured_agents.kernel.engine import Engine
from structured_agents.observer.protocol import Observer
from structured_agents.registry.agents import run_inner_agent
from structured_agents.registry.errors import PipelineError
from structured_agents.registry.models import AgentDefinition
from structured_agents.types import JsonDict, Message

__all__ = ["AgentBundle", "BundleAgentRunner"]


class AgentBundle(Protocol):
    """What running a bundle as an agent needs of it (a :class:`~structured_agents.bundles.Bundle`)."""

    async def initial_messages(self, inputs: Mapping[str, Any], workspace: Path | None) -> list[Message]:
        """The first messages of a run on ``inputs``."""
        ...

    def kernel(
        self, engine: Engine, *, observers: Iterable[Observer] = (), agent_engine: Engine | None = None
    ) -> AgentKernel:
        """A kernel running the bundle's agent on ``engine``."""
        ...


class BundleAgentRunner:
    """Runs registry agents that are bundles (an ``AgentRunner``), by ``name:version`` or name."""

    def __init__(self, bundles: Mapping[str, AgentBundle], engine: Engine | None) -> None:
        self.bundles = dict(bundles)
        self.engine = engine
        """Decodes the inner runs; None where there is none (the run is refused)."""

    async def run_agent(
        self, agent: AgentDefinition, skill: str | None, arguments: JsonDict, context: RunContext
    ) -> str:
        """The agent bundle's final output on ``arguments``; PipelineError when it has none."""
        bundle = self.bundles.get(f"{agent.name}:{agent.version}") or self.bundles.get(agent.name)
        if bundle is None:
            have = ", ".join(self.bundles) or "none"
            raise PipelineError(f"agent {agent.name} {agent.version} is not a bundle here (bundles: {have})")
        if self.engine is None:
            raise PipelineError(
                f"agent {agent.name} runs on the engine of the calling agent, and there is none here: "
                "build the kernel with Bundle.kernel(engine)"
            )
        messages = await bundle.initial_messages(arguments, context.workspace)
        with bundle.kernel(self.engine) as kernel:
            return await run_inner_agent(kernel, messages, agent, arguments, context)
