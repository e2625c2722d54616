"""Request and response bodies of the API, documented field by field for the OpenAPI schema."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from structured_agents.workers.enqueue import JobInput

__all__ = [
    "BatchCreate",
    "BatchCreated",
    "BatchOut",
    "Cancelled",
    "EventOut",
    "EventPage",
    "Problem",
    "ResultOut",
    "RunDetail",
    "RunOut",
    "RunPage",
    "ToolCallOut",
    "TurnOut",
]


class _Out(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class Problem(BaseModel):
    """An error: what failed and why."""

    detail: str = Field(description="The error message (names the bad job, field or id).")


class BatchCreate(BaseModel):
    """A batch to enqueue: a bundle over a codebase, with explicit jobs or discovered ones."""

    model_config = ConfigDict(extra="forbid")

    bundle: str = Field(description="Bundle directory (or its bundle.yaml) as the workers see it.")
    root: str = Field(description="Codebase root as the workers see it: the runs' workspace.")
    jobs: list[JobInput] | None = Field(
        default=None, description="Jobs to run; omitted: discovered under root by the bundle's task."
    )


class BatchCreated(_Out):
    """What an enqueue did."""

    batch_id: str = Field(description="Id of the new batch.")
    queued: int = Field(description="Jobs queued (new, or failed before and queued again).")
    skipped: int = Field(description="Jobs left alone (already succeeded, queued or running).")


class BatchOut(BaseModel):
    """A batch and its runs counted by status."""

    id: str
    bundle_name: str
    bundle_version: str
    root_path: str
    status: str = Field(description="queued, running, finished or cancelled.")
    created_at: datetime
    counts: dict[str, int] = Field(description="Runs by status (statuses with no run left out).")
    total: int = Field(description="Runs in the batch.")
    done: bool = Field(description="Whether no run is queued or running.")


class RunOut(_Out):
    """One run (one job) and how its latest execution went."""

    id: str = Field(description="Stable job id.")
    batch_id: str
    kind: str
    target_path: str
    qualname: str
    status: str = Field(description="queued, running, succeeded, failed or cancelled.")
    attempts: int = Field(description="Times the run was claimed.")
    error: str | None = Field(description="Why it failed, if it did.")
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    inputs: dict[str, Any]


class RunPage(BaseModel):
    """One page of runs."""

    items: list[RunOut]
    limit: int
    offset: int
    next_offset: int | None = Field(description="Offset of the next page; null on the last one.")


class TurnOut(_Out):
    """One model turn."""

    turn: int
    prompt_tokens: int
    completion_tokens: int
    latency_s: float = Field(description="Wall time of the generate call that decoded it.")
    batch_size: int = Field(description="Requests decoded in that call.")
    finish_reason: str | None
    raw_text: str


class ToolCallOut(_Out):
    """One tool call and its output."""

    turn: int
    call_id: str
    name: str
    arguments: dict[str, Any]
    output: str
    is_error: bool
    duration_s: float


class RunDetail(RunOut):
    """A run with its turns and tool calls."""

    turns: list[TurnOut]
    tool_calls: list[ToolCallOut]


class EventOut(_Out):
    """One observer event."""

    id: int = Field(description="Position in the event log; pass as after_id to read on.")
    type: str
    turn: int
    ts: datetime
    payload: dict[str, Any] = Field(description="The event's own fields (see observer events).")


class EventPage(BaseModel):
    """Events of a run in order."""

    items: list[EventOut]
    next_after_id: int = Field(description="after_id for the next page (the last id seen).")


class ResultOut(_Out):
    """The result a run proposes."""

    run_id: str
    target_path: str
    original_hash: str = Field(description="SHA-256 of the file the diff applies to.")
    diff: str = Field(description="Unified diff; empty for runs that change no file.")
    status: str = Field(description="proposed, applied, rejected or stale.")
    summary: str = Field(description="The run's final output.")
    updated_at: datetime


class Cancelled(BaseModel):
    """What a cancel did."""

    batch_id: str
    cancelled: int = Field(description="Runs cancelled (queued ones, and running ones at their next step).")
