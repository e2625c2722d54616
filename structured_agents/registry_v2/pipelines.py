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
its :class:`~structured_agents.registry_v2.agents.AgentRunner`. A failing step stops the
pipeline: the tool result is an error naming the pipeline and the step.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jsonschema.protocols import Validator

from structured_agents.context import RunContext
from structured_agents.errors import ToolExecutionError
from structured_agents.registry_v2.agents import AgentRunner
from structured_agents.registry_v2.compiled import check_value
from structured_agents.registry_v2.errors import Loc, PipelineError, RegistryError
from structured_agents.registry_v2.jsonpath import JsonPath
from structured_agents.registry_v2.models import AgentCall, AgentDefinition, PipelineSpec
from structured_agents.tools.protocol import ToolSource
from structured_agents.types import JsonDict, ToolCall, ToolResult, ToolSchema

if TYPE_CHECKING:
    from structured_agents.registry_v2.registry import RegistryV2

__all__ = ["AgentResolver", "PipelineBackend", "PipelinePlan", "PlannedStep", "plan_pipeline"]

AgentResolver = Callable[[AgentCall, Loc], tuple[AgentDefinition, Validator | None, Validator | None]]
"""Finds the agent (and its skill's input and output validators) an agent step calls."""


@dataclass(frozen=True, slots=True)
class PlannedStep:
    """One checked step."""

    id: str
    tool: str | None
    """The tool a tool step calls."""
    agent: AgentDefinition | None
    """The agent (version chosen at load) an agent step runs."""
    skill: str | None
    inputs: JsonPath | tuple[tuple[str, JsonPath], ...]
    constants: JsonDict
    skill_input: Validator | None = None
    skill_output: Validator | None = None

    def arguments(self, state: JsonDict) -> JsonDict:
        """The step's arguments, read from the pipeline state."""
        if isinstance(self.inputs, JsonPath):
            found, value = self.inputs.first(state)
            if not found or not isinstance(value, dict):
                raise PipelineError(f"step {self.id}: {self.inputs} selects no object to pass as arguments")
            args = dict(value)
        else:
            args = {}
            for name, path in self.inputs:
                found, value = path.first(state)
                if not found:
                    raise PipelineError(f"step {self.id}: argument {name!r}: {path} selects nothing")
                args[name] = value
        return {**args, **self.constants}

    @property
    def label(self) -> str:
        """``fetch (tool http_get)`` / ``gather (agent research-agent 1.0.0)``."""
        if self.agent is not None:
            return f"{self.id} (agent {self.agent.name} {self.agent.version})"
        return f"{self.id} (tool {self.tool})"


@dataclass(frozen=True, slots=True)
class PipelinePlan:
    """A pipeline tool's checked steps."""

    tool: str
    steps: tuple[PlannedStep, ...]
    output: JsonPath | None


def plan_pipeline(tool: str, spec: PipelineSpec, loc: Loc, agents: AgentResolver) -> PipelinePlan:
    """Check a pipeline (paths, step ids, agents, skills) and plan it; errors name the field."""
    steps: list[PlannedStep] = []
    for index, step in enumerate(spec.steps):
        step_loc = (*loc, "steps", index)
        earlier = [s.id for s in steps]
        if step.id in earlier:
            raise RegistryError(f"step id {step.id!r} is used twice", (*step_loc, "id"))
        inputs: JsonPath | tuple[tuple[str, JsonPath], ...]
        if isinstance(step.input, str):
            inputs = _checked(step.input, earlier, (*step_loc, "input"))
        else:
            inputs = tuple((k, _checked(p, earlier, (*step_loc, "input", k))) for k, p in step.input.items())
            clash = sorted(step.input.keys() & step.constants.keys())
            if clash:
                raise RegistryError(
                    f"arguments {clash} are both mapped and constant", (*step_loc, "constants")
                )
        if step.operation.agent is not None:
            call = step.operation.agent
            agent, skill_in, skill_out = agents(call, (*step_loc, "operation", "agent"))
            steps.append(
                PlannedStep(step.id, None, agent, call.skill, inputs, step.constants, skill_in, skill_out)
            )
        else:
            name = step.operation.tool.name if step.operation.tool is not None else ""
            steps.append(PlannedStep(step.id, name, None, None, inputs, step.constants))
    ids = [s.id for s in steps]
    output = _checked(spec.output, ids, (*loc, "output")) if spec.output is not None else None
    return PipelinePlan(tool, tuple(steps), output)


def _checked(text: str, earlier: list[str], loc: Loc) -> JsonPath:
    path = JsonPath.parse(text)
    names = path.names
    if names[:1] == ("input",):
        return path
    if names[:1] != ("steps",) or len(names) < 2:
        raise RegistryError(f"{text!r} must start with $.input or $.steps.<step id>", loc)
    if names[1] not in earlier:
        raise RegistryError(
            f"{text!r} refers to step {names[1]!r}, which does not run before it "
            f"(earlier steps: {', '.join(earlier) or 'none'})",
            loc,
        )
    if len(names) > 2 and names[2] != "output":
        raise RegistryError(f"{text!r}: a step's state has only 'output'", loc)
    return path


class PipelineBackend:
    """Runs the ``backend="pipeline"`` tools of a registry (a ToolBackend; never raises).

    ``tools`` runs tool steps; it may be set after construction, since the tool source is
    usually built over a backend that routes ``pipeline`` to this one.
    """

    def __init__(
        self, registry: RegistryV2, *, tools: ToolSource | None = None, agents: AgentRunner | None = None
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
