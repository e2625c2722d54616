"""One thread that drives an engine's decode steps, letting requests join between steps.

Continuous batching, shared by the engines that stream (transformers, vLLM): callers hand
prepared requests to :meth:`StepLoop.put` from any thread; the loop thread admits as many as
the batch has room for (:meth:`Stepper.room`), runs one decode step of every live row
(:meth:`Stepper.step`), and goes on while rows are live, sleeping only when there is nothing
to do. The stepper (the engine's decoding state) is only ever touched from the loop thread, so
engines that are not thread-safe stay safe.

A step that raises fails every live request with an :class:`EngineError` naming the cause; the
stepper is reset and the loop keeps serving. Every step is counted in :meth:`StepLoop.occupancy`
(how full the batch was while requests waited).
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Generic, Protocol, TypeVar

from structured_agents.engines.occupancy import Occupancy, OccupancyCounter
from structured_agents.errors import EngineError
from structured_agents.kernel.streaming import GenerationStream

__all__ = ["Pending", "StepLoop", "Stepper"]


class Pending(Protocol):
    """A prepared request waiting for a batch slot."""

    @property
    def stream(self) -> GenerationStream | None: ...


P = TypeVar("P", bound=Pending)


class Stepper(Protocol[P]):
    """An engine's decoding state, driven by a :class:`StepLoop` (called from its thread only)."""

    def room(self) -> int:
        """How many more requests the batch takes now."""
        ...

    def full(self) -> bool:
        """Whether the batch has no place left (``room`` may be 0 before it is: a stepper that
        admits in groups); what :class:`~.occupancy.Occupancy` counts."""
        ...

    def admit(self, pending: list[P]) -> None:
        """Add ``pending`` to the batch (prefill); each stream is then live or ended."""
        ...

    def step(self) -> None:
        """One decode step of every live row; finishes the streams of the rows that end."""
        ...

    def live(self) -> int:
        """Rows in the batch."""
        ...

    def abort(self, error: EngineError) -> None:
        """Fail every live row's stream with ``error`` and empty the batch."""
        ...


class StepLoop(Generic[P]):
    """Runs ``stepper`` on its own daemon thread (started on first use)."""

    def __init__(self, stepper: Stepper[P], *, name: str) -> None:
        self._stepper = stepper
        self._name = name
        self._waiting: deque[P] = deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._occupancy = OccupancyCounter()

    def occupancy(self) -> Occupancy:
        """The steps taken so far, and how full their batches were."""
        return self._occupancy.snapshot()

    def put(self, *pending: P) -> None:
        """Queue ``pending`` for admission (from any thread); requests queued in one call are
        admitted together where the batch has room for them."""
        with self._cond:
            if self._closed:
                raise EngineError(f"{self._name} is closed")
            self._waiting.extend(pending)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify()

    def wake(self) -> None:
        """Wake the loop (a stream was cancelled: its row leaves at the next step)."""
        with self._cond:
            self._cond.notify()

    def close(self) -> None:
        """Finish the work already queued or live, then stop the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _take(self) -> tuple[list[P], int] | None:
        """Requests to admit now (cancelled ones dropped) and how many still wait; None when
        closed and idle."""
        with self._cond:
            while not self._waiting and not self._stepper.live():
                if self._closed:
                    return None
                self._cond.wait()
            taken: list[P] = []
            room = self._stepper.room()
            while self._waiting and len(taken) < room:
                pending = self._waiting.popleft()
                if pending.stream is None or not pending.stream.cancelled:
                    taken.append(pending)
            return taken, len(self._waiting)

    def _run(self) -> None:
        while (took := self._take()) is not None:
            admitted, waiting = took
            try:
                if admitted:
                    self._stepper.admit(admitted)
                if rows := self._stepper.live():
                    self._occupancy.record(rows, full=self._stepper.full(), waiting=waiting)
                    self._stepper.step()
            except Exception as exc:  # the model failed: fail what was in flight, keep serving
                error = EngineError(f"{self._name}: decoding failed: {type(exc).__name__}: {exc}")
                error.__cause__ = exc
                for pending in admitted or ():
                    if pending.stream is not None:
                        pending.stream.fail(error)
                self._stepper.abort(error)
