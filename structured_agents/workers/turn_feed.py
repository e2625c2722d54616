"""The llm worker's model turns, fed from the queue straight into the engine (continuous batching).

The consumer hands every ``sa.llm.turn`` message to :meth:`TurnFeed.put` the moment it arrives;
the feed's one thread does all the rest, so the process's runtime (store, event loop, agents)
is only ever touched from that thread:

1. **begin**: the runs of the messages that arrived together are loaded in one query, their
   turns counted in one write (``step_attempts``), and each built into its request (grammar
   included);
2. **submit**: the requests go to the engine's ``submit`` together, once all are built, so
   the engine's next step takes them all. A streaming engine
   (transformers, vLLM) admits it between decode steps, so rows join and leave every step and
   the batch stays full; any other engine is fed in flushes by
   :class:`~structured_agents.engines.batching.BatchingEngine`;
3. **commit**: when its stream ends, the turn is committed on its own (compare-and-set, unique
   ``(run_id, turn)``), the run's next step is sent, and only then is the message acknowledged.

So a worker killed at any point leaves every turn it had not committed unacknowledged, and the
broker hands those to another worker; a turn committed before the kill comes back as a no-op.
A delivery of a turn already in flight here (the sweep sent it again; the broker restored it
after a reconnection) joins the first and is acknowledged with it. A turn that cannot even be
begun because the database is away is held and tried again after the steps' backoff
(``SA_WORKERS__RETRY_BACKOFF_S``, doubling up to ``SA_WORKERS__RETRY_BACKOFF_MAX_S``), never
acknowledged until it is done. A failed decode or commit is retried with backoff and fails the
run once the step's budget is spent (:mod:`structured_agents.workers.attempts`).

The feed keeps at most ``SA_WORKERS__TURNS_IN_FLIGHT`` turns (the worker's prefetch): above the
engine's batch, so requests wait inside the engine for the next free row instead of in Redis.
"""

from __future__ import annotations

import contextlib
import functools
import heapq
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from celery import Celery
from celery.worker import state as worker_state

from structured_agents.engines.batching import BatchingEngine
from structured_agents.kernel.streaming import GenerationStream
from structured_agents.lifecycle import ModelTurn, state_of
from structured_agents.metrics import TurnMetrics
from structured_agents.store import StoredRun
from structured_agents.types import JsonDict
from structured_agents.workers.attempts import begin_many, on_failure, step_key
from structured_agents.workers.constants import LLM_TURN
from structured_agents.workers.dispatch import send, send_next
from structured_agents.workers.runtime import Runtime

__all__ = ["Delivery", "Step", "TurnFeed"]

logger = logging.getLogger(__name__)

Step = tuple[str, int, int]
"""The arguments of one model-turn message: run id, epoch, turn."""


@dataclass(slots=True)
class Delivery:
    """One message of the ``llm`` queue, as the consumer received it."""

    step: Step
    task_id: str
    ack: Callable[[], Any]
    """Acknowledges the message (thread-safe: runs on the consumer's event loop)."""
    holds: int = 0
    """How many times it was held because the turn could not be begun."""


@dataclass(slots=True)
class _Flight:
    turn: ModelTurn
    key: str
    attempt: int
    deliveries: list[Delivery]
    started: float = field(default_factory=time.monotonic)


_Item = Delivery | tuple[_Flight, GenerationStream]
"""What the feed's thread takes: a message that arrived, or a turn whose stream ended."""
_Events = list[tuple[str, str, dict[str, Any]]]
"""Task events to send: (kind, task id, fields)."""


def _key(step: Step) -> str:
    """The ``step_attempts`` name of a model turn."""
    _, epoch, number = step
    return step_key(epoch, "llm", number)


def _waiting(run: StoredRun | None, step: Step) -> bool:
    """Whether the stored run is waiting for the turn ``step`` (else the message is a leftover
    of an earlier claim, or a duplicate of a turn already applied)."""
    _, epoch, number = step
    state = state_of(run) if run is not None else None
    return (
        run is not None
        and run.status == "running"
        and state is not None
        and run.epoch == epoch
        and state.phase == "model"
        and state.turn == number - 1
    )


def _received(delivery: Delivery) -> tuple[str, str, dict[str, Any]]:
    """The ``task-received`` event a pool would send: Flower learns the task's name and
    arguments (and its received time) from it, and showed every model turn as ``None`` without."""
    fields = {"name": LLM_TURN, "args": repr(tuple(delivery.step)), "kwargs": "{}", "retries": delivery.holds}
    return ("task-received", delivery.task_id, {**fields, "root_id": delivery.task_id, "parent_id": None})


