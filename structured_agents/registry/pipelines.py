"""Pipeline tools (agent-as-tool): steps that call tools or agents, wired by JSON paths.

A pipeline runs its steps in order over a state document::

    {"input": <the call's arguments>, "steps": {"<step id>": {"output": <that step's output>}}}

A step's ``input`` maps each argument to a JSON path into that state (``{"text":
"$.steps.fetch.output.body"}``), or is one path selecting the whole arguments object (default
``$.input``: the pipeline's own arguments); ``constants`` add literal arguments. A step's
output is its result parsed as JSON when it is JSON, else the text. The pipeline's output is
the value at its ``output`` path (default: the last step's output), as text or JSON.

The seed's single-source form (``{"input": {"path": "$"}}``, ``{"step": {"stepId": "gather",
"path": "$.documents"}}``) is written here as one path: ``"$.input"``,
``"$.steps.gather.output.documents"``. Paths may only refer to the input and to earlier steps,
which is checked when the registry loads, as are the agents steps call (a version of the
agent must satisfy the step's ``version``) and their skills.

Tool steps run through :attr:`PipelineBackend.tools` (a ``ToolSource``), agent steps through
its :class:`~structured_agents.registry.agents.AgentRunner`. A failing step stops the
pipeline: the tool result is an error naming the pipeline and the step.
"""

from __future__ import annotations

import json
from typing import Any

from structured_agents.context import RunContext
from structured_agents.errors import ToolExecutionError
from structured_agents.registry.agents import AgentRunner
from structured_agents.registry.catalog import ToolCatalog
from structured_agents.registry.compiled import check_value
from structured_agents.registry.errors import PipelineError
from structured_agents.registry.plans import PlannedStep
from structured_agents.tools.protocol import ToolSource
from structured_agents.types import JsonDict, ToolCall, ToolResult, ToolSchema

__all__ = ["PipelineBackend"]


class PipelineBackend:
    """Runs the ``backend="pipeline"`` tools of a registry (a ToolBackend; never raises).

    ``tools`` runs tool steps; it may be set after construction, since the tool source is
    usually built over a backend that routes ``pipeline`` to this one.
    """

    def __init__(
        self, registry: ToolCatalog, *, tools: ToolSource | None = None, agents: AgentRunner | None = None
    ) -> None:
        self.registry = registry
        self.tools = tools
        self.agents = agents

    async def execute(self, call: ToolCall, schema: ToolSchema, context: RunContext) -> ToolResult:
        """Run the pipeline named by ``schema``; a failing step is an error result."""
        plan = self.registry.pipeline(schema.name)
        compiled = self.registry.compiled(schema.name)
        if plan is None or compiled is None:
            return ToolResult(
                call.id, call.name, f"{schema.name} is not a pipeline of {self.registry.name}", True
            )
        try:
            state: JsonDict = {"input": compiled.arguments(call.arguments), "steps": {}}
            for step in plan.steps:
                try:
                    output = await self._run(step, call, step.arguments(state), context)
                except ToolExecutionError as exc:  # names the step already
                    raise PipelineError(f"pipeline {plan.tool}: {exc}") from exc
                except Exception as exc:
                    raise PipelineError(
                        f"pipeline {plan.tool}: step {step.label} failed: {type(exc).__name__}: {exc}"
                    ) from exc
                state["steps"][step.id] = {"output": _parse(output)}
            final = state["steps"][plan.steps[-1].id]["output"]
            if plan.output is not None:
                found, final = plan.output.first(state)
                if not found:
                    raise PipelineError(f"pipeline {plan.tool}: output {plan.output} selects nothing")
            text = final if isinstance(final, str) else json.dumps(final, ensure_ascii=False)
            return ToolResult(call.id, call.name, compiled.output(text))
        except ToolExecutionError as exc:
            return ToolResult(call.id, call.name, str(exc), True)

    async def _run(self, step: PlannedStep, call: ToolCall, args: JsonDict, context: RunContext) -> str:
        if step.agent is not None:
            if self.agents is None:
                raise PipelineError(f"step {step.label}: no agent runner configured")
            check_value(step.skill_input, args, f"step {step.label}: invalid skill input")
            try:
                output = await self.agents.run_agent(step.agent, step.skill, args, context)
            except PipelineError as exc:
                raise PipelineError(f"step {step.label} failed: {exc}") from exc
            if step.skill_output is not None:
                check_value(step.skill_output, _parse(output), f"step {step.label}: invalid skill output")
            return output
        if self.tools is None:
            raise PipelineError(f"step {step.label}: no tool source configured")
        result = await self.tools.execute(ToolCall(step.tool or "", args, id=f"{call.id}.{step.id}"), context)
        if result.is_error:
            raise PipelineError(f"step {step.label} failed: {result.output}")
        return result.output


def _parse(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
