"""The model-turn step (``llm`` queue): many runs' turns decoded by one ``generate`` call.

The task is a celery-batches task: the GPU worker (one process, solo pool) buffers messages
and flushes every ``SA_WORKERS__FLUSH_EVERY`` messages or ``SA_WORKERS__FLUSH_INTERVAL_S``
seconds. A flush loads every run's state in one query, builds each run's request with its own
grammar, decodes them all in one ``engine.generate`` and commits each run's turn on its own
(compare-and-set, unique ``(run_id, turn)``). If the batch fails, each request is decoded
alone, so one poison request does not fail its batch-mates; a request that fails is sent
again after a backoff, or fails its run once the step's budget is spent.

Messages are acknowledged after the flush returns (``acks_late``); a worker killed mid-batch
leaves them all to be redelivered, and the compare-and-set makes a turn that was committed
before the kill a no-op when it comes back.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from celery.signals import worker_ready
from celery_batches import Batches

from structured_agents.errors import EngineError
from structured_agents.kernel import Completion, Engine, GenerationRequest
from structured_agents.lifecycle import ModelTurn
from structured_agents.store import StoredRun
from structured_agents.workers.attempts import begin, on_failure, step_key
from structured_agents.workers.celery_app import SETTINGS, app, task
from structured_agents.workers.constants import LLM_QUEUE, LLM_TURN
from structured_agents.workers.dispatch import send, send_next
from structured_agents.workers.runtime import Runtime, runtime

__all__ = ["ModelTurnBatches", "generate_isolated", "model_turns"]

logger = logging.getLogger(__name__)

Step = tuple[str, int, int]
"""The arguments of one model-turn message: run id, epoch, turn."""


@dataclass(slots=True)
class _Turn:
    step: Step
    turn: ModelTurn
    key: str
    attempt: int


def generate_isolated(engine: Engine, requests: Sequence[GenerationRequest]) -> list[Completion | Exception]:
    """Decode ``requests`` in one call; if it fails, each alone, so only the failing ones fail."""
    if not requests:
        return []
    try:
        completions = engine.generate(requests)
        if len(completions) != len(requests):
            raise EngineError(
                f"{type(engine).__name__} answered {len(completions)} of {len(requests)} requests"
            )
        return list(completions)
    except Exception as exc:
        if len(requests) == 1:
            return [exc]
        logger.warning("batch of %d failed (%s); decoding each request alone", len(requests), exc)
        return [outcome for request in requests for outcome in generate_isolated(engine, [request])]


def _retry(rt: Runtime, run: StoredRun, key: str, attempt: int, step: Step, error: Exception) -> None:
    try:
        delay = on_failure(rt, run, key, attempt, error)
        if delay is not None:
            send(app, LLM_TURN, step, countdown=delay)
    except Exception:  # the database or the broker is gone: the sweep sends the step again
        logger.exception("run %s: could not record the failure of %s", run.run_id, key)


def _prepare(rt: Runtime, run: StoredRun, step: Step) -> _Turn | None:
    _, epoch, number = step
    state = run.current_state
    if run.status != "running" or state is None or run.epoch != epoch:
        return None
    if state.phase != "model" or state.turn != number - 1:
        return None  # a duplicate of a turn already applied
    key = step_key(epoch, "llm", number)
    attempt = begin(rt, run, key)
    if attempt is None:
        return None
    try:
        turn = rt.run(rt.lifecycle.model_turn(run, number))
    except Exception as exc:
        _retry(rt, run, key, attempt, step, exc)
        return None
    return None if turn is None else _Turn(step, turn, key, attempt)


def _apply(rt: Runtime, turn: _Turn, completion: Completion) -> None:
    applied = rt.run(rt.lifecycle.apply_completion(turn.turn, completion))
    if applied is not None and applied.state is not None:
        send_next(app, applied.epoch, applied.state)


class ModelTurnBatches(Batches):  # type: ignore[misc]
    """celery-batches' task, with a flush timer that survives a reconnection to the broker.

    celery-batches starts its periodic flush on the first message and keeps the timer handle;
    after the consumer reconnects (Redis restarted) the handle is dead but not None, so partial
    batches would only be flushed when ``flush_every`` messages had arrived. The consumer
    builds its strategies again on each reconnection: that is where the handle is dropped.
    """

    def Strategy(self, task: Any, app: Any, consumer: Any) -> Any:
        """The message handler; forgets the old flush timer first."""
        timer: Any = vars(self).get("_tref")
        if timer is not None:
            timer.cancel()
        self.__dict__["_tref"] = None
        return super().Strategy(task, app, consumer)


@task(
    LLM_TURN,
    base=ModelTurnBatches,
    flush_every=SETTINGS.workers.flush_every,
    flush_interval=SETTINGS.workers.flush_interval_s,
)
def model_turns(requests: Sequence[Any]) -> None:
    """Decode the buffered model turns (``SimpleRequest``s with args run id, epoch, turn) together."""
    started = time.monotonic()
    _task_events(requests, "task-started")
    try:
        _model_turns(requests)
    except Exception as exc:
        _task_events(requests, "task-failed", exception=repr(exc))
        raise
    _task_events(
        requests, "task-succeeded", result=f"batch of {len(requests)}", runtime=time.monotonic() - started
    )


def _task_events(requests: Sequence[Any], kind: str, **fields: Any) -> None:
    """Send the task event ``kind`` of each message of the batch (celery-batches sends none):
    Flower then shows model turns start and finish like every other step."""
    if not app.conf.worker_send_task_events or not requests:
        return
    try:
        with app.events.default_dispatcher(hostname=requests[0].hostname) as dispatcher:
            for request in requests:
                dispatcher.send(kind, uuid=request.id, **fields)
    except Exception:  # monitoring must never fail a batch
        logger.warning("could not send %s events for %d model turns", kind, len(requests), exc_info=True)


def _model_turns(requests: Sequence[Any]) -> None:
    rt = runtime()
    steps: list[Step] = list(
        dict.fromkeys((str(r.args[0]), int(r.args[1]), int(r.args[2])) for r in requests)
    )
    runs = rt.store.load_runs(run_id for run_id, _, _ in steps)
    turns: list[_Turn] = []
    for step in steps:
        run = runs.get(step[0])
        try:
            prepared = _prepare(rt, run, step) if run is not None else None
        except Exception:
            logger.exception("run %s: could not begin model turn %d", step[0], step[2])
            continue
        if prepared is not None:
            turns.append(prepared)
    logger.info("decoding %d model turns (%d messages)", len(turns), len(requests))
    outcomes = generate_isolated(rt.engine, [turn.turn.request for turn in turns])
    for turn, outcome in zip(turns, outcomes, strict=True):
        try:
            if isinstance(outcome, Exception):
                raise outcome
            _apply(rt, turn, outcome)
        except Exception as exc:
            _retry(rt, turn.turn.run, turn.key, turn.attempt, turn.step, exc)


@worker_ready.connect  # type: ignore[untyped-decorator]
def _load_engine(sender: Any = None, **_: Any) -> None:
    """Load the engine when a worker that consumes the ``llm`` queue starts, not on its first batch."""
    queues = getattr(getattr(sender, "task_consumer", None), "queues", None) or []
    if LLM_QUEUE in {queue.name for queue in queues}:
        engine = runtime().engine
        logger.info("loaded the engine %s", type(engine).__name__)
