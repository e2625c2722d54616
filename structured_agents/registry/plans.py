"""Pipeline plans: a pipeline tool's steps, checked when the registry loads.

Paths may only refer to the input and to earlier steps (``$.input...``,
``$.steps.<earlier id>.output...``), step ids are unique, mapped and constant arguments do not
clash, and each agent step names an agent (a version of which satisfies the step's
``version``) and one of its skills. See :mod:`structured_agents.registry.pipelines` for how a
plan runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from jsonschema.protocols import Validator

from structured_agents.registry.errors import Loc, PipelineError, RegistryError
from structured_agents.registry.jsonpath import JsonPath
from structured_agents.registry.models import AgentCall, AgentDefinition, PipelineSpec
from structured_agents.types import JsonDict

__all__ = ["AgentResolver", "PipelinePlan", "PlannedStep", "plan_pipeline"]

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
