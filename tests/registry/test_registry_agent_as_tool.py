"""End to end: an agent calls another agent through an agent-as-tool pipeline.

Both agents are real ``AgentKernel``\\ s with the FunctionGemma plugin, driven by
``ScriptedEngine``\\ s that check every turn against the grammar of the request. The outer
agent (``writer``) may use the pipeline ``summarize_text`` because it depends on the agent
``summarizer``; the pipeline runs the summarizer's own kernel, which calls the registry tool
``word_count`` (granted by its own dependencies) and submits; its final output is the tool
result the writer sees and quotes in its own submission.
"""

from __future__ import annotations

import json
import re

import pytest
from registry_doubles import FunctionServers

from structured_agents.engines import GenerationRequest, ScriptedEngine, by_run_id
from structured_agents.kernel import AgentKernel, KernelConfig
from structured_agents.observer import KernelEnd, RecordingObserver
from structured_agents.plugins.registry import get_plugin
from structured_agents.registry import KernelAgentRunner, LocalAgent, Registry
from structured_agents.types import Message, ToolCall

pytestmark = pytest.mark.anyio

REGISTRY = {
    "schemaVersion": "2.0",
    "servers": [{"name": "text-service", "version": "1.1.0", "providedTools": [{"name": "count_words"}]}],
    "tools": [
        {
            "name": "word_count",
            "description": "Count the words of a text.",
            "source": {"server": "text-service", "tool": "count_words", "serverVersion": "^1.0"},
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        },
        {
            "name": "submit_result",
            "description": "Submit the final summary.",
            "source": {"server": "local", "tool": "submit_result"},
            "inputSchema": {
                "type": "object",
                "properties": {"summary": {"type": "string"}},
                "required": ["summary"],
            },
        },
        {
            "name": "summarize_text",
            "description": "Have the summarizer agent summarize a text.",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
            "spec": {
                "pipeline": {
                    "steps": [
                        {
                            "id": "summary",
                            "operation": {
                                "agent": {"name": "summarizer", "skill": "summarize", "version": "^1"}
                            },
                            "input": {"text": "$.input.text"},
                        }
                    ]
                }
            },
        },
    ],
    "agents": [
        {
            "name": "summarizer",
            "version": "1.0.0",
            "skills": [
                {
                    "name": "summarize",
                    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
                    "outputSchema": {"type": "string"},
                }
            ],
            "dependencies": [{"tool": "word_count"}, {"tool": "submit_result"}],
        },
        {
            "name": "writer",
            "version": "1.0.0",
            "dependencies": [{"agent": "summarizer"}, {"tool": "submit_result"}],
        },
    ],
}


def last(request: GenerationRequest, role: str) -> str:
    return str(next(m["content"] for m in reversed(request.messages) if m["role"] == role))


def summarizer_turn_1(request: GenerationRequest) -> list[ToolCall]:
    task = json.loads(last(request, "user").partition("Input: ")[2])
    return [ToolCall("word_count", {"text": task["text"]})]


def summarizer_turn_2(request: GenerationRequest) -> list[ToolCall]:
    count = last(request, "tool")
    return [ToolCall("submit_result", {"summary": f"a text of {count} words"})]


def writer_turn_2(request: GenerationRequest) -> list[ToolCall]:
    return [ToolCall("submit_result", {"summary": f"the summarizer says: {last(request, 'tool')}"})]


def text_servers(words: str | None = None) -> FunctionServers:
    """The text service (counting words, or answering ``words``) and the local submit tool."""
    count = (lambda text: words) if words is not None else (lambda text: str(len(text.split())))
    return FunctionServers(
        {"text-service:1.1.0/count_words": count, "local/submit_result": lambda summary: summary}
    )


