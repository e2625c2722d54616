"""Observer events serialise to JSON; base, null, recording and composite observers."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

import structured_agents.observer as observer_pkg
from structured_agents.observer import (
    BaseObserver,
    CompositeObserver,
    Event,
    KernelEnd,
    KernelStart,
    ModelRequest,
    ModelResponse,
    NullObserver,
    Observer,
    RecordingObserver,
    ToolCallEvent,
    ToolResultEvent,
    TurnComplete,
)
from structured_agents.types import TokenUsage, ToolCall

pytestmark = pytest.mark.anyio


def one_of_each(run_id: str = "r") -> list[Event]:
    usage = TokenUsage(10, 5)
    return [
        KernelStart(run_id=run_id, turn=0, plugin="line", tools=("a", "b"), max_turns=5, initial_messages=2),
        ModelRequest(run_id=run_id, turn=1, request_id="r:1", messages=2, prompt_chars=40, grammar="ebnf"),
        ModelResponse(
            run_id=run_id,
            turn=1,
            request_id="r:1",
            latency_s=0.5,
            usage=usage,
            batch_size=4,
            finish_reason="stop",
            text="CALL a {}",
            content=None,
            tool_calls=1,
        ),
        ToolCallEvent(run_id=run_id, turn=1, call=ToolCall("a", {"x": [1, 2]}, id="c1")),
        ToolResultEvent(
            run_id=run_id, turn=1, call_id="c1", name="a", output="ok", is_error=False, duration_s=0.1
        ),
        TurnComplete(run_id=run_id, turn=1, duration_s=0.7, tool_calls=1, tool_errors=0),
        KernelEnd(run_id=run_id, turn=1, reason="no_tool_calls", usage=usage, duration_s=0.8),
    ]


def test_every_event_serialises_to_json_with_its_type() -> None:
    dicts = [event.to_dict() for event in one_of_each()]
    assert [d["type"] for d in dicts] == [
        "kernel_start",
        "model_request",
        "model_response",
        "tool_call",
        "tool_result",
        "turn_complete",
        "kernel_end",
    ]
    for d in dicts:
        assert json.loads(json.dumps(d)) == d
        assert {"run_id", "turn", "timestamp"} <= d.keys()
    assert dicts[0]["tools"] == ["a", "b"]
    assert dicts[2]["usage"] == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    assert dicts[3]["call"] == {"id": "c1", "name": "a", "arguments": {"x": [1, 2]}}
    assert dicts[6]["error"] is None and dicts[6]["reason"] == "no_tool_calls"


def test_events_are_frozen_and_stamped() -> None:
    event = TurnComplete(run_id="r", turn=1, duration_s=0.1, tool_calls=0, tool_errors=0)
    with pytest.raises(AttributeError):
        event.turn = 2  # type: ignore[misc]
    assert event.timestamp > 1.7e9


async def test_base_observer_dispatches_to_one_hook_per_kind() -> None:
    seen: list[str] = []

    class Hooks(BaseObserver):
        async def on_kernel_start(self, event: KernelStart) -> None:
            seen.append("start")

        async def on_tool_result(self, event: ToolResultEvent) -> None:
            seen.append(f"result {event.call_id}")

        async def on_kernel_end(self, event: KernelEnd) -> None:
            seen.append(f"end {event.reason}")

    for event in one_of_each():
        await Hooks().on_event(event)
        await NullObserver().on_event(event)
    assert seen == ["start", "result c1", "end no_tool_calls"]
    assert isinstance(Hooks(), Observer) and isinstance(RecordingObserver(), Observer)


async def test_recording_observer_filters_by_kind_and_run() -> None:
    recorder = RecordingObserver()
    for event in one_of_each("r1") + one_of_each("r2"):
        await recorder.on_event(event)
    assert len(recorder.events) == 14
    assert [e.run_id for e in recorder.of_type(KernelEnd)] == ["r1", "r2"]
    assert [e.type for e in recorder.for_run("r2")] == recorder.types[:7]
    assert recorder.to_dicts()[0]["type"] == "kernel_start"


async def test_composite_fans_out_in_order_and_isolates_failures(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(BaseObserver):
        async def on_model_request(self, event: ModelRequest) -> None:
            raise ValueError("disk full")

    first, last = RecordingObserver(), RecordingObserver()
    composite = CompositeObserver([first, Broken(), last])
    with caplog.at_level(logging.ERROR, logger="structured_agents.observer.composite"):
        for event in one_of_each():
            await composite.on_event(event)
    assert first.types == last.types and len(last.events) == 7
    assert "observer Broken failed on model_request event of run r (turn 1)" in caplog.text
    assert "ValueError: disk full" in caplog.text


async def test_composite_does_not_swallow_cancellation() -> None:
    class Cancelled(BaseObserver):
        async def on_kernel_start(self, event: KernelStart) -> None:
            raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await CompositeObserver([Cancelled()]).on_event(one_of_each()[0])


def test_public_names_are_sorted_and_importable() -> None:
    assert observer_pkg.__all__ == sorted(observer_pkg.__all__)
    for name in observer_pkg.__all__:
        assert hasattr(observer_pkg, name), name
