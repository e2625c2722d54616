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
    assert list(engine.batch_sizes) == inner.calls


def test_flushes_at_max_batch_size() -> None:
    inner = EchoEngine()
    with BatchingEngine(inner, max_batch_size=3, max_wait_s=0.5) as engine:
        out = engine.generate([GenerationRequest(prompt=str(i)) for i in range(7)])
    assert [c.text for c in out] == [str(i) for i in range(7)]
    assert inner.calls == [3, 3, 1]


def test_a_failing_batch_is_decoded_again_alone_so_only_the_poison_request_fails() -> None:
    inner = EchoEngine(fail_on="bad")
    with BatchingEngine(inner, max_batch_size=4, max_wait_s=0.5) as engine:
        streams = [engine.submit(GenerationRequest(prompt=p)) for p in ("ok", "bad", "also")]
        assert streams[0].result().text == "OK" and streams[2].result().text == "ALSO"
        with pytest.raises(EngineError, match="cannot decode 'bad'"):
            streams[1].result()
        assert engine.generate([GenerationRequest(prompt="fine")])[0].text == "FINE"
    assert inner.calls == [3, 1, 1, 1, 1]
    assert list(engine.batch_sizes) == inner.calls


def test_occupancy_counts_full_flushes_while_requests_wait() -> None:
    inner = EchoEngine()
    with BatchingEngine(inner, max_batch_size=3, max_wait_s=0.5) as engine:
        engine.generate([GenerationRequest(prompt=str(i)) for i in range(7)])
        occupancy = engine.occupancy()
    # flushes of 3 (4 waiting), 3 (1 waiting) and 1 (none waiting, not full: no backlog)
    assert (occupancy.steps, occupancy.rows, occupancy.backlogged, occupancy.full) == (3, 7, 2, 2)
    assert occupancy.share == 1.0 and occupancy.as_dict()["mean_batch"] == 2.33


def test_rejects_bad_settings_and_use_after_close() -> None:
    with pytest.raises(ConfigError, match="max_batch_size"):
        BatchingEngine(EchoEngine(), max_batch_size=0)
    engine = BatchingEngine(EchoEngine())
    engine.close()
    with pytest.raises(EngineError, match="closed"):
        engine.submit(GenerationRequest(prompt="x"))
