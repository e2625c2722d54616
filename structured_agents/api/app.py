"""The FastAPI application: batches, runs, events and results over the store.

Endpoints are plain ``def``s, so FastAPI runs them in its thread pool (the store is
synchronous and thread-safe). Every route requires the bearer token and JSON on state changes
(:mod:`.security`); bodies are limited while they are read (:mod:`.body_limit`); roots and bundles
must lie where the operator allowed (:mod:`.paths`); errors map to HTTP without leaking the
input or the driver's text (:mod:`.errors`): unknown ids 404, paths outside 403, malformed
requests, jobs or bundles 422, database or broker down 503.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Celery
from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response
from prometheus_client import CollectorRegistry

from structured_agents.api.errors import install_error_handlers
from structured_agents.api.paths import Confinement
from structured_agents.api.schemas import (
    AfterId,
    BatchCreate,
    BatchCreated,
    BatchOut,
    Cancelled,
    EventOut,
    EventPage,
    IdPath,
    IdQuery,
    Limit,
    Offset,
    Problem,
    ResultOut,
    RunDetail,
    RunOut,
    RunPage,
    ToolCallOut,
    TurnOut,
)
from structured_agents.api.security import add_cors, route_dependencies
from structured_agents.guard import Guard
from structured_agents.lifecycle.batch import cancel_batch
from structured_agents.metrics import CONTENT_TYPE, StoreCollector, scrape
from structured_agents.report import build_report
from structured_agents.settings import Settings, load_settings
from structured_agents.status import ResultStatus, RunStatus
from structured_agents.store import SqlStore, Store
from structured_agents.workers.celery_app import make_app
from structured_agents.workers.constants import QUEUES
from structured_agents.workers.dispatch import queue_length
from structured_agents.workers.enqueue import enqueue

__all__ = ["create_app"]

ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": Problem} for code in (401, 403, 404, 413, 415, 422, 503)
}
"""Error responses every endpoint documents."""

log = logging.getLogger(__name__)


def create_app(
    settings: Settings | None = None, *, store: Store | None = None, broker: Celery | None = None
) -> FastAPI:
    """The API over ``store`` and ``broker`` (by default those ``settings`` describe).

    Raises :class:`~structured_agents.errors.ConfigError` when ``SA_API__TOKEN`` is not set
    (unless ``SA_API__AUTH=none``), so ``uvicorn --factory`` exits with that message.
    """
    settings = settings or load_settings()
    dependencies = route_dependencies(settings.api)
    if settings.api.auth == "none":
        log.warning("SA_API__AUTH=none: the API requires no token; keep it on a trusted network")
    confinement = Confinement.from_settings(settings.api)
    db = store or SqlStore(settings.database_url)
    celery = broker or make_app(settings)
    app = FastAPI(
        title="structured-agents distributed runs",
        version="1",
        description="Enqueue batches of agent runs over a codebase and follow them. Every endpoint requires "
        "`Authorization: Bearer SA_API__TOKEN`; POST requests send `Content-Type: application/json`.",
        dependencies=dependencies,
    )
    install_error_handlers(app)
    app.add_middleware(Guard, max_body_bytes=settings.api.max_body_bytes, limit_name="SA_API__MAX_BODY_BYTES")
    add_cors(app, settings.api)

    @app.post("/batches", status_code=201, response_model=BatchCreated, responses=ERRORS)
    def create_batch(body: BatchCreate) -> BatchCreated:
        """Enqueue a batch; malformed jobs refuse the whole batch (422) and nothing is written."""
        bundle = confinement.bundle(body.bundle)
        root = confinement.root(body.root)
        jobs = None
        if body.jobs is not None:
            confinement.jobs(root, (job.path for job in body.jobs))
            jobs = [job.to_spec() for job in body.jobs]
        done = enqueue(db, celery, bundle, root, jobs)
        return BatchCreated(batch_id=done.batch_id, queued=done.queued, skipped=done.skipped)

    @app.get("/batches/{batch_id}", response_model=BatchOut, responses=ERRORS)
    def get_batch(batch_id: IdPath) -> BatchOut:
        """A batch and its runs counted by status."""
        batch, counts = db.get_batch(batch_id), db.batch_counts(batch_id)
        return BatchOut(
            id=batch.id,
            bundle_name=batch.bundle_name,
            bundle_version=batch.bundle_version,
            root_path=batch.root_path,
            status=batch.status,
            created_at=batch.created_at,
            counts={str(status): n for status, n in counts.by_status.items()},
            total=counts.total,
            done=counts.done,
        )

    @app.get("/batches/{batch_id}/results", response_model=list[ResultOut], responses=ERRORS)
    def get_results(batch_id: IdPath, status: ResultStatus | None = None) -> list[ResultOut]:
        """Results of the batch's runs, by file then run."""
        db.get_batch(batch_id)
        return [ResultOut.model_validate(result) for result in db.results(batch_id, status)]

    @app.get("/batches/{batch_id}/report", response_class=HTMLResponse, responses=ERRORS)
    def get_report(batch_id: IdPath) -> HTMLResponse:
        """The batch's report, as ``sa report`` writes it: one self-contained HTML page."""
        return HTMLResponse(build_report(db, batch_id))

    metrics = CollectorRegistry()
    metrics.register(
        StoreCollector(db.status_counts, lambda: {queue: queue_length(celery, queue) for queue in QUEUES})
    )

    @app.get("/metrics", response_class=Response, responses=ERRORS)
    def prometheus() -> Response:
        """Prometheus metrics: runs and batches by status, each queue's waiting messages."""
        return Response(scrape(metrics), media_type=CONTENT_TYPE)

    @app.post("/batches/{batch_id}/cancel", response_model=Cancelled, responses=ERRORS)
    def cancel(batch_id: IdPath) -> Cancelled:
        """Cancel a batch: queued runs now, running ones at their next step."""
        return Cancelled(batch_id=batch_id, cancelled=cancel_batch(db, batch_id))

    @app.get("/runs", response_model=RunPage, responses=ERRORS)
    def list_runs(
        batch_id: IdQuery,
        status: RunStatus | None = None,
        limit: Limit = 100,
        offset: Offset = 0,
    ) -> RunPage:
        """Runs of a batch, oldest first, optionally of one status."""
        db.get_batch(batch_id)
        runs = db.list_runs(batch_id, status, limit=limit + 1, offset=offset)
        more = len(runs) > limit
        return RunPage(
            items=[RunOut.model_validate(run) for run in runs[:limit]],
            limit=limit,
            offset=offset,
            next_offset=offset + limit if more else None,
        )

    @app.get("/runs/{run_id}", response_model=RunDetail, responses=ERRORS)
    def get_run(run_id: IdPath) -> RunDetail:
        """A run with its turns and tool calls."""
        run = RunOut.model_validate(db.get_run(run_id))
        return RunDetail(
            **run.model_dump(),
            turns=[TurnOut.model_validate(turn) for turn in db.turns(run_id)],
            tool_calls=[ToolCallOut.model_validate(call) for call in db.tool_calls(run_id)],
        )

    @app.get("/runs/{run_id}/events", response_model=EventPage, responses=ERRORS)
    def get_events(
        run_id: IdPath,
        after_id: AfterId = 0,
        limit: Limit = 100,
    ) -> EventPage:
        """A run's events in order; page on with ``after_id``."""
        db.get_run(run_id)
        events = [
            EventOut.model_validate(event) for event in db.events(run_id, after_id=after_id, limit=limit)
        ]
        return EventPage(items=events, next_after_id=events[-1].id if events else after_id)

    return app
