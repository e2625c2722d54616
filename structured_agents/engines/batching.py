"""Feed many callers' requests to one engine: continuously when it streams, else in batches.

Agents run concurrently (asyncio tasks, threads, a server's requests) and each asks for one
model turn at a time. :class:`BatchingEngine` is itself a
:class:`~structured_agents.kernel.streaming.StreamingEngine`, whatever the inner engine is:

* an inner engine that streams (transformers, vLLM) gets every request at once through its own
  ``submit``: its step loop admits each between decode steps, so the batch stays full;
* any other engine is fed in flushes: a single worker thread takes what is waiting, waits up
  to ``max_wait_s`` for more, stops at ``max_batch_size``, and calls ``generate``; each
  request's stream then gets its whole text as one delta. The inner engine is only ever called
  from that thread, so engines that are not thread-safe are safe.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Sequence

from structured_agents.engines.occupancy import Occupancy, OccupancyCounter, ReportsOccupancy
from structured_agents.errors import ConfigError, EngineError
from structured_agents.kernel.engine import Completion, Engine, GenerationRequest
from structured_agents.kernel.streaming import GenerationStream, StreamDelta, StreamingEngine

__all__ = ["BatchingEngine"]


class BatchingEngine:
    """An :class:`Engine` that batches concurrent callers' requests into one inner engine."""

    def __init__(
        self,
        inner: Engine,
        *,
        max_batch_size: int = 8,
        max_wait_s: float = 0.02,
        keep_sizes: int | None = None,
    ) -> None:
        """``max_batch_size`` and ``max_wait_s`` shape the flushes of an inner engine that does
        not stream (one that streams batches by its own settings); ``keep_sizes`` bounds
        :attr:`batch_sizes` to the most recent ones (a long-lived worker; None keeps all)."""
        if max_batch_size < 1:
            raise ConfigError(f"BatchingEngine.max_batch_size must be >= 1, got {max_batch_size}")
        if max_wait_s < 0:
            raise ConfigError(f"BatchingEngine.max_wait_s must be >= 0, got {max_wait_s}")
        self.inner = inner
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_wait_s
        self.batch_sizes: deque[int] = deque(maxlen=keep_sizes)
        """Size of every batch sent to the inner engine, in order; for an inner engine that
        streams, each completion's ``batch_size`` (the mean rows of the steps it took part in)."""
        self._streaming = inner if isinstance(inner, StreamingEngine) else None
        self._queue: queue.SimpleQueue[GenerationStream | None] = queue.SimpleQueue()
        self._closed = False
        self._occupancy = OccupancyCounter()
        self._worker = threading.Thread(target=self._run, name="batching-engine", daemon=True)
        if self._streaming is None:
            self._worker.start()

    @property
    def continuous(self) -> bool:
        """Whether requests go straight to an inner engine that batches continuously."""
        return self._streaming is not None

    def submit(self, request: GenerationRequest) -> GenerationStream:
        """Queue one request; its stream ends when it is decoded."""
        if self._closed:
            raise EngineError("BatchingEngine is closed")
        if self._streaming is not None:
            stream = self._streaming.submit(request)
            stream.add_done_callback(self._record)
            return stream
        stream = GenerationStream(request)
        self._queue.put(stream)
        return stream

    def occupancy(self) -> Occupancy:
        """How full the batches were while requests waited: the inner engine's count when it
        streams and keeps one, else this engine's flushes (each flush a step)."""
        if self._streaming is not None and isinstance(self.inner, ReportsOccupancy):
            return self.inner.occupancy()
        return self._occupancy.snapshot()

    def _record(self, stream: GenerationStream) -> None:
        if not stream.cancelled and stream.future.exception() is None:
            self.batch_sizes.append(stream.result().batch_size)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Queue ``requests`` (they may share batches with other callers) and wait for all."""
        streams = [self.submit(request) for request in requests]
        return [stream.result() for stream in streams]

    def close(self) -> None:
        """Finish the queued work and stop the worker thread."""
        if not self._closed:
            self._closed = True
            if self._worker.is_alive():
                self._queue.put(None)
                self._worker.join()

    def __enter__(self) -> BatchingEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _collect(self, first: GenerationStream) -> tuple[list[GenerationStream], bool]:
        batch = [first]
        deadline = time.monotonic() + self.max_wait_s
        while len(batch) < self.max_batch_size:
            timeout = deadline - time.monotonic()
            try:
                item = self._queue.get(timeout=timeout) if timeout > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                return batch, True
            batch.append(item)
        return batch, False

    def _run(self) -> None:
        stop = False
        while not stop:
            first = self._queue.get()
            if first is None:
                return
            batch, stop = self._collect(first)
            batch = [stream for stream in batch if not stream.cancelled]  # callers that gave up
            if not batch:
                continue
            self.batch_sizes.append(len(batch))
            full = len(batch) == self.max_batch_size
            self._occupancy.record(len(batch), full=full, waiting=self._queue.qsize())
            self._decode(batch)

    def _decode(self, batch: list[GenerationStream]) -> None:
        """One ``generate`` over ``batch``; when it fails, each request alone (poison stays alone)."""
        requests = [stream.request for stream in batch]
        try:
            completions = self.inner.generate(requests)
            if len(completions) != len(requests):
                raise EngineError(
                    f"{type(self.inner).__name__}.generate returned {len(completions)} completions "
                    f"for {len(requests)} requests"
                )
        except BaseException as exc:  # hand the callers the failure, keep serving
            if len(batch) > 1 and isinstance(exc, Exception):
                for stream in batch:
                    self.batch_sizes.append(1)
                    self._decode([stream])
                return
            error = exc
            if not isinstance(exc, EngineError):
                error = EngineError(f"{type(self.inner).__name__}.generate failed: {exc}")
                error.__cause__ = exc
            batch[0].fail(error)
            return
        for stream, completion in zip(batch, completions, strict=True):
            if completion.finish_reason != "error" and completion.text:
                stream.push(StreamDelta(completion.text, logprobs=completion.logprobs))
            stream.finish(completion)
