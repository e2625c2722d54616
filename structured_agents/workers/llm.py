"""The model-turn step (``llm`` queue): each message goes straight to the worker's turn feed.

The task has its own Celery strategy instead of a pool: the consumer hands each ``sa.llm.turn``
message to :class:`~structured_agents.workers.turn_feed.TurnFeed`, which begins the turn,
submits it to the engine while other turns are decoding (continuous batching), commits it when
its stream ends and only then acknowledges the message. The GPU worker (``sa worker gpu``: one
process, solo pool) reserves ``SA_WORKERS__TURNS_IN_FLIGHT`` messages so the engine always has
turns waiting for a free row.

``celery inspect model_turns`` (or :func:`feed_stats` in the worker) reports the turns in flight,
those committed, and the engine's occupancy: the share of decode steps at full batch while
requests waited.
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import Any

from celery import Celery, Task
from celery.signals import worker_shutdown
from celery.worker.control import inspect_command

from structured_agents.errors import StructuredAgentsError
from structured_agents.workers.celery_app import task
from structured_agents.workers.constants import LLM_QUEUE, LLM_TURN
from structured_agents.workers.runtime import runtime
from structured_agents.workers.turn_feed import Delivery, Step, TurnFeed

__all__ = ["ModelTurnTask", "feed_stats", "model_turn"]

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_feed: TurnFeed | None = None


def _the_feed(app: Celery, hostname: str) -> TurnFeed:
    """The process's feed: built (engine loaded) on the first strategy, kept across the
    strategies the consumer builds again after each reconnection to the broker."""
    global _feed
    with _lock:
        if _feed is None:
            _feed = TurnFeed(app, runtime(), hostname)
        return _feed


def _step(message: Any, body: Any) -> tuple[Step, str]:
    """The turn a message names, and its task id (task protocol 2, or 1)."""
    payload = message.decode() if body is None else body
    if isinstance(payload, dict):  # protocol 1
        args, task_id = payload["args"], payload["id"]
    else:
        args, task_id = payload[0], message.headers["id"]
    return (str(args[0]), int(args[1]), int(args[2])), str(task_id)


class ModelTurnTask(Task):  # type: ignore[misc]
    """A task whose messages are fed to the engine as they arrive, acknowledged once committed."""

    def Strategy(self, task: Any, app: Celery, consumer: Any) -> Any:
        """The message handler the consumer calls for each ``sa.llm.turn`` message. Every worker
        builds one for every task; only a worker that consumes the ``llm`` queue gets a feed
        (and loads the engine)."""
        if LLM_QUEUE not in app.amqp.queues.consume_from:
            return _not_here
        feed = _the_feed(app, consumer.hostname)
        errors = consumer.connection_errors  # what acking may raise (logged, never raised)

        def on_message(message: Any, body: Any, ack: Any, reject: Any, callbacks: Any, **_: Any) -> None:
            try:
                step, task_id = _step(message, body)
            except (KeyError, IndexError, TypeError, ValueError) as exc:
                logger.error("dropping a malformed model-turn message (%s): %r", exc, message.payload)
                reject(logger, errors, requeue=False)
                return
            feed.put(Delivery(step, task_id, functools.partial(ack, logger, errors)))

        return on_message


def _not_here(message: Any, body: Any, ack: Any, reject: Any, callbacks: Any, **_: Any) -> None:
    """A worker that does not consume the ``llm`` queue never gets its messages; if one is routed
    to it anyway, it goes back to the queue for an llm worker."""
    reject(logger, (), requeue=True)


@task(LLM_TURN, base=ModelTurnTask)
def model_turn(run_id: str, epoch: int, turn: int) -> None:
    """Turn ``turn`` of run ``run_id``: only a worker's feed decodes it (see the module)."""
    raise StructuredAgentsError(f"model turn {run_id}:{turn} runs in an llm worker, not in-line")


def feed_stats() -> dict[str, Any]:
    """This process's feed statistics (empty when it is not an llm worker)."""
    return {} if _feed is None else _feed.stats()


@inspect_command(name="model_turns")  # type: ignore[untyped-decorator]
def _inspect_model_turns(state: Any, **_: Any) -> dict[str, Any]:
    """``celery inspect model_turns``: turns in flight and committed, and the engine's occupancy."""
    return feed_stats()


@worker_shutdown.connect  # type: ignore[untyped-decorator]
def _stop_feed(**_: Any) -> None:
    """Stop feeding; turns not committed stay unacknowledged and the broker restores them."""
    if _feed is not None:
        _feed.close()