async def test_an_agent_calls_another_agent_through_a_pipeline_tool() -> None:
    registry = Registry.from_dict(REGISTRY, name="team")
    servers = text_servers()

    inner_plugin = get_plugin("function_gemma")
    inner_engine = ScriptedEngine(
        [summarizer_turn_1, summarizer_turn_2], plugin=inner_plugin, key=by_run_id, validate_grammar=True
    )
    inner_events = RecordingObserver()
    inner = AgentKernel(
        plugin=inner_plugin,
        engine=inner_engine,
        tools=registry.tool_source(servers, caller="summarizer"),
        config=KernelConfig(max_turns=4),
        observers=[inner_events],
    )
    agents = KernelAgentRunner({"summarizer": LocalAgent(inner, system_prompt="You summarize.")})
    outer_tools = registry.tool_source(servers, agents=agents, caller="writer")
    assert [schema.name for schema in outer_tools.tools()] == ["submit_result", "summarize_text"]

    outer_plugin = get_plugin("function_gemma")
    outer_engine = ScriptedEngine(
        [[ToolCall("summarize_text", {"text": "one two three four five"})], writer_turn_2],
        plugin=outer_plugin,
        key=by_run_id,
        validate_grammar=True,
    )
    with (
        inner,
        AgentKernel(
            plugin=outer_plugin, engine=outer_engine, tools=outer_tools, config=KernelConfig(max_turns=4)
        ) as outer,
    ):
        result = await outer.run([Message.user("Write about the text.")], run_id="writer-run")

    assert result.termination == "termination_tool"
    assert result.final_output == "the summarizer says: a text of 5 words"
    [pipeline_result] = [r for r in result.tool_results if r.name == "summarize_text"]
    assert (pipeline_result.is_error, pipeline_result.output) == (False, "a text of 5 words")
    assert [call for call in servers.calls if call[0] != "local"] == [
        ("text-service:1.1.0", "count_words", {"text": "one two three four five"})
    ]

    [inner_end] = [e for e in inner_events.events if isinstance(e, KernelEnd)]
    assert inner_end.reason == "termination_tool" and inner_end.run_id.startswith("writer-run/summarizer-")
    first_inner_request = inner_engine.requests[0]
    assert first_inner_request.messages[0] == {"role": "system", "content": "You summarize."}
    assert re.search(
        r'Skill: summarize\nInput: \{"text": "one two three four five"\}', last(first_inner_request, "user")
    )
    # each agent is offered only what its dependencies grant (plus its own submit tool)
    assert [t["function"]["name"] for t in first_inner_request.tools] == ["word_count", "submit_result"]


async def test_an_inner_agent_without_output_is_an_error_result_the_outer_agent_sees() -> None:
    registry = Registry.from_dict(REGISTRY, name="team")
    servers = text_servers("2")
    inner_plugin = get_plugin("function_gemma")
    inner = AgentKernel(
        plugin=inner_plugin,
        engine=ScriptedEngine([summarizer_turn_1], plugin=inner_plugin, key=by_run_id),
        tools=registry.tool_source(servers, caller="summarizer"),
        config=KernelConfig(max_turns=1),  # one turn, spent on word_count: no output
    )
    agents = KernelAgentRunner({"summarizer:1.0.0": LocalAgent(inner)})
    outer_plugin = get_plugin("function_gemma")
    outer_engine = ScriptedEngine(
        [[ToolCall("summarize_text", {"text": "two words"})], writer_turn_2],
        plugin=outer_plugin,
        key=by_run_id,
    )
    outer_tools = registry.tool_source(servers, agents=agents, caller="writer")
    with inner, AgentKernel(plugin=outer_plugin, engine=outer_engine, tools=outer_tools) as outer:
        result = await outer.run([Message.user("Write.")])
    message = (
        "pipeline summarize_text: step summary (agent summarizer 1.0.0) failed: "
        "agent summarizer ended (max_turns) after 1 turns without output"
    )
    first = result.tool_results[0]
    assert (first.name, first.is_error, first.output) == ("summarize_text", True, message)
    assert result.final_output == f"the summarizer says: {message}"
