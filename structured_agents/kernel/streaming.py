"""The streaming capability of engines: one request in, its tokens out as they are decoded.

``Engine.generate(requests)`` is the one required method of the engine seam. Engines that batch
continuously (rows join and leave the batch between decode steps, as vLLM schedules them) also
implement :class:`StreamingEngine`: ``submit(request)`` returns at once with a
:class:`GenerationStream`, and the engine's own step loop decodes the request together with
whatever else is in flight. ``generate`` is then a thin wrapper: submit all, wait for all.

Consumers read a stream from a thread or from asyncio::

    stream = engine.submit(GenerationRequest(prompt="The capital of France is"))
    for delta in stream:                 # blocks until each step's new text (asyncio: async for)
        print(delta.text, end="", flush=True)
    completion = stream.result()         # the Completion generate() would have returned
    stream.cancel()                      # leave the batch early: the row is dropped next step

A queue worker feeds an engine the same way, keeping it full instead of flushing batches::

    streams = [engine.submit(request) for request in take_from_queue()]
    for stream in streams:
        stream.add_done_callback(lambda s: publish(s.result()))

``isinstance(engine, StreamingEngine)`` tells whether an engine has the capability.

Threads: the engine's loop thread produces (:meth:`GenerationStream.push`,
:meth:`~GenerationStream.finish`, :meth:`~GenerationStream.fail`); any number of threads and
event loops may consume. A cancelled stream's ``result()`` raises
``concurrent.futures.CancelledError``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from structured_agents.kernel.engine import Completion, Engine, GenerationRequest, TokenLogprob

__all__ = ["GenerationStream", "StreamDelta", "StreamingEngine"]


@dataclass(frozen=True, slots=True)
class StreamDelta:
    """What one decode step added to a request's output."""

    text: str
    """New text since the previous delta. Text that may still turn out to start a stop string,
    or that ends inside a multi-byte character, is held back until it is settled."""
    token_ids: tuple[int, ...] = ()
    """The tokens decoded in that step (stop tokens excluded)."""
    logprobs: tuple[TokenLogprob, ...] = ()
    """Their log probabilities, when the request asked for ``logprobs``."""


class GenerationStream:
    """The handle of one submitted request: its deltas as they come, then its completion."""

    def __init__(self, request: GenerationRequest) -> None:
        self.request = request
        self.future: Future[Completion] = Future()
        """Resolves with the completion (or the engine's error); cancelled by :meth:`cancel`."""
        self._cond = threading.Condition()
        self._deltas: list[StreamDelta] = []
        self._wakers: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
        self._on_cancel: list[Callable[[], None]] = []

    # -- producer side (the engine) ------------------------------------------------------------

    def push(self, delta: StreamDelta) -> None:
        """Hand consumers one step's delta (ignored once the stream is done)."""
        with self._cond:
            if self.future.done():
                return
            self._deltas.append(delta)
        self._wake()

    def finish(self, completion: Completion) -> None:
        """End the stream with its completion (ignored when it was cancelled meanwhile)."""
        self._end(lambda: self.future.set_result(completion))

    def fail(self, error: BaseException) -> None:
        """End the stream with ``error``, raised by ``result()`` and iteration."""
        self._end(lambda: self.future.set_exception(error))

    def _end(self, settle: Callable[[], None]) -> None:
        with self._cond:
            if self.future.done():
                return
            settle()
        self._wake()

    def on_cancel(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (from the cancelling thread) when a consumer cancels the stream."""
        self._on_cancel.append(callback)

    # -- consumer side ---------------------------------------------------------------------------

    @property
    def cancelled(self) -> bool:
        """Whether a consumer cancelled the stream."""
        return self.future.cancelled()

    def done(self) -> bool:
        """Whether the stream has ended (finished, failed or cancelled)."""
        return self.future.done()

    def cancel(self) -> bool:
        """Give up the request: the engine drops its row at its next step. False when it had ended."""
        with self._cond:
            if self.future.done() or not self.future.cancel():
                return False
        self._wake()
        for callback in self._on_cancel:
            callback()
        return True

    def result(self, timeout: float | None = None) -> Completion:
        """The completion, waiting up to ``timeout`` seconds (None: as long as it takes)."""
        return self.future.result(timeout)

    def add_done_callback(self, callback: Callable[[GenerationStream], None]) -> None:
        """Call ``callback(stream)`` once the stream has ended (at once if it already has)."""
        self.future.add_done_callback(lambda _: callback(self))

    def __iter__(self) -> Iterator[StreamDelta]:
        """The deltas, blocking for each; ends when the stream does (raising its error, if any)."""
        seen = 0
        while True:
            with self._cond:
                while len(self._deltas) <= seen and not self.future.done():
                    self._cond.wait()
                fresh, ended = self._deltas[seen:], self.future.done()
            seen += len(fresh)
            yield from fresh
            if ended:
                self._raise_failure()
                return

    def __aiter__(self) -> AsyncIterator[StreamDelta]:
        return self._async_deltas()

    async def _async_deltas(self) -> AsyncIterator[StreamDelta]:
        event = asyncio.Event()
        waker = (asyncio.get_running_loop(), event)
        with self._cond:
            self._wakers.append(waker)
        seen = 0
        try:
            while True:
                event.clear()
                with self._cond:
                    fresh, ended = self._deltas[seen:], self.future.done()
                seen += len(fresh)
                for delta in fresh:
                    yield delta
                if ended:
                    self._raise_failure()
                    return
                await event.wait()
        finally:
            with self._cond:
                self._wakers.remove(waker)

    def _raise_failure(self) -> None:
        if not self.future.cancelled() and (error := self.future.exception()) is not None:
            raise error

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()
            wakers = list(self._wakers)
        for loop, event in wakers:
            if not loop.is_closed():
                loop.call_soon_threadsafe(event.set)


@runtime_checkable
class StreamingEngine(Engine, Protocol):
    """An engine that takes requests one at a time and streams their tokens (an optional capability)."""

    def submit(self, request: GenerationRequest) -> GenerationStream:
        """Queue ``request`` for the engine's step loop; returns at once."""
        ...
