"""The Celery application: Redis broker, three queues, routing by task name, late acks.

Delivery guarantees come from the broker settings and the steps together:

- ``task_acks_late`` with ``task_reject_on_worker_lost``: a message is acknowledged after its
  step ran; a worker killed mid-step leaves it unacknowledged, and Redis hands it to another
  worker after ``visibility_timeout`` (``SA_WORKERS__VISIBILITY_TIMEOUT_S``).
- ``task_acks_on_failure_or_timeout=False``: a step that raises (it could not even record its
  failure: database or broker down) is not acknowledged either, so it comes back later; a
  step whose retries run out while the database is down is dropped, and the periodic sweep
  sends it again once the run's state has not moved for ``SA_WORKERS__STALE_AFTER_S``.
- ``task_ignore_result``: no result backend; the history is in the database.
- ``worker_prefetch_multiplier=1`` for the CPU workers; the GPU worker is started with a
  prefetch of ``SA_WORKERS__TURNS_IN_FLIGHT`` (``sa worker gpu``): the model turns it feeds to
  its engine at once, above the engine's batch.
- task events on (``SA_WORKERS__TASK_EVENTS``), so Flower shows every step as it runs.

``sa.control.sweep`` runs on the beat schedule every ``SA_WORKERS__SWEEP_INTERVAL_S``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from celery import Celery
from celery.signals import worker_process_init

from structured_agents.settings import Settings, load_settings
from structured_agents.workers.constants import CONTROL_QUEUE, ROUTES, SWEEP
from structured_agents.workers.runtime import reset_runtime

__all__ = ["SETTINGS", "app", "gpu_prefetch", "make_app", "task"]

F = TypeVar("F", bound=Callable[..., Any])

TASK_MODULES = (
    "structured_agents.workers.control",
    "structured_agents.workers.llm",
    "structured_agents.workers.tools",
)


def gpu_prefetch(settings: Settings) -> int:
    """Prefetch multiplier of the GPU worker (one process): its turns in flight, above the
    engine's batch so a free row always has a turn waiting for it."""
    return settings.workers.turns_in_flight or 2 * settings.engine.max_batch_size


def make_app(settings: Settings) -> Celery:
    """A Celery app configured from ``settings``."""
    workers = settings.workers
    app = Celery("structured_agents", broker=settings.redis_url, include=list(TASK_MODULES))
    app.conf.update(
        task_routes=ROUTES,
        task_default_queue=CONTROL_QUEUE,
        task_create_missing_queues=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_acks_on_failure_or_timeout=False,
        task_ignore_result=True,
        task_store_errors_even_if_ignored=False,
        task_serializer="json",
        accept_content=["json"],
        worker_prefetch_multiplier=1,
        worker_send_task_events=workers.task_events,
        task_send_sent_event=workers.task_events,
        worker_hijack_root_logger=False,
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,
        broker_transport_options={
            "visibility_timeout": workers.visibility_timeout_s,
            # Look for messages of lost workers at a tenth of the visibility timeout (kombu's
            # default looks every 100 s), and never let a killed worker's lock block it long.
            "unacked_restore_interval": min(max(workers.visibility_timeout_s / 10, 1.0), 10.0),
            "unacked_restore_throttle": 1,
            "unacked_mutex_expire": int(min(workers.visibility_timeout_s, 300)),
        },
        beat_schedule={"sweep": {"task": SWEEP, "schedule": workers.sweep_interval_s}},
    )
    return app


@worker_process_init.connect  # type: ignore[untyped-decorator]
def _fresh_runtime(**_: Any) -> None:
    """A prefork child builds its own runtime: no database connection crosses ``fork``."""
    reset_runtime()


SETTINGS = load_settings()
"""The settings of this process (``SA_*``), read once when the app is imported."""
app = make_app(SETTINGS)
"""The application every worker, the API and the CLI share."""


def task(name: str, **options: Any) -> Callable[[F], F]:
    """``app.task(name=name, **options)``, typed: task modules register their steps with it."""
    return cast(Callable[[F], F], app.task(name=name, **options))
