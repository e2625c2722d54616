"""StepLoop and GenerationStream: requests join between steps, stream, cancel, and survive failures.

``SpellingEngine`` is a real streaming engine without a model: each step writes the next
character of every live request's prompt, up to ``max_batch_size`` rows at once.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from concurrent.futures import CancelledError
from dataclasses import dataclass, field

import pytest

from structured_agents.engines.batching import BatchingEngine
from structured_agents.engines.step_loop import StepLoop
from structured_agents.errors import EngineError
from structured_agents.kernel.engine import Completion, GenerationRequest
from structured_agents.kernel.streaming import GenerationStream, StreamDelta, StreamingEngine


@dataclass
class Spelling:
    stream: GenerationStream
    written: str = ""
    steps: list[int] = field(default_factory=list)


class SpellingStepper:
    def __init__(self, max_batch_size: int) -> None:
        self.max_batch_size = max_batch_size
        self.rows: list[Spelling] = []
        self.sizes: list[int] = []
        self.explode_on: str | None = None

    def room(self) -> int:
        return self.max_batch_size - len(self.rows)

    def full(self) -> bool:
        return len(self.rows) >= self.max_batch_size

    def live(self) -> int:
        return len(self.rows)

    def admit(self, pending: list[Spelling]) -> None:
        self.rows += pending

    def step(self) -> None:
        self.rows = [row for row in self.rows if not row.stream.cancelled]
        self.sizes.append(len(self.rows))
        for row in self.rows:
            prompt = row.stream.request.prompt
            if prompt == self.explode_on:
                raise RuntimeError("the model fell over")
            row.written += prompt[len(row.written)]
            row.steps.append(len(self.rows))
            row.stream.push(StreamDelta(row.written[-1]))
        for row in self.rows:
            if row.written == row.stream.request.prompt:
                size = round(sum(row.steps) / len(row.steps))
                row.stream.finish(Completion(row.stream.request.request_id, row.written, batch_size=size))
        self.rows = [row for row in self.rows if not row.stream.done()]
        time.sleep(0.001)

    def abort(self, error: EngineError) -> None:
        for row in self.rows:
            row.stream.fail(error)
        self.rows = []


class SpellingEngine:
    def __init__(self, max_batch_size: int = 4) -> None:
        self.stepper = SpellingStepper(max_batch_size)
        self.loop: StepLoop[Spelling] = StepLoop(self.stepper, name="spelling")

    def submit(self, request: GenerationRequest) -> GenerationStream:
        stream = GenerationStream(request)
        stream.on_cancel(self.loop.wake)
        self.loop.put(Spelling(stream))
        return stream

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        streams = [self.submit(request) for request in requests]
        return [stream.result() for stream in streams]


def test_requests_join_between_steps_and_stream_from_threads_and_asyncio() -> None:
    engine = SpellingEngine()
    long = engine.submit(GenerationRequest("a" * 40))
    deltas = iter(long)
    assert next(deltas).text == "a"

    async def read(stream: GenerationStream) -> str:
        return "".join([delta.text async for delta in stream])

    short = engine.submit(GenerationRequest("hello"))
    assert asyncio.run(read(short)) == "hello" == short.result().text
    assert "".join(["a", *(d.text for d in deltas)]) == "a" * 40
    assert short.result().batch_size == 2 and 2 in engine.stepper.sizes  # decoded side by side
    engine.loop.close()


def test_the_batch_takes_max_batch_size_rows_and_the_rest_wait() -> None:
    engine = SpellingEngine(max_batch_size=2)
    completions = engine.generate([GenerationRequest(f"row{i}") for i in range(5)])
    assert [c.text for c in completions] == [f"row{i}" for i in range(5)]
    assert max(engine.stepper.sizes) == 2
    occupancy = engine.loop.occupancy()
    assert occupancy.steps == len(engine.stepper.sizes) and occupancy.rows == sum(engine.stepper.sizes)
    assert occupancy.backlogged >= 1 and occupancy.share == 1.0  # never part-empty while rows waited
    engine.loop.close()


class GroupingStepper(SpellingStepper):
    """Admits only into an empty batch, as a stepper that admits rows in groups may hold back."""

    def room(self) -> int:
        return 0 if self.rows else self.max_batch_size


def test_room_held_back_is_not_counted_as_a_full_batch() -> None:
    engine = SpellingEngine(max_batch_size=3)
    engine.stepper = GroupingStepper(3)
    engine.loop = StepLoop(engine.stepper, name="grouping")
    streams = [GenerationStream(GenerationRequest(text)) for text in ("ab", "abcdef", "abc", "abcd")]
    engine.loop.put(*(Spelling(stream) for stream in streams))  # queued together: 3 join, 1 waits
    assert [stream.result().text for stream in streams] == ["ab", "abcdef", "abc", "abcd"]
    sizes = engine.stepper.sizes
    assert sizes == [3, 3, 2, 1, 1, 1, 1, 1, 1, 1]  # "abcd" waited for an empty batch
    occupancy = engine.loop.occupancy()
    assert occupancy.backlogged == 6 and occupancy.full == 2  # held-back room is not full
    engine.loop.close()


def test_a_cancelled_stream_leaves_at_the_next_step() -> None:
    engine = SpellingEngine()
    stream = engine.submit(GenerationRequest("z" * 100_000))
    next(iter(stream))
    assert stream.cancel() and not stream.cancel()
    deadline = time.monotonic() + 10
    while engine.stepper.live() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert engine.stepper.live() == 0
    with pytest.raises(CancelledError):
        stream.result()
    assert [delta.text for delta in stream][:1] == ["z"]  # iteration ends instead of blocking
    engine.loop.close()


def test_a_failed_step_fails_the_live_requests_and_the_loop_keeps_serving() -> None:
    engine = SpellingEngine()
    engine.stepper.explode_on = "boom"
    bystander = engine.submit(GenerationRequest("b" * 1000))
    next(iter(bystander))  # live when the next request makes a step fail
    failed = [engine.submit(GenerationRequest("boom")), bystander]
    for stream in failed:
        with pytest.raises(EngineError, match="the model fell over"):
            stream.result(timeout=10)
    with pytest.raises(EngineError, match="the model fell over"):
        list(failed[0])
    assert engine.generate([GenerationRequest("after")])[0].text == "after"
    engine.loop.close()
    with pytest.raises(EngineError, match="closed"):
        engine.submit(GenerationRequest("late"))


def test_batching_engine_feeds_a_streaming_engine_continuously() -> None:
    inner = SpellingEngine(max_batch_size=8)
    assert isinstance(inner, StreamingEngine)
    barrier = threading.Barrier(6)
    results: dict[int, str] = {}

    def caller(i: int) -> None:
        barrier.wait()
        results[i] = batching.generate([GenerationRequest(f"caller-{i}" * (i + 1))])[0].text

    with BatchingEngine(inner, max_batch_size=2) as batching:
        assert batching.continuous and not batching._worker.is_alive()
        threads = [threading.Thread(target=caller, args=(i,)) for i in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert results == {i: f"caller-{i}" * (i + 1) for i in range(6)}
    assert len(batching.batch_sizes) == 6 and max(inner.stepper.sizes) > 2  # not flushes of 2
    inner.loop.close()


def test_an_engine_without_submit_is_not_streaming() -> None:
    class Plain:
        def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
            return []

    assert not isinstance(Plain(), StreamingEngine)
