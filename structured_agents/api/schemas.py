"""Request and response bodies of the API, documented field by field for the OpenAPI schema.

Whatever a request carries is bounded here, so that it reaches the database only in a shape the
database takes: ids at most as long as their ``VARCHAR(64)`` columns and without NUL, offsets
within ``BIGINT``, and no NUL or unpaired surrogate in any string of a body (PostgreSQL text and
JSON cannot hold them). Anything else is a 422 naming the field.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import Path, Query
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from structured_agents.jobs import JobInput
from structured_agents.nesting import too_deep, walk

__all__ = [
    "BIGINT_MAX",
    "ID_MAX_LENGTH",
    "AfterId",
    "BatchCreate",
    "BatchCreated",
    "BatchOut",
    "Cancelled",
    "EventOut",
    "EventPage",
    "IdPath",
    "IdQuery",
    "Limit",
    "Offset",
    "Problem",
    "ResultOut",
    "RunDetail",
    "RunOut",
    "RunPage",
    "ToolCallOut",
    "TurnOut",
]


ID_MAX_LENGTH = 64
"""Longest batch or run id (the length of the ``id`` columns)."""
BIGINT_MAX = 2**63 - 1
"""Largest value of PostgreSQL's ``BIGINT`` (offsets, event ids)."""
PATH_MAX_LENGTH = 4096
"""Longest bundle or root path (Linux's ``PATH_MAX``)."""


def _no_nul(text: str) -> str:
    if "\x00" in text:
        raise ValueError("must not hold a NUL character")
    return text


IdPath = Annotated[
    str,
    Path(min_length=1, max_length=ID_MAX_LENGTH, description="A batch or run id."),
    AfterValidator(_no_nul),
]
"""An id in the URL path."""
IdQuery = Annotated[
    str, Query(min_length=1, max_length=ID_MAX_LENGTH, description="A batch id."), AfterValidator(_no_nul)
]
"""An id in the query string."""
Offset = Annotated[int, Query(ge=0, le=BIGINT_MAX, description="Rows to skip.")]
"""A page's offset."""
AfterId = Annotated[int, Query(ge=0, le=BIGINT_MAX, description="Last event id seen; 0 from the start.")]
"""The event id to read on after."""
Limit = Annotated[int, Query(ge=1, le=1000, description="Most items of the page.")]
"""A page's size."""


MAX_DEPTH = 32
"""Deepest nesting of objects and lists a request body may hold: deeper inputs are refused
before anything is stored (stored, they made every later read of their batch fail on
serialization depth, and deeper still the enqueue on Python's recursion limit)."""


def _unstorable(data: Any) -> str | None:
    """What in ``data`` (parsed JSON) cannot be stored, and where: a string PostgreSQL cannot
    hold, or nesting deeper than :data:`MAX_DEPTH`; None when all of it can."""
    for where, item, depth in walk(data):  # not recursive: see structured_agents.nesting
        if depth > MAX_DEPTH:
            return too_deep(where, MAX_DEPTH)
        if isinstance(item, str) and ("\x00" in item or (not item.isascii() and _unpaired_surrogate(item))):
            return f"{where}: text must not hold a NUL character or an unpaired surrogate"
    return None


def _unpaired_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


class _Out(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class Problem(BaseModel):
    """An error: what failed and why."""

    detail: str = Field(description="The error message (names the bad job, field or id).")


class BatchCreate(BaseModel):
    """A batch to enqueue: a bundle over a codebase, with explicit jobs or discovered ones."""

    model_config = ConfigDict(extra="forbid")

    bundle: str = Field(
        min_length=1,
        max_length=PATH_MAX_LENGTH,
        description="A bundle name (docstring, lint, or one in SA_API__BUNDLE_DIRS), or the absolute "
        "path of a bundle directory (or its bundle.yaml) under SA_API__BUNDLE_DIRS.",
    )
    root: str = Field(
        min_length=1,
        max_length=PATH_MAX_LENGTH,
        description="Absolute codebase root under SA_API__ROOTS, as the workers see it: the runs' workspace.",
    )
    jobs: list[JobInput] | None = Field(
        default=None,
        description="Jobs to run, their paths inside root; omitted: discovered under root by the "
        "bundle's task.",
    )

    @model_validator(mode="before")
    @classmethod
    def _storable_text(cls, data: Any) -> Any:
        problem = _unstorable(data)
        if problem is not None:
            raise ValueError(problem)
        return data


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
    flags: list[str] = Field(
        default_factory=list,
        description="Why the change needs review before it is applied (empty: a clean proposal).",
    )
    flagged: bool = Field(default=False, description="Whether the change needs review (flags is not empty).")


class Cancelled(BaseModel):
    """What a cancel did."""

    batch_id: str
    cancelled: int = Field(description="Runs cancelled (queued ones, and running ones at their next step).")
