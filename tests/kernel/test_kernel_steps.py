"""The per-turn step API: a run split across machines with its state persisted as JSON."""

from __future__ import annotations

import json

import pytest
from kernel_doubles import LinePlugin, StaticTools, schema

from structured_agents.engines import Completion, ScriptedEngine
from structured_agents.errors import KernelError
from structured_agents.kernel import AgentKernel, RunResult, RunState
from structured_agents.observer import RecordingObserver
from structured_agents.types import Message, ToolCall, ToolResult

pytestmark = pytest.mark.anyio

TASK = [Message.system("You count."), Message.user("Count to two, then submit.")]
SCRIPT = [
    [ToolCall("inc", {"n": 0}), ToolCall("inc", {"n": 10})],
    [ToolCall("submit_result", {"total": 2})],
]


def tools() -> StaticTools:
    return StaticTools(
        {
            "inc": (schema("inc", n="integer"), lambda n: str(n + 1)),
            "submit_result": (schema("submit_result", total="integer"), lambda total: f"total={total}"),
        }
    )


def persisted(state: RunState) -> RunState:
    """What a worker reads back after another one stored the state."""
    return RunState.from_dict(json.loads(json.dumps(state.to_dict())))


async def test_a_run_split_across_workers_matches_a_local_run() -> None:
    plugin = LinePlugin()
    engine = ScriptedEngine(SCRIPT, plugin=plugin, validate_grammar=True)
    model_events, tool_events = RecordingObserver(), RecordingObserver()
    model_side = AgentKernel(plugin=plugin, engine=engine, tools=tools(), observers=[model_events])
    tool_side = AgentKernel(plugin=plugin, engine=engine, tools=tools(), observers=[tool_events])

    with model_side, tool_side:
        state = persisted(await model_side.start(TASK, run_id="job-7"))
        while not state.done:
            request = await model_side.build_request(state)
            completion = engine.generate([request])[0]  # e.g. on the GPU worker
            calls = await model_side.apply_completion(state, completion)
            state = persisted(state)
            assert state.pending_calls == calls
            if calls:
                results = await tool_side.execute_calls(state)  # e.g. on a tool worker
                await tool_side.apply_results(state, results)
                state = persisted(state)
        distributed = tool_side.result(state)

    local_engine = ScriptedEngine(SCRIPT, plugin=plugin)
    with AgentKernel(plugin=plugin, engine=local_engine, tools=tools()) as local_kernel:
        local = await local_kernel.run(TASK, run_id="job-7")

    assert distributed.final_output == local.final_output == "total=2"
    assert [r.output for r in distributed.tool_results] == ["1", "11", "total=2"]
    assert [m.role for m in distributed.history] == [m.role for m in local.history]
    assert distributed.usage == local.usage
    assert model_events.types == [
        "kernel_start",
        "model_request",
        "model_response",
        "model_request",
        "model_response",
    ]
    assert tool_events.types == [
        "tool_call",
        "tool_call",
        "tool_result",
        "tool_result",
        "turn_complete",
        "tool_call",
        "tool_result",
        "turn_complete",
        "kernel_end",
    ]
    json.dumps(distributed.to_dict())


async def test_state_round_trips_through_json() -> None:
    plugin = LinePlugin()
    with AgentKernel(plugin=plugin, engine=ScriptedEngine(SCRIPT, plugin=plugin), tools=tools()) as kernel:
        state = await kernel.start(TASK, inputs={"file": "a.py"})
        await kernel.step(state)
    assert persisted(state) == state
    assert state.turn == 1 and state.phase == "model" and len(state.tool_results) == 2


async def test_steps_refuse_the_wrong_phase_and_foreign_completions() -> None:
    plugin = LinePlugin()
    with AgentKernel(plugin=plugin, engine=ScriptedEngine(SCRIPT, plugin=plugin), tools=tools()) as kernel:
        state = await kernel.start(TASK, run_id="r")
        with pytest.raises(KernelError, match="run r is in phase 'model', this step needs 'tools'"):
            await kernel.apply_results(state, [])
        request = await kernel.build_request(state)
        with pytest.raises(KernelError, match="needs 'model'"):
            await kernel.build_request(state)
        with pytest.raises(KernelError, match="awaits request r:1, got a completion of other"):
            await kernel.apply_completion(state, Completion(request_id="other", text="hi"))
        calls = await kernel.apply_completion(state, await kernel.generate(request))
        with pytest.raises(KernelError, match="do not answer the pending calls"):
            await kernel.apply_results(state, [ToolResult(calls[0].id, "inc", "1")])
        with pytest.raises(KernelError, match="has no result"):
            kernel.result(state)


async def test_step_resumes_a_state_stored_between_model_and_tools() -> None:
    plugin = LinePlugin()
    with AgentKernel(plugin=plugin, engine=ScriptedEngine(SCRIPT, plugin=plugin), tools=tools()) as kernel:
        state = await kernel.start(TASK)
        await kernel.apply_completion(state, await kernel.generate(await kernel.build_request(state)))
        resumed = persisted(state)
        assert resumed.phase == "tools"
        while not resumed.done:
            await kernel.step(resumed)
        result = kernel.result(resumed)
    assert isinstance(result, RunResult) and result.final_output == "total=2"
