"""The FastAPI application: batches, runs, events and results over the store.

Endpoints are plain ``def``s, so FastAPI runs them in its thread pool (the store is
synchronous and thread-safe). Errors of the package map to HTTP: unknown ids 404, malformed
jobs or bundles 422, database or broker down 503.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from celery import Celery
from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse

from structured_agents.api.schemas import (
    BatchCreate,
    BatchCreated,
    BatchOut,
    Cancelled,
    EventOut,
    EventPage,
    Problem,
    ResultOut,
    RunDetail,
    RunOut,
    RunPage,
    ToolCallOut,
    TurnOut,
)
from structured_agents.errors import ConfigError, StructuredAgentsError
from structured_agents.report import build_report
from structured_agents.settings import Settings, load_settings
from structured_agents.store import RecordNotFoundError, ResultStatus, RunStatus, SqlStore, Store, StoreError
from structured_agents.workers.celery_app import make_app
from structured_agents.workers.enqueue import enqueue
from structured_agents.workers.errors import BrokerError
from structured_agents.workers.tasks_control import cancel_batch

__all__ = ["create_app"]

ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": Problem} for code in (404, 422, 503)}
"""Error responses every endpoint documents."""


def _status_of(exc: StructuredAgentsError) -> int:
    if isinstance(exc, RecordNotFoundError):
        return 404
    if isinstance(exc, ConfigError):
        return 422
    if isinstance(exc, StoreError | BrokerError):
        return 503
    return 500


def create_app(
    settings: Settings | None = None, *, store: Store | None = None, broker: Celery | None = None
) -> FastAPI:
    """The API over ``store`` and ``broker`` (by default those ``settings`` describe)."""
    settings = settings or load_settings()
    db = store or SqlStore(settings.database_url)
    celery = broker or make_app(settings)
    app = FastAPI(
        title="structured-agents distributed runs",
        version="1",
        description="Enqueue batches of agent runs over a codebase and follow them.",
    )

    @app.exception_handler(StructuredAgentsError)
    async def _problem(request: Request, exc: StructuredAgentsError) -> JSONResponse:
        return JSONResponse(status_code=_status_of(exc), content={"detail": str(exc)})

    @app.post("/batches", status_code=201, response_model=BatchCreated, responses=ERRORS)
    def create_batch(body: BatchCreate) -> BatchCreated:
        """Enqueue a batch; malformed jobs refuse the whole batch (422) and nothing is written."""
        jobs = None if body.jobs is None else [job.to_spec() for job in body.jobs]
        done = enqueue(db, celery, Path(body.bundle), Path(body.root), jobs)
        return BatchCreated(batch_id=done.batch_id, queued=done.queued, skipped=done.skipped)

    @app.get("/batches/{batch_id}", response_model=BatchOut, responses=ERRORS)
    def get_batch(batch_id: str) -> BatchOut:
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
    def get_results(batch_id: str, status: ResultStatus | None = None) -> list[ResultOut]:
        """Results of the batch's runs, by file then run."""
        db.get_batch(batch_id)
        return [ResultOut.model_validate(result) for result in db.results(batch_id, status)]

    @app.get("/batches/{batch_id}/report", response_class=HTMLResponse, responses=ERRORS)
    def get_report(batch_id: str) -> HTMLResponse:
        """The batch's report, as ``sa report`` writes it: one self-contained HTML page."""
        return HTMLResponse(build_report(db, batch_id))

    @app.post("/batches/{batch_id}/cancel", response_model=Cancelled, responses=ERRORS)
    def cancel(batch_id: str) -> Cancelled:
        """Cancel a batch: queued runs now, running ones at their next step."""
        return Cancelled(batch_id=batch_id, cancelled=cancel_batch(db, batch_id))

    @app.get("/runs", response_model=RunPage, responses=ERRORS)
    def list_runs(
        batch_id: str,
        status: RunStatus | None = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        offset: Annotated[int, Query(ge=0)] = 0,
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
    def get_run(run_id: str) -> RunDetail:
        """A run with its turns and tool calls."""
        run = RunOut.model_validate(db.get_run(run_id))
        return RunDetail(
            **run.model_dump(),
            turns=[TurnOut.model_validate(turn) for turn in db.turns(run_id)],
            tool_calls=[ToolCallOut.model_validate(call) for call in db.tool_calls(run_id)],
        )

    @app.get("/runs/{run_id}/events", response_model=EventPage, responses=ERRORS)
    def get_events(
        run_id: str,
        after_id: Annotated[int, Query(ge=0)] = 0,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> EventPage:
        """A run's events in order; page on with ``after_id``."""
        db.get_run(run_id)
        events = [
            EventOut.model_validate(event) for event in db.events(run_id, after_id=after_id, limit=limit)
        ]
        return EventPage(items=events, next_after_id=events[-1].id if events else after_id)

    return app
