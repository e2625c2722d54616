"""The kernel with the real model plugins: grammar-valid scripted turns, end to end."""

from __future__ import annotations

import pytest
from kernel_doubles import StaticTools, schema

from structured_agents.engines import ScriptedEngine
from structured_agents.errors import EngineError
from structured_agents.grammar import GrammarConfig
from structured_agents.kernel import AgentKernel, KernelConfig
from structured_agents.observer import KernelEnd, RecordingObserver
from structured_agents.plugins import get_plugin
from structured_agents.types import Message, ToolCall

pytestmark = pytest.mark.anyio

TASK = [Message.system("You review code."), Message.user("Review a.py.")]


def tools() -> StaticTools:
    return StaticTools(
        {
            "read": (schema("read", path="string"), lambda path: f"def {path[0]}(): pass"),
            "submit_result": (schema("submit_result", summary="string"), lambda summary: summary),
        }
    )


@pytest.mark.parametrize(
    ("plugin_name", "mode"),
    [("function_gemma", "ebnf"), ("function_gemma", "structural_tag"), ("qwen", "structural_tag")],
)
async def test_real_plugins_run_grammar_valid_scripts(plugin_name: str, mode: str) -> None:
    plugin = get_plugin(plugin_name)
    script = [
        [ToolCall("read", {"path": "a.py"}), ToolCall("read", {"path": "b.py"})],
        [ToolCall("submit_result", {"summary": "a and b are trivial"})],
    ]
    engine = ScriptedEngine(script, plugin=plugin, validate_grammar=True)
    config = KernelConfig(grammar=GrammarConfig(mode=mode))  # type: ignore[arg-type]
    with AgentKernel(plugin=plugin, engine=engine, tools=tools(), config=config) as kernel:
        result = await kernel.run(TASK)
    assert (result.termination, result.final_output) == ("termination_tool", "a and b are trivial")
    assert [r.output for r in result.tool_results] == [
        "def a(): pass",
        "def b(): pass",
        "a and b are trivial",
    ]
    assert all(r.grammar is not None and r.grammar.kind == mode for r in engine.requests)
    assert "def b(): pass" in engine.requests[1].prompt  # the plugin rendered the results back


async def test_a_scripted_turn_the_grammar_forbids_fails_the_run() -> None:
    plugin = get_plugin("function_gemma")
    engine = ScriptedEngine([[ToolCall("rm_rf", {})]], plugin=plugin, validate_grammar=True)
    recorder = RecordingObserver()
    kernel = AgentKernel(plugin=plugin, engine=engine, tools=tools(), observers=[recorder])
    with kernel, pytest.raises(EngineError, match="violates the request's ebnf grammar"):
        await kernel.run(TASK)
    assert recorder.of_type(KernelEnd)[0].reason == "error"
