"""Running agents as pipeline steps: the runner seam and a runner of this project's own agents.

:class:`AgentRunner` is what a pipeline's agent step calls. :class:`KernelAgentRunner` runs an
:class:`~structured_agents.kernel.AgentKernel` (its own plugin, engine and tool source) per
agent, so "a bundle can expose one of this project's own agents as a tool to another agent":
the step's arguments become the inner agent's task, and the inner run's final output (its
termination tool's result, or its answer) becomes the step's output. A run that ends without
output (``max_turns``) is a :class:`PipelineError`; errors the kernel raises propagate to the
pipeline, which turns them into an error result for the outer agent.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from structured_agents.context import RunContext
from structured_agents.errors import ConfigError
from structured_agents.kernel import AgentKernel
from structured_agents.registry.errors import PipelineError
from structured_agents.registry.models import AgentDefinition
from structured_agents.types import JsonDict, Message

__all__ = ["AgentRunner", "KernelAgentRunner", "LocalAgent", "default_task", "run_inner_agent"]


@runtime_checkable
class AgentRunner(Protocol):
    """Runs one agent skill on some arguments and returns its output text."""

    async def run_agent(
        self, agent: AgentDefinition, skill: str | None, arguments: JsonDict, context: RunContext
    ) -> str:
        """The agent's final output; raises (any error) when the agent fails."""
        ...


def default_task(agent: AgentDefinition, skill: str | None, arguments: JsonDict) -> str:
    """The user message of an inner run: the skill and its input as JSON."""
    head = f"Skill: {skill}\n" if skill else ""
    return f"{head}Input: {json.dumps(arguments, ensure_ascii=False, sort_keys=True)}"


@dataclass(frozen=True, slots=True)
class LocalAgent:
    """One in-process agent: the kernel that runs it and how its task is written."""

    kernel: AgentKernel
    """Runs the agent; its plugin, engine and tool source are the agent's own."""
    system_prompt: str | None = None
    """The inner run's system message, if any."""
    task: Callable[[AgentDefinition, str | None, JsonDict], str] = default_task
    """Writes the inner run's user message from the step (default: :func:`default_task`)."""


class KernelAgentRunner:
    """Runs registry agents on local kernels, by agent name (``name`` or ``name:version``)."""

    def __init__(self, agents: Mapping[str, LocalAgent]) -> None:
        if not agents:
            raise ConfigError("KernelAgentRunner.agents must name at least one agent")
        self._agents = dict(agents)

    async def run_agent(
        self, agent: AgentDefinition, skill: str | None, arguments: JsonDict, context: RunContext
    ) -> str:
        """Run the agent's kernel on a task built from ``arguments``; its final output."""
        local = self._agents.get(f"{agent.name}:{agent.version}") or self._agents.get(agent.name)
        if local is None:
            known = ", ".join(self._agents)
            raise PipelineError(f"no local kernel for agent {agent.name} {agent.version} (have: {known})")
        messages = [Message.user(local.task(agent, skill, arguments))]
        if local.system_prompt is not None:
            messages.insert(0, Message.system(local.system_prompt))
        return await run_inner_agent(local.kernel, messages, agent, arguments, context)


async def run_inner_agent(
    kernel: AgentKernel,
    messages: list[Message],
    agent: AgentDefinition,
    arguments: JsonDict,
    context: RunContext,
) -> str:
    """Run ``agent`` on ``kernel`` as a step of ``context``'s run (its id is the outer run's id,
    a slash, the agent and a random suffix); its final output, or PipelineError."""
    run_id = f"{context.run_id}/{agent.name}-{uuid.uuid4().hex[:8]}"
    result = await kernel.run(messages, run_id=run_id, workspace=context.workspace, inputs=arguments)
    if result.final_output is None:
        raise PipelineError(
            f"agent {agent.name} ended ({result.termination}) after {result.turns} turns without output"
        )
    return result.final_output
