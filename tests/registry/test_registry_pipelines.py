"""Pipeline tools: steps wired by JSON paths, agent steps, load-time checks and failures."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from registry_doubles import FunctionServers, fixture_registry

from structured_agents.context import RunContext
from structured_agents.registry import (
    AgentRunner,
    PipelineBackend,
    Registry,
    RegistryError,
    RoutingError,
)
from structured_agents.registry.models import AgentDefinition
from structured_agents.types import JsonDict, ToolCall

pytestmark = pytest.mark.anyio

CTX = RunContext(run_id="run-7")


def pipeline_doc(steps: list[dict[str, Any]], output: str | None = None, **extra: Any) -> dict[str, Any]:
    pipeline: dict[str, Any] = {"steps": steps, **({"output": output} if output else {})}
    return {
        "schemaVersion": "2.0",
        "servers": [{"name": "web", "version": "1.0.0"}],
        "tools": [
            {"name": "fetch", "source": {"server": "web", "tool": "http_get", "serverVersion": "^1"}},
            {"name": "shout", "source": {"server": "web", "tool": "upper", "serverVersion": "^1"}},
            {
                "name": "fetch_and_shout",
                "description": "Fetch a page and shout its body.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"url": {"type": "string"}},
                    "required": ["url"],
                },
                "spec": {"pipeline": pipeline},
            },
        ],
        **extra,
    }


TWO_STEPS = [
    {"id": "fetch", "operation": {"tool": {"name": "fetch"}}},
    {
        "id": "shout",
        "operation": {"tool": {"name": "shout"}},
        "input": {"text": "$.steps.fetch.output.body"},
        "constants": {"exclaim": True},
    },
]
SERVERS: dict[str, Callable[..., Any]] = {
    "web:1.0.0/http_get": lambda url: {"status": 200, "body": f"hello from {url}"},
    "web:1.0.0/upper": lambda text, exclaim: text.upper() + ("!" if exclaim else ""),
}


async def test_the_second_step_uses_the_first_steps_output() -> None:
    reg = Registry.from_dict(pipeline_doc(TWO_STEPS))
    servers = FunctionServers(SERVERS)
    tools = reg.tool_source(servers)
    schema = reg.resolve("fetch_and_shout")
    assert schema is not None and (schema.backend, schema.server) == ("pipeline", None)
    result = await tools.execute(ToolCall("fetch_and_shout", {"url": "x.org"}, id="p1"), CTX)
    assert (result.call_id, result.is_error, result.output) == ("p1", False, "HELLO FROM X.ORG!")
    assert servers.calls == [
        ("web:1.0.0", "http_get", {"url": "x.org"}),  # default input: the pipeline's arguments
        ("web:1.0.0", "upper", {"text": "hello from x.org", "exclaim": True}),
    ]


async def test_the_output_path_picks_from_any_step() -> None:
    reg = Registry.from_dict(pipeline_doc(TWO_STEPS, output="$.steps.fetch.output.status"))
    result = await reg.tool_source(FunctionServers(SERVERS)).execute(
        ToolCall("fetch_and_shout", {"url": "u"}), CTX
    )
    assert result.output == "200"


async def test_a_failing_step_stops_the_pipeline_with_an_error_naming_it() -> None:
    servers = FunctionServers({"web:1.0.0/http_get": lambda url: {"status": 404}})
    tools = Registry.from_dict(pipeline_doc(TWO_STEPS)).tool_source(servers)
    result = await tools.execute(ToolCall("fetch_and_shout", {"url": "u"}), CTX)
    assert result.is_error
    assert result.output == (
        "pipeline fetch_and_shout: step shout: argument 'text': $.steps.fetch.output.body selects nothing"
    )
    result = await tools.execute(ToolCall("fetch_and_shout", {}), CTX)
    assert result.output == "invalid arguments for fetch_and_shout: $: 'url' is a required property"
    servers.handlers["web:1.0.0/http_get"] = lambda url: 1 / 0
    result = await tools.execute(ToolCall("fetch_and_shout", {"url": "u"}), CTX)
    assert result.output == (
        "pipeline fetch_and_shout: step fetch (tool fetch) failed: ZeroDivisionError: division by zero"
    )


class EchoAgents:
    """An AgentRunner that answers with what it was asked (and records it)."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, str, str | None, JsonDict]] = []

    async def run_agent(
        self, agent: AgentDefinition, skill: str | None, arguments: JsonDict, context: RunContext
    ) -> str:
        self.runs.append((agent.name, agent.version, skill, arguments))
        return f"summary of {arguments['text'][:12]}"


