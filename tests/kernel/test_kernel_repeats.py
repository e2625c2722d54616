"""A failed call made again word for word: the model reads that it repeated itself."""

from __future__ import annotations

import pytest
from kernel_doubles import LinePlugin, StaticTools, schema

from structured_agents.engines import ScriptedEngine
from structured_agents.kernel import AgentKernel, KernelConfig, RunState
from structured_agents.kernel.repeats import REPEATED_CALL, note_repeated_failures
from structured_agents.observer import RecordingObserver, ToolResultEvent
from structured_agents.types import Message, ToolCall, ToolResult

pytestmark = pytest.mark.anyio

TASK = [Message.system("You fix files."), Message.user("Fix a.py")]


def tools() -> StaticTools:
    fixed: list[int] = []

    def fix(line: int) -> str:
        if line != 2:
            raise ValueError(f"line {line} has nothing to fix")
        fixed.append(line)
        return f"fixed line {line}"

    def submit_result() -> str:
        return "done"

    return StaticTools(
        {
            "fix": (schema("fix", line="integer"), fix),
            "submit_result": (schema("submit_result"), submit_result),
        }
    )


async def test_a_failed_call_repeated_word_for_word_tells_the_model() -> None:
    recorder = RecordingObserver()
    plugin = LinePlugin()
    script = [
        [ToolCall("fix", {"line": 1})],
        [ToolCall("fix", {"line": 1})],  # the same failing call: noted
        [ToolCall("fix", {"line": 3})],  # another failing call: not a repeat
        [ToolCall("fix", {"line": 1})],  # noted again, quoting the first error
        [ToolCall("fix", {"line": 2})],
        [ToolCall("submit_result", {})],
    ]
    engine = ScriptedEngine(script, plugin=plugin, validate_grammar=True)
    config = KernelConfig(max_turns=6, termination_tool="submit_result")
    with AgentKernel(
        plugin=plugin, engine=engine, tools=tools(), config=config, observers=[recorder]
    ) as kernel:
        result = await kernel.run(TASK)

    outputs = [m.content for m in result.history if m.role == "tool"]
    first = "ValueError: line 1 has nothing to fix"
    assert outputs == [
        first,
        REPEATED_CALL.format(earlier=first),
        "ValueError: line 3 has nothing to fix",
        REPEATED_CALL.format(earlier=first),
        "fixed line 2",
        "done",
    ]
    assert [r.is_error for r in result.tool_results] == [True, True, True, True, False, False]
    assert "You made this exact call already and it failed" in engine.requests[2].prompt  # the model read it
    raw = [e.output for e in recorder.of_type(ToolResultEvent)]
    assert raw[1] == result.tool_results[1].output == first  # the run's results and events: as returned


async def test_a_repeat_is_noted_from_a_stored_state_as_well() -> None:
    call = ToolCall("fix", {"line": 1}, "c1")
    state = RunState(messages=[Message.assistant(None, (call,))])
    state.tool_results.append(ToolResult("c1", "fix", "no such line", True))
    again = ToolCall("fix", {"line": 1}, "c2")
    other = ToolCall("fix", {"line": 1, "force": True}, "c3")
    stored = RunState.from_dict(state.to_dict())

    noted = note_repeated_failures(
        stored,
        [again, other, again],
        [
            ToolResult("c2", "fix", "no such line", True),
            ToolResult("c3", "fix", "bad", True),
            ToolResult("c2", "fix", "ok"),
        ],
    )

    assert [r.output for r in noted] == [REPEATED_CALL.format(earlier="no such line"), "bad", "ok"]


async def test_an_example_call_in_the_history_is_not_the_runs_own() -> None:
    example = ToolCall("fix", {"line": 1}, "example-0-0")
    state = RunState(
        messages=[
            Message.assistant(None, (example,)),
            Message.tool(ToolResult("example-0-0", "fix", "x", True)),
        ]
    )

    [result] = note_repeated_failures(
        state, [ToolCall("fix", {"line": 1}, "c1")], [ToolResult("c1", "fix", "e", True)]
    )

    assert result.output == "e"
