"""Calling a synchronous engine from the kernel's event loop.

An engine with ``submit(request)`` (a streaming engine, ``BatchingEngine``) is awaited through
the stream's future: no thread waits, and concurrent runs share its batches. Any other engine is
called in an executor, by default a private one-thread executor, since engines need not be
thread-safe.
Every failure leaves here as an :class:`EngineError` naming the engine and the request.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Protocol, runtime_checkable

from structured_agents.errors import EngineError
from structured_agents.kernel.engine import Completion, Engine, GenerationRequest
from structured_agents.kernel.streaming import GenerationStream

__all__ = ["EngineCaller"]


@runtime_checkable
class _Submitter(Protocol):
    """Engines that queue one request and hand back its stream (``BatchingEngine``)."""

    def submit(self, request: GenerationRequest) -> GenerationStream: ...


class EngineCaller:
    """Decodes one request at a time off the event loop."""

    def __init__(self, engine: Engine, executor: Executor | None = None) -> None:
        self.engine = engine
        self._executor = executor
        self._own_executor: ThreadPoolExecutor | None = None

    async def generate(self, request: GenerationRequest) -> Completion:
        """The engine's completion of ``request``; failures become ``EngineError``."""
        name = type(self.engine).__name__
        try:
            if isinstance(self.engine, _Submitter):
                completions = [await asyncio.wrap_future(self.engine.submit(request).future)]
            else:
                loop = asyncio.get_running_loop()
                completions = await loop.run_in_executor(self._pool(), self.engine.generate, [request])
        except EngineError:
            raise
        except Exception as exc:
            raise EngineError(
                f"{name} failed on request {request.request_id}: {type(exc).__name__}: {exc}"
            ) from exc
        if len(completions) != 1:
            raise EngineError(f"{name}.generate returned {len(completions)} completions for 1 request")
        completion = completions[0]
        if completion.finish_reason == "error":
            raise EngineError(
                f"{name} reported an error on request {request.request_id}: {completion.text!r}"
            )
        return completion

    def close(self) -> None:
        """Stop the private engine thread, if one was started."""
        if self._own_executor is not None:
            self._own_executor.shutdown(wait=True)
            self._own_executor = None

    def _pool(self) -> Executor:
        if self._executor is not None:
            return self._executor
        if self._own_executor is None:
            self._own_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agent-kernel-engine")
        return self._own_executor
