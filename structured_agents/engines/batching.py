"""Coalesce many callers' requests into batched ``generate`` calls of one engine.

Agents run concurrently (asyncio tasks, threads, a server's requests) and each asks for one
model turn at a time. :class:`BatchingEngine` queues those requests and a single worker thread
feeds them to the inner engine in batches: it takes what is waiting, waits up to
``max_wait_s`` for more, and flushes at ``max_batch_size``. The inner engine is only ever
called from that thread, so engines that are not thread-safe (vLLM, transformers) are safe.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future

from structured_agents.errors import ConfigError, EngineError
from structured_agents.kernel.engine import Completion, Engine, GenerationRequest

__all__ = ["BatchingEngine"]

_Item = tuple[GenerationRequest, "Future[Completion]"]


class BatchingEngine:
    """An :class:`Engine` that batches concurrent callers' requests into one inner engine."""

    def __init__(self, inner: Engine, *, max_batch_size: int = 8, max_wait_s: float = 0.02) -> None:
        if max_batch_size < 1:
            raise ConfigError(f"BatchingEngine.max_batch_size must be >= 1, got {max_batch_size}")
        if max_wait_s < 0:
            raise ConfigError(f"BatchingEngine.max_wait_s must be >= 0, got {max_wait_s}")
        self.inner = inner
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_wait_s
        self.batch_sizes: list[int] = []
        """Size of every batch sent to the inner engine, in order."""
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._closed = False
        self._worker = threading.Thread(target=self._run, name="batching-engine", daemon=True)
        self._worker.start()

    def submit(self, request: GenerationRequest) -> Future[Completion]:
        """Queue one request; the future resolves when its batch is decoded."""
        if self._closed:
            raise EngineError("BatchingEngine is closed")
        future: Future[Completion] = Future()
        self._queue.put((request, future))
        return future

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Queue ``requests`` (they may share batches with other callers) and wait for all."""
        futures = [self.submit(request) for request in requests]
        return [future.result() for future in futures]

    def close(self) -> None:
        """Finish the queued work and stop the worker thread."""
        if not self._closed:
            self._closed = True
            self._queue.put(None)
            self._worker.join()

    def __enter__(self) -> BatchingEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _collect(self, first: _Item) -> tuple[list[_Item], bool]:
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
            # a caller that gave up (a cancelled asyncio task) cancelled its future: drop it; the
            # others can no longer be cancelled, so setting their results below cannot fail
            batch = [(request, future) for request, future in batch if future.set_running_or_notify_cancel()]
            if not batch:
                continue
            requests = [request for request, _ in batch]
            self.batch_sizes.append(len(batch))
            try:
                completions = self.inner.generate(requests)
                if len(completions) != len(requests):
                    raise EngineError(
                        f"{type(self.inner).__name__}.generate returned {len(completions)} completions "
                        f"for {len(requests)} requests"
                    )
            except BaseException as exc:  # hand every caller the failure, keep serving
                error = exc
                if not isinstance(exc, EngineError):
                    error = EngineError(f"batch of {len(batch)} failed: {exc}")
                    error.__cause__ = exc
                for _, future in batch:
                    future.set_exception(error)
                continue
            for (_, future), completion in zip(batch, completions, strict=True):
                future.set_result(completion)
