"""AgentKernel.run end to end with a scripted engine, a line plugin and Python tools."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from typing import Any

import pytest
from kernel_doubles import LinePlugin, StaticTools, schema

import structured_agents.kernel as kernel_pkg
from structured_agents.engines import (
    BatchInfo,
    BatchingEngine,
    Completion,
    Engine,
    FunctionEngine,
    GenerationRequest,
    SamplingParams,
    ScriptedEngine,
    by_run_id,
)
from structured_agents.errors import (
    ConfigError,
    EngineError,
    GrammarConfigError,
    KernelError,
    MaxTurnsExceeded,
    ParseError,
)
from structured_agents.grammar import GrammarConfig
from structured_agents.kernel import AgentKernel, KernelConfig, SlidingWindow
from structured_agents.observer import (
    BaseObserver,
    KernelEnd,
    ModelRequest,
    ModelResponse,
    RecordingObserver,
    ToolResultEvent,
)
from structured_agents.types import Message, ToolCall

pytestmark = pytest.mark.anyio

TASK = [Message.system("You review code."), Message.user("Review a.py and b.py")]


def make_tools(**extra: Any) -> StaticTools:
    async def read(path: str) -> str:
        await asyncio.sleep(0.02 if path == "a.py" else 0.0)  # the first call finishes last
        return f"contents of {path}"

    def submit_result(summary: str) -> str:
        if not summary:
            raise ValueError("summary must not be empty")
        return f"submitted: {summary}"

    tools = {
        "read": (schema("read", path="string"), read),
        "submit_result": (schema("submit_result", summary="string"), submit_result),
    }
    tools.update(extra)
    return StaticTools(tools)


def make_kernel(
    script: list[Any], *, tools: StaticTools | None = None, observers: tuple[Any, ...] = (), **config: Any
) -> tuple[AgentKernel, ScriptedEngine]:
    plugin = LinePlugin()
    engine = ScriptedEngine(script, plugin=plugin, validate_grammar=True)
    kernel = AgentKernel(
        plugin=plugin,
        engine=engine,
        tools=tools or make_tools(),
        config=KernelConfig(**config),
        observers=observers,
    )
    return kernel, engine


async def test_two_turns_with_parallel_calls_emit_events_in_order() -> None:
    recorder = RecordingObserver()
    script = [
        [ToolCall("read", {"path": "a.py"}), ToolCall("read", {"path": "b.py"})],
        [ToolCall("submit_result", {"summary": "both fine"})],
    ]
    kernel, engine = make_kernel(script, observers=(recorder,))
    with kernel:
        result = await kernel.run(TASK, run_id="r1")

    assert recorder.types == [
        "kernel_start",
        "model_request",
        "model_response",
        "tool_call",
        "tool_call",
        "tool_result",
        "tool_result",
        "turn_complete",
        "model_request",
        "model_response",
        "tool_call",
        "tool_result",
        "turn_complete",
        "kernel_end",
    ]
    outputs = [e.output for e in recorder.of_type(ToolResultEvent)]
    assert outputs == ["contents of a.py", "contents of b.py", "submitted: both fine"]  # call order
    assert [e.turn for e in recorder.events] == [0, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2]
    assert all(e.run_id == "r1" for e in recorder.events)
    json.dumps(recorder.to_dicts())  # every event is JSON-able

    assert result.termination == "termination_tool"
    assert result.final_output == "submitted: both fine"
    assert result.turns == 2
    assert [m.role for m in result.history] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
    ]
    assert [r.output for r in result.tool_results] == outputs
    assert result.usage.total_tokens > 0
    assert result.usage == recorder.of_type(KernelEnd)[0].usage
    assert engine.batch_sizes == [1, 1]
    assert [r.request_id for r in engine.requests] == ["r1:1", "r1:2"]
    assert "contents of a.py" in engine.requests[1].prompt  # the model saw the results


async def test_calls_after_the_termination_tool_in_the_same_turn_are_dropped() -> None:
    written: list[str] = []

    def write(path: str) -> str:
        written.append(path)
        return f"wrote {path}"

    recorder = RecordingObserver()
    script = [
        [
            ToolCall("write", {"path": "a.py"}),
            ToolCall("submit_result", {"summary": "done"}),
            ToolCall("write", {"path": "b.py"}),
        ]
    ]
    tools = make_tools(write=(schema("write", path="string"), write))
    kernel, _ = make_kernel(script, tools=tools, observers=(recorder,))
    with kernel:
        result = await kernel.run(TASK, run_id="r-drop")

    assert written == ["a.py"]
    assert result.termination == "termination_tool" and result.final_output == "submitted: done"
    assert [call.name for call in result.history[2].tool_calls] == ["write", "submit_result"]
    assert [m.role for m in result.history[3:]] == ["tool", "tool"]
    response = recorder.of_type(ModelResponse)[0]
    assert response.tool_calls == 2 and "b.py" in response.text  # the raw text keeps what was dropped


async def test_calls_run_concurrently_up_to_the_limit() -> None:
    running = 0
    peak = 0

    async def slow(n: int) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return str(n)

    calls = [ToolCall("slow", {"n": i}) for i in range(5)]
    for limit, expected_peak in ((2, 2), (8, 5)):
        peak = 0
        tools = make_tools(slow=(schema("slow", n="integer"), slow))
        kernel, _ = make_kernel([calls, "done"], tools=tools, tool_concurrency=limit)
        with kernel:
            result = await kernel.run(TASK)
        assert peak == expected_peak
        assert [r.output for r in result.tool_results] == ["0", "1", "2", "3", "4"]


async def test_answer_without_calls_ends_the_run() -> None:
    recorder = RecordingObserver()
    kernel, _ = make_kernel(["Nothing to do here."], observers=(recorder,))
    with kernel:
        result = await kernel.run(TASK)
    assert result.termination == "no_tool_calls"
    assert result.final_output == "Nothing to do here."
    assert result.final_message == Message.assistant("Nothing to do here.")
    assert recorder.types == [
        "kernel_start",
        "model_request",
        "model_response",
        "turn_complete",
        "kernel_end",
    ]


async def test_max_turns_returns_a_result_or_raises_in_strict_mode() -> None:
    script = [[ToolCall("read", {"path": "b.py"})]] * 3
    kernel, _ = make_kernel(script, max_turns=3)
    with kernel:
        result = await kernel.run(TASK)
    assert (result.termination, result.turns, result.final_output) == ("max_turns", 3, None)

    recorder = RecordingObserver()
    kernel, _ = make_kernel(script, max_turns=3, strict=True, observers=(recorder,))
    with kernel, pytest.raises(MaxTurnsExceeded, match="max_turns=3"):
        await kernel.run(TASK)
    assert recorder.of_type(KernelEnd)[0].reason == "max_turns"


async def test_tool_errors_are_results_the_model_sees() -> None:
    def check_error_was_seen(request: GenerationRequest) -> list[ToolCall]:
        assert "ValueError: summary must not be empty" in request.prompt
        return [ToolCall("submit_result", {"summary": "fixed"})]

    script = [
        [ToolCall("nope", {}), ToolCall("submit_result", {"summary": ""})],
        check_error_was_seen,
    ]
    kernel, _ = make_kernel(script, grammar=None)  # only an unconstrained model can invent a tool
    with kernel:
        result = await kernel.run(TASK)
    assert [r.is_error for r in result.tool_results] == [True, True, False]
    assert result.tool_results[0].output == "unknown tool nope"
    assert (result.termination, result.turns, result.final_output) == (
        "termination_tool",
        2,
        "submitted: fixed",
    )


async def test_a_failing_observer_does_not_break_the_run(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(BaseObserver):
        async def on_model_response(self, event: ModelResponse) -> None:
            raise RuntimeError("observer bug")

    recorder = RecordingObserver()
    kernel, _ = make_kernel(["ok"], observers=(Broken(), recorder))
    with kernel, caplog.at_level(logging.ERROR, logger="structured_agents.observer.composite"):
        result = await kernel.run(TASK, run_id="r9")
    assert result.termination == "no_tool_calls"
    assert recorder.types[-1] == "kernel_end" and "model_response" in recorder.types
    assert "observer Broken failed on model_response event of run r9" in caplog.text


async def test_engine_errors_end_the_run_and_are_converted() -> None:
    class Exploding:
        def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
            raise RuntimeError("CUDA out of memory")

    recorder = RecordingObserver()
    kernel = AgentKernel(plugin=LinePlugin(), engine=Exploding(), tools=make_tools(), observers=[recorder])
    with kernel, pytest.raises(EngineError, match="Exploding failed on request r2:1: RuntimeError") as info:
        await kernel.run(TASK, run_id="r2")
    assert isinstance(info.value.__cause__, RuntimeError)
    end = recorder.of_type(KernelEnd)[0]
    assert (end.reason, end.turn, end.error) == ("error", 1, f"EngineError: {info.value}")
    assert recorder.types == ["kernel_start", "model_request", "kernel_end"]


async def test_script_exhaustion_and_parse_errors_end_the_run() -> None:
    kernel, _ = make_kernel([[ToolCall("read", {"path": "b.py"})]])
    with kernel, pytest.raises(EngineError, match=r"script .* has 1 turns"):
        await kernel.run(TASK)

    recorder = RecordingObserver()
    plugin = LinePlugin()
    engine = ScriptedEngine(["CALL read {not json}"])
    kernel = AgentKernel(plugin=plugin, engine=engine, tools=make_tools(), observers=[recorder])
    with kernel, pytest.raises(ParseError, match="bad arguments of read"):
        await kernel.run(TASK)
    assert recorder.of_type(KernelEnd)[0].reason == "error"


async def test_a_call_cut_off_by_the_token_limit_is_tried_again_while_turns_remain() -> None:
    long_call = 'CALL submit_result {"summary": "' + "very " * 40 + '"}'
    recorder = RecordingObserver()
    kernel, engine = make_kernel(
        [long_call, 'CALL submit_result {"summary": "short"}'],
        observers=(recorder,),
        max_turns=2,
        sampling=SamplingParams(max_new_tokens=12),
    )
    with kernel:
        result = await kernel.run(TASK)

    assert (result.termination, result.final_output, result.turns) == (
        "termination_tool",
        "submitted: short",
        2,
    )
    responses = recorder.of_type(ModelResponse)
    assert [(r.finish_reason, r.tool_calls) for r in responses] == [("length", 0), ("stop", 1)]
    assert responses[0].text == long_call[:48]
    retry_prompt = engine.requests[1].prompt
    assert "cut off at the 12-token limit" in retry_prompt and "very very" not in retry_prompt


async def test_a_call_cut_off_on_the_last_turn_fails_the_run_naming_the_limit() -> None:
    recorder = RecordingObserver()
    kernel, _ = make_kernel(
        ['CALL submit_result {"summary": "' + "x" * 100 + '"}'],
        observers=(recorder,),
        max_turns=1,
        sampling=SamplingParams(max_new_tokens=12),
    )
    with kernel, pytest.raises(ParseError, match=r"cut off at max_new_tokens=12 .* no turn was left"):
        await kernel.run(TASK)
    assert recorder.of_type(KernelEnd)[0].reason == "error"


async def test_configuration_mistakes_fail_before_the_run() -> None:
    with pytest.raises(GrammarConfigError, match="'line' cannot build a 'json_schema' grammar"):
        make_kernel([], grammar=GrammarConfig(mode="json_schema"))
    kernel, _ = make_kernel([], termination_tool="finish")
    with kernel, pytest.raises(ConfigError, match="termination_tool='finish' is not among"):
        await kernel.run(TASK)
    with pytest.raises(KernelError, match="at least one message"):
        await kernel.run([])
    with pytest.raises(ConfigError, match="max_turns must be >= 1, got 0"):
        KernelConfig(max_turns=0)
    with pytest.raises(ConfigError, match="tool_concurrency"):
        KernelConfig(tool_concurrency=0)


async def test_grammar_is_built_once_and_can_be_disabled() -> None:
    built: list[int] = []

    class CountingPlugin(LinePlugin):
        def build_grammar(self, tools: Any, config: GrammarConfig) -> Any:
            built.append(len(tools))
            return super().build_grammar(tools, config)

    script = [[ToolCall("read", {"path": "b.py"})]] * 2 + ["done"]
    engine = ScriptedEngine(script, plugin=LinePlugin(), validate_grammar=True)
    with AgentKernel(plugin=CountingPlugin(), engine=engine, tools=make_tools()) as kernel:
        await kernel.run(TASK)
    assert built == [2]
    assert all(r.grammar is not None and r.grammar.kind == "ebnf" for r in engine.requests)

    kernel, engine = make_kernel(["done"], grammar=None)
    with kernel:
        await kernel.run(TASK)
    assert engine.requests[0].grammar is None


async def test_history_strategy_trims_what_the_model_sees_not_the_record() -> None:
    recorder = RecordingObserver()
    script = [[ToolCall("read", {"path": "b.py"})]] * 3 + ["done"]
    kernel, _ = make_kernel(script, history=SlidingWindow(4), observers=(recorder,))
    with kernel:
        result = await kernel.run(TASK)
    assert [e.messages for e in recorder.of_type(ModelRequest)] == [2, 4, 4, 4]
    assert len(result.history) == 2 + 3 * 2 + 1


async def test_tools_get_the_run_context() -> None:
    tools = make_tools()
    kernel, _ = make_kernel([[ToolCall("read", {"path": "b.py"})], "done"], tools=tools)
    with kernel:
        await kernel.run(TASK, run_id="ctx", inputs={"target": "b.py"})
    (context,) = tools.contexts
    assert (context.run_id, context.turn, context.inputs) == ("ctx", 1, {"target": "b.py"})


@pytest.mark.parametrize("batched", [False, True])
async def test_many_concurrent_runs_share_one_engine(batched: bool) -> None:
    def script_for(run_id: object) -> list[Any]:
        return [
            [ToolCall("read", {"path": f"{run_id}.py"})],
            [ToolCall("submit_result", {"summary": str(run_id)})],
        ]

    plugin = LinePlugin()
    scripted = ScriptedEngine(script_for, plugin=plugin, key=by_run_id, validate_grammar=True)
    engine = BatchingEngine(scripted, max_batch_size=64, max_wait_s=0.01) if batched else scripted
    with AgentKernel(plugin=plugin, engine=engine, tools=make_tools()) as kernel:
        results = await asyncio.gather(*(kernel.run(TASK, run_id=f"run{i}") for i in range(200)))
    if isinstance(engine, BatchingEngine):
        engine.close()
    assert [r.final_output for r in results] == [f"submitted: run{i}" for i in range(200)]
    assert sum(scripted.batch_sizes) == 400
    assert (max(scripted.batch_sizes) > 1) is batched


async def test_engine_reported_errors_and_wrong_batch_sizes_are_engine_errors() -> None:
    def failing(request: GenerationRequest, info: BatchInfo) -> Completion:
        return Completion(request_id=request.request_id, text="decoder crashed", finish_reason="error")

    class Greedy:
        def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
            return [Completion(request_id=r.request_id, text="x") for r in [*requests, *requests]]

    cases: list[tuple[Engine, str]] = [
        (FunctionEngine(failing), "reported an error on request r:1: 'decoder crashed'"),
        (Greedy(), "Greedy.generate returned 2 completions for 1 request"),
    ]
    for engine, message in cases:
        kernel = AgentKernel(plugin=LinePlugin(), engine=engine, tools=make_tools())
        with kernel, pytest.raises(EngineError, match=message):
            await kernel.run(TASK, run_id="r")


def test_kernel_public_names_are_sorted_and_importable() -> None:
    assert kernel_pkg.__all__ == sorted(kernel_pkg.__all__)
    for name in kernel_pkg.__all__:
        assert hasattr(kernel_pkg, name), name
