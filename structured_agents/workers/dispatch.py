"""Sending steps: the one place that publishes task messages, broker errors converted.

:func:`send_next` is the "kick" every step ends with: from a stored state it sends the step
the run needs next (the model turn, its tool calls, or the finish). Sending the same step
twice is harmless (steps are idempotent), which is what lets the sweep re-send the step of a
run whose message was lost.

Starts go out in chunks: one ``start_runs`` message carries up to :data:`START_CHUNK` run
ids, so dispatching a batch of ten thousand runs publishes twenty messages, not ten
thousand (each a broker round trip with its own ``fsync``). Losing one loses nothing: its runs
stay queued and the sweep sends their starts again. A chunk is started together
(:mod:`~structured_agents.workers.control`): a few statements for all its runs, then
their first turns in one go, so the ``llm`` worker finds them waiting together.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from amqp.exceptions import ChannelError
from celery import Celery

from structured_agents.kernel import RunState
from structured_agents.lifecycle import next_step
from structured_agents.store import Store
from structured_agents.workers.constants import (
    DELAYED,
    FINISH_RUN,
    LLM_PREFIX,
    LLM_TURN,
    START_RUNS,
    TOOL_CALL,
)
from structured_agents.workers.errors import converting_broker

__all__ = [
    "START_CHUNK",
    "START_SPREAD",
    "dispatch_batch",
    "next_messages",
    "queue_length",
    "send",
    "send_many",
    "send_next",
    "send_starts",
]

_NOT_FOUND = "404"
START_CHUNK = 500
"""Most run ids in one ``start_runs`` message: ten thousand runs are twenty messages, and one
message's starts (a few statements for the whole chunk, then a few milliseconds a run to
build its prompt) take a worker seconds, far under the visibility timeout."""
START_SPREAD = 8
"""Fewest ``start_runs`` messages a batch of that many runs or more is split into, so a small
batch's starts still spread over the control worker processes; not more, since a chunk's
first turns reach the ``llm`` worker together and fill its batches (200 runs: 8 chunks of
25, against 16 of 13 that left the engine's mean batch at 13)."""


def send(app: Celery, name: str, args: tuple[Any, ...], *, countdown: float | None = None) -> None:
    """Publish one task message (routed by name); ``BrokerError`` when the broker refuses.

    A delayed model turn goes through the ``control`` queue (:data:`DELAYED`), which sends it
    on when it is due: the ``llm`` worker feeds every message it receives to its engine at
    once (:mod:`~structured_agents.workers.turn_feed`) and keeps no timers of its own.
    """
    if countdown and name.startswith(LLM_PREFIX):
        name, args = DELAYED, (name, list(args))
    with converting_broker(f"send {name}{args}"):
        app.send_task(name, args=args, countdown=countdown)


def send_many(app: Celery, messages: Iterable[tuple[str, tuple[Any, ...]]]) -> int:
    """Publish many messages over one producer connection; returns how many."""
    messages = list(messages)
    if not messages:
        return 0
    sent = 0
    with converting_broker("send messages"), app.producer_or_acquire() as producer:
        for name, args in messages:
            app.send_task(name, args=args, producer=producer)
            sent += 1
    return sent


def send_starts(app: Celery, run_ids: Sequence[str]) -> int:
    """Send the start of every run in ``run_ids`` in ``start_runs`` messages (see
    :data:`START_CHUNK` and :data:`START_SPREAD`); returns how many messages."""
    count = max(min(len(run_ids), START_SPREAD), -(-len(run_ids) // START_CHUNK))
    size = len(run_ids)
    chunks = (list(run_ids[k * size // count : (k + 1) * size // count]) for k in range(count))
    return send_many(app, ((START_RUNS, (ids,)) for ids in chunks))


def dispatch_batch(store: Store, app: Celery, batch_id: str) -> int:
    """Mark a queued batch running and send the starts of its queued runs; returns how many
    messages (0 when the batch was cancelled or dispatched already)."""
    if not store.move_batch(batch_id, "running", only_from=("queued",)):
        return 0
    queued = store.run_ids(batch_id, "queued")
    if not queued:  # every job was done before: nothing will finish it, so end it now
        store.finish_if_idle(batch_id)
        return 0
    return send_starts(app, queued)


def next_messages(epoch: int, state: RunState) -> list[tuple[str, tuple[Any, ...]]]:
    """The messages of the step the stored ``state`` needs next (none while it is decoded)."""
    run_id = state.run_id
    step = next_step(state)
    if step == "model":
        return [(LLM_TURN, (run_id, epoch, state.turn + 1))]
    if step == "tools":
        return [(TOOL_CALL, (run_id, epoch, state.turn, call.id)) for call in state.pending_calls]
    if step == "finish":
        return [(FINISH_RUN, (run_id, epoch))]
    return []


def send_next(app: Celery, epoch: int, state: RunState) -> None:
    """Send the step the stored ``state`` needs next."""
    send_many(app, next_messages(epoch, state))


def queue_length(app: Celery, queue: str) -> int:
    """Messages waiting in ``queue`` (0 for a queue the broker has not seen yet)."""
    with converting_broker(f"count the messages of {queue}"), app.connection_or_acquire() as connection:
        try:
            declared = connection.default_channel.queue_declare(queue=queue, passive=True)
        except ChannelError as exc:  # kombu's Redis transport: 404 for a queue with no binding yet
            if str(exc.reply_code) == _NOT_FOUND:  # kombu passes the code as a string
                return 0
            raise
        return int(declared.message_count)