async def test_an_agent_step_runs_the_chosen_agent_version_with_its_skill() -> None:
    reg = fixture_registry()
    agents = EchoAgents()
    assert isinstance(agents, AgentRunner)
    hits = {"hits": [{"id": "d1", "body": "the first document body"}]}
    tools = reg.tool_source(
        FunctionServers({"doc-service:1.2.0/search_documents": lambda query: hits}), agents=agents
    )
    result = await tools.execute(ToolCall("search_and_summarize", {"query": "q"}), CTX)
    assert (result.is_error, result.output) == (False, "summary of the first do")
    assert agents.runs == [
        ("summarizer", "1.0.0", "summarize", {"text": "the first document body", "style": "short"})
    ]


async def test_agent_steps_check_the_skill_input() -> None:
    reg = fixture_registry()
    hits = {"hits": [{"body": 42}]}
    tools = reg.tool_source(
        FunctionServers({"doc-service:1.2.0/search_documents": lambda query: hits}), agents=EchoAgents()
    )
    result = await tools.execute(ToolCall("search_and_summarize", {"query": "q"}), CTX)
    assert result.output == (
        "pipeline search_and_summarize: step summary (agent summarizer 1.0.0): invalid skill input: "
        "$.text: 42 is not of type 'string'"
    )


async def test_without_an_agent_runner_agent_steps_fail() -> None:
    reg = fixture_registry()
    backend = PipelineBackend(reg)
    schema = reg.resolve("search_and_summarize")
    assert schema is not None
    result = await backend.execute(ToolCall("search_and_summarize", {"query": "q"}), schema, CTX)
    assert result.is_error and "step search (tool search_docs): no tool source configured" in result.output


AGENT = {"name": "helper", "version": "1.2.0", "skills": [{"name": "help"}]}


@pytest.mark.parametrize(
    ("steps", "error", "message"),
    [
        (
            [
                {"id": "a", "operation": {"tool": {"name": "fetch"}}, "input": {"x": "$.steps.b.output"}},
                {"id": "b", "operation": {"tool": {"name": "fetch"}}},
            ],
            RegistryError,
            r"steps\[0\]\.input\.x: '\$\.steps\.b\.output' refers to step 'b', which does not run before it",
        ),
        (
            [{"id": "a", "operation": {"tool": {"name": "fetch"}}, "input": "$.url"}],
            RegistryError,
            r"steps\[0\]\.input: '\$\.url' must start with \$\.input or \$\.steps\.<step id>",
        ),
        (
            [
                {"id": "a", "operation": {"tool": {"name": "fetch"}}},
                {"id": "a", "operation": {"tool": {"name": "fetch"}}},
            ],
            RegistryError,
            r"steps\[1\]\.id: step id 'a' is used twice",
        ),
        (
            [{"id": "a", "operation": {"agent": {"name": "nobody"}}}],
            RegistryError,
            r"steps\[0\]\.operation\.agent\.name: no agent 'nobody'",
        ),
        (
            [{"id": "a", "operation": {"agent": {"name": "helper", "version": "^2"}}}],
            RoutingError,
            r"steps\[0\]\.operation\.agent\.version: "
            r"no version of agent 'helper' satisfies '\^2' \(1\.2\.0\)",
        ),
        (
            [{"id": "a", "operation": {"agent": {"name": "helper", "skill": "fly"}}}],
            RegistryError,
            r"operation\.agent\.skill: agent helper 1\.2\.0 has no skill 'fly' \(help\)",
        ),
        (
            [{"id": "a", "operation": {"tool": {"name": "fetch_and_shout"}}}],
            RegistryError,
            r"tools\[2\]\.spec: pipelines call each other in a cycle: fetch_and_shout -> fetch_and_shout",
        ),
        (
            [{"id": "a", "operation": {"pattern": {"name": "scatter"}}}],
            RegistryError,
            r"steps\[0\]\.operation\.pattern: Extra inputs are not permitted",
        ),
    ],
)
def test_pipelines_are_checked_when_loading(
    steps: list[dict[str, Any]], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message) as info:
        Registry.from_dict(pipeline_doc(steps, agents=[AGENT]))
    assert str(info.value).startswith("<dict>: tools[2].spec")


def test_pipelines_calling_each_other_are_a_cycle() -> None:
    doc = pipeline_doc([{"id": "a", "operation": {"tool": {"name": "other"}}}])
    other = {"id": "b", "operation": {"tool": {"name": "fetch_and_shout"}}}
    doc["tools"].append({"name": "other", "spec": {"pipeline": {"steps": [other]}}})
    with pytest.raises(
        RegistryError, match=r"tools\[3\]\.spec: .* cycle: fetch_and_shout -> other -> fetch_and_shout"
    ):
        Registry.from_dict(doc)


async def test_pipeline_outputs_are_json_when_not_text() -> None:
    steps = [{"id": "fetch", "operation": {"tool": {"name": "fetch"}}}]
    tools = Registry.from_dict(pipeline_doc(steps)).tool_source(FunctionServers(SERVERS))
    result = await tools.execute(ToolCall("fetch_and_shout", {"url": "u"}), CTX)
    assert json.loads(result.output) == {"status": 200, "body": "hello from u"}