class TurnFeed:
    """One thread that begins, submits and commits model turns as their messages arrive."""

    def __init__(self, app: Celery, rt: Runtime, hostname: str) -> None:
        """Load the engine (here, so a worker whose model cannot load fails as it starts) and
        start the feed's thread."""
        self._app = app
        self._rt = rt
        self._hostname = hostname
        self._inbox: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._held: list[tuple[float, int, Delivery]] = []
        self._flights: dict[Step, _Flight] = {}
        self._committed = 0
        settings = rt.settings
        self._engine = BatchingEngine(
            rt.engine,
            max_batch_size=settings.engine.max_batch_size,
            max_wait_s=settings.workers.batch_wait_s,
            keep_sizes=0,  # a worker lives long: its occupancy counts are what it reports
        )
        logger.info("loaded the engine %s", type(rt.engine).__name__)
        self._metrics = TurnMetrics(rt.engine)
        workers = settings.workers
        if workers.metrics_port and self._metrics.serve(workers.metrics_port, workers.metrics_host):
            logger.info("metrics on %s:%d", workers.metrics_host, workers.metrics_port)
        self._thread = threading.Thread(target=self._serve, name="turn-feed", daemon=True)
        self._thread.start()

    def put(self, delivery: Delivery) -> None:
        """Take one message (from the consumer's thread)."""
        self._inbox.put(delivery)

    def stats(self) -> dict[str, Any]:
        """Turns in flight and committed, and the engine's occupancy (``celery inspect``)."""
        return {
            "in_flight": len(self._flights),
            "held": len(self._held),
            "committed": self._committed,
            "engine": self._engine.occupancy().as_dict(),
        }

    def close(self) -> None:
        """Stop taking work (uncommitted turns stay unacknowledged for the broker to restore)."""
        self._inbox.put(None)

    def _serve(self) -> None:
        rt = self._rt
        while True:
            items = self._next_items()
            if items is None:
                return
            arrived = [item for item in items if isinstance(item, Delivery)]
            finished = [item for item in items if isinstance(item, tuple)]
            events: _Events = [_received(delivery) for delivery in arrived if not delivery.holds]
            if arrived:
                self._begin(rt, arrived, events)
            for flight, stream in finished:
                self._commit(rt, flight, stream, events)
            self._send_events(events)

    def _next_items(self) -> list[_Item] | None:
        """What arrived (waiting until something did or a held turn is due), due holds included;
        None once closed."""
        timeout = max(self._held[0][0] - time.monotonic(), 0.0) if self._held else None
        items: list[_Item | None] = []
        with contextlib.suppress(queue.Empty):  # empty: a held turn is due
            items.append(self._inbox.get(timeout=timeout))
        while True:
            try:
                items.append(self._inbox.get_nowait())
            except queue.Empty:
                break
        if None in items:
            return None
        now = time.monotonic()
        while self._held and self._held[0][0] <= now:
            items.append(heapq.heappop(self._held)[2])
        return [item for item in items if item is not None]

    def _begin(self, rt: Runtime, arrived: list[Delivery], events: _Events) -> None:
        """Begin the turns of the messages that arrived together: load their runs (one query),
        count their attempts (one write), build every request, then submit them all at once,
        so the engine finds them together for its next step."""
        fresh = [delivery for delivery in arrived if not self._join(delivery)]
        if not fresh:
            return
        steps: dict[Step, list[Delivery]] = {}
        for delivery in fresh:  # two deliveries of one turn that arrived together go as one
            steps.setdefault(delivery.step, []).append(delivery)
        try:
            runs = rt.store.load_runs(run_id for run_id, _, _ in steps)
            due = [(runs[step[0]], step) for step in steps if _waiting(runs.get(step[0]), step)]
            attempts = begin_many(rt, [(run, _key(step)) for run, step in due])
        except Exception as exc:
            for delivery in fresh:
                self._hold(delivery, exc)
            return
        flights: list[_Flight] = []
        for run, step in due:
            attempt = attempts.get((run.id, _key(step)))
            if attempt is None:  # the budget is spent: the run was failed
                continue
            turn = self._build(rt, run, step, attempt)
            if turn is not None:
                flights.append(_Flight(turn, _key(step), attempt, steps.pop(step)))
        for deliveries in steps.values():  # leftovers, duplicates of applied turns, retried turns
            for delivery in deliveries:
                delivery.ack()
        for flight in flights:
            self._flights[flight.deliveries[0].step] = flight
            events.append(("task-started", flight.deliveries[0].task_id, {}))
        for flight in flights:
            try:
                stream = self._engine.submit(flight.turn.request)
            except Exception as exc:
                self._fail(rt, flight, exc)
                self._land(flight)
                continue
            stream.add_done_callback(functools.partial(self._ended, flight))

    def _build(self, rt: Runtime, run: StoredRun, step: Step, attempt: int) -> ModelTurn | None:
        """The turn's request; None when the turn is not the run's to take, or failed to build
        (then retried after its backoff, or the run failed once the budget is spent)."""
        try:
            return rt.run(rt.lifecycle.model_turn(run, step[2]))
        except Exception as exc:
            self._retry(rt, run, _key(step), attempt, step, exc)
            return None

    def _join(self, delivery: Delivery) -> bool:
        """Whether ``delivery`` is another delivery of a turn in flight here; it is then
        acknowledged with the first."""
        flight = self._flights.get(delivery.step)
        if flight is not None:
            flight.deliveries.append(delivery)
        return flight is not None

    def _ended(self, flight: _Flight, stream: GenerationStream) -> None:
        """A stream ended (on the engine's thread): the feed's thread commits it."""
        self._inbox.put((flight, stream))

    def _commit(
        self,
        rt: Runtime,
        flight: _Flight,
        stream: GenerationStream,
        events: _Events,
    ) -> None:
        runtime_s = time.monotonic() - flight.started
        try:
            completion = stream.result()
            applied = rt.run(rt.lifecycle.apply_completion(flight.turn, completion))
            after = state_of(applied) if applied is not None else None
            if applied is not None and after is not None:
                send_next(self._app, applied.epoch, after)
        except Exception as exc:
            self._fail(rt, flight, exc)
            self._metrics.turns.labels(outcome="failed").inc()
            events += [
                ("task-failed", d.task_id, {"exception": repr(exc), "runtime": runtime_s})
                for d in flight.deliveries
            ]
        else:
            self._committed += 1
            worker_state.total_count[LLM_TURN] += 1  # what `inspect stats` (Flower's "processed") counts
            self._metrics.turns.labels(outcome="committed").inc()
            self._metrics.prompt_tokens.inc(completion.usage.prompt_tokens)
            self._metrics.generation_tokens.inc(completion.usage.completion_tokens)
            self._metrics.seconds.observe(runtime_s)
            events += [
                ("task-succeeded", d.task_id, {"result": "committed", "runtime": runtime_s})
                for d in flight.deliveries
            ]
        self._land(flight)

    def _fail(self, rt: Runtime, flight: _Flight, error: Exception) -> None:
        turn = flight.turn
        self._retry(rt, turn.run, flight.key, flight.attempt, flight.deliveries[0].step, error, turn.events)

    def _retry(
        self,
        rt: Runtime,
        run: StoredRun,
        key: str,
        attempt: int,
        step: Step,
        error: Exception,
        events: Sequence[JsonDict] = (),
    ) -> None:
        """Record the failure; send the turn again after its backoff unless the budget is spent
        (then the run fails with ``events``, what the turn's start emitted, in its log)."""
        try:
            delay = on_failure(rt, run, key, attempt, error, events=events)
            if delay is not None:
                send(self._app, LLM_TURN, step, countdown=delay)
        except Exception:  # the database or the broker is gone: the sweep sends the step again
            logger.exception("run %s: could not record the failure of %s", run.id, key)

    def _land(self, flight: _Flight) -> None:
        """The turn is over here: forget it and acknowledge its messages."""
        self._flights.pop(flight.deliveries[0].step, None)
        for delivery in flight.deliveries:
            delivery.ack()

    def _hold(self, delivery: Delivery, error: Exception) -> None:
        delivery.holds += 1
        wait = self._rt.backoff(delivery.holds)
        logger.warning(
            "run %s: could not begin model turn %d (%s); trying again in %.1f s",
            delivery.step[0],
            delivery.step[2],
            error,
            wait,
        )
        heapq.heappush(self._held, (time.monotonic() + wait, id(delivery), delivery))

    def _send_events(self, events: _Events) -> None:
        """Celery task events for Flower (this task has no pool to send them)."""
        if not events or not self._app.conf.worker_send_task_events:
            return
        try:
            with self._app.events.default_dispatcher(hostname=self._hostname) as dispatcher:
                for kind, task_id, fields in events:
                    dispatcher.send(kind, uuid=task_id, **fields)
        except Exception:  # monitoring must never fail a turn
            logger.warning("could not send %d task events", len(events), exc_info=True)
