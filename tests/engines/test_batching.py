"""BatchingEngine: concurrent callers share generate calls of the inner engine."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from structured_agents.engines.batching import BatchingEngine
from structured_agents.errors import ConfigError, EngineError
from structured_agents.kernel.engine import Completion, GenerationRequest


class EchoEngine:
    """Answers each request with its prompt upper-cased; records batch sizes and threads."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.calls: list[int] = []
        self.threads: set[str] = set()
        self.fail_on = fail_on

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        self.calls.append(len(requests))
        self.threads.add(threading.current_thread().name)
        if self.fail_on is not None and any(r.prompt == self.fail_on for r in requests):
            raise RuntimeError(f"cannot decode {self.fail_on!r}")
        return [
            Completion(request_id=r.request_id, text=r.prompt.upper(), batch_size=len(requests))
            for r in requests
        ]


def test_concurrent_callers_share_batches() -> None:
    inner = EchoEngine()
    barrier = threading.Barrier(8)
    results: dict[int, str] = {}

    def caller(i: int) -> None:
        barrier.wait()
        (completion,) = engine.generate([GenerationRequest(prompt=f"p{i}")])
        results[i] = completion.text

    with BatchingEngine(inner, max_batch_size=8, max_wait_s=0.2) as engine:
        threads = [threading.Thread(target=caller, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert results == {i: f"P{i}" for i in range(8)}
    assert sum(inner.calls) == 8
    assert max(inner.calls) > 1, inner.calls  # at least one call decoded several callers together
    assert inner.threads == {"batching-engine"}  # the inner engine only ever runs on one thread
    assert engine.batch_sizes == inner.calls


def test_flushes_at_max_batch_size() -> None:
    inner = EchoEngine()
    with BatchingEngine(inner, max_batch_size=3, max_wait_s=0.5) as engine:
        out = engine.generate([GenerationRequest(prompt=str(i)) for i in range(7)])
    assert [c.text for c in out] == [str(i) for i in range(7)]
    assert inner.calls == [3, 3, 1]


def test_failure_reaches_every_caller_and_engine_keeps_serving() -> None:
    inner = EchoEngine(fail_on="bad")
    with BatchingEngine(inner, max_batch_size=4, max_wait_s=0.05) as engine:
        with pytest.raises(EngineError, match="cannot decode 'bad'"):
            engine.generate([GenerationRequest(prompt="ok"), GenerationRequest(prompt="bad")])
        assert engine.generate([GenerationRequest(prompt="fine")])[0].text == "FINE"


def test_rejects_bad_settings_and_use_after_close() -> None:
    with pytest.raises(ConfigError, match="max_batch_size"):
        BatchingEngine(EchoEngine(), max_batch_size=0)
    engine = BatchingEngine(EchoEngine())
    engine.close()
    with pytest.raises(EngineError, match="closed"):
        engine.submit(GenerationRequest(prompt="x"))
