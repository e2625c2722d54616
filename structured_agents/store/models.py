"""The database schema as SQLAlchemy 2 typed ORM classes, one schema for PostgreSQL and SQLite.

Tables (every timestamp is UTC; JSON columns are ``JSONB`` on PostgreSQL)::

    batches     one per enqueue/run command: bundle, root, options, status
    runs        one per job; the primary key is the stable job id (see ``jobs.ids``), so a
                job that already succeeded is recognised when the same codebase is re-run
    turns       one per model turn of a run, unique on (run_id, turn)
    tool_calls  one per tool call, unique on call_id
    results     the proposed change of a run (unified diff), unique on run_id
    events      the append-only observer log (no foreign key: events are never refused)
    run_states     one per run being driven step by step: the kernel's ``RunState`` as JSON,
                   its phase and turn, the claim it belongs to (``claimed_at`` is the run's
                   ``started_at`` of that claim; ``epoch`` counts the claims) and a version
                   bumped by every step that moves it (compare-and-set: a redelivered or
                   concurrent duplicate step cannot apply twice)
    step_attempts  one per (run, step): how many times a worker began the step and the last
                   error it ended with, so a step that keeps failing (or killing its worker)
                   fails its run after the retry budget instead of looping forever

The Alembic revisions (``migrations/versions/``) create exactly these tables; a test compares
the migrated database with this metadata on both dialects.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from structured_agents.status import BATCH_STATUSES, RESULT_STATUSES, RUN_STATUSES

__all__ = [
    "Base",
    "BatchRow",
    "EventRow",
    "ResultRow",
    "RunRow",
    "RunStateRow",
    "StepAttemptRow",
    "ToolCallRow",
    "TurnRow",
    "utcnow",
]


JsonType = JSON().with_variant(JSONB(), "postgresql")
"""JSON on SQLite, JSONB on PostgreSQL."""
IdType = BigInteger().with_variant(Integer(), "sqlite")
"""Autoincrement key: SQLite only autoincrements ``INTEGER PRIMARY KEY``."""

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class Base(DeclarativeBase):
    """Declarative base with a constraint naming convention (stable names in migrations)."""

    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        dict[str, Any]: JsonType,
        datetime: DateTime(timezone=True),
    }


class BatchRow(Base):
    """One enqueue/run command over one codebase."""

    __tablename__ = "batches"
    __table_args__ = (CheckConstraint(_in("status", BATCH_STATUSES), name="status"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    bundle_name: Mapped[str] = mapped_column(String(200))
    bundle_version: Mapped[str] = mapped_column(String(64))
    root_path: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default="queued")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    options: Mapped[dict[str, Any]] = mapped_column(default=dict)


class RunRow(Base):
    """One job and its (latest) execution; ``id`` is the stable job id."""

    __tablename__ = "runs"
    __table_args__ = (
        CheckConstraint(_in("status", RUN_STATUSES), name="status"),
        Index(None, "batch_id", "status"),
        Index(None, "status", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    batch_id: Mapped[str] = mapped_column(ForeignKey("batches.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(64))
    target_path: Mapped[str] = mapped_column(Text)
    qualname: Mapped[str] = mapped_column(Text)
    source_hash: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), default="queued")
    attempts: Mapped[int] = mapped_column(default=0)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    inputs: Mapped[dict[str, Any]] = mapped_column(default=dict)


class TurnRow(Base):
    """One model turn of a run; (run_id, turn) is unique so a redelivered step adds nothing."""

    __tablename__ = "turns"
    __table_args__ = (UniqueConstraint("run_id", "turn"),)

    id: Mapped[int] = mapped_column(IdType, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    turn: Mapped[int] = mapped_column(Integer)
    prompt_tokens: Mapped[int] = mapped_column(default=0)
    completion_tokens: Mapped[int] = mapped_column(default=0)
    latency_s: Mapped[float] = mapped_column(Float, default=0.0)
    batch_size: Mapped[int] = mapped_column(default=1)
    finish_reason: Mapped[str | None] = mapped_column(String(32))
    raw_text: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ToolCallRow(Base):
    """One tool call of a run and what it returned; ``call_id`` is unique."""

    __tablename__ = "tool_calls"
    __table_args__ = (Index(None, "run_id", "turn"), Index(None, "name"))

    id: Mapped[int] = mapped_column(IdType, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    turn: Mapped[int] = mapped_column(Integer)
    call_id: Mapped[str] = mapped_column(String(128), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    arguments: Mapped[dict[str, Any]] = mapped_column(default=dict)
    output: Mapped[str] = mapped_column(Text, default="")
    is_error: Mapped[bool] = mapped_column(Boolean, default=False)
    duration_s: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    ban: Mapped[list[str]] = mapped_column(JsonType, default=list, server_default=text("'[]'"))


class ResultRow(Base):
    """The change a run proposes, as a unified diff against the file it read."""

    __tablename__ = "results"
    __table_args__ = (CheckConstraint(_in("status", RESULT_STATUSES), name="status"),)

    id: Mapped[int] = mapped_column(IdType, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), unique=True)
    target_path: Mapped[str] = mapped_column(Text)
    original_hash: Mapped[str] = mapped_column(String(64))
    diff: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default="proposed")
    summary: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    flags: Mapped[list[str]] = mapped_column(JsonType, default=list, server_default=text("'[]'"))
    """Why a reviewer must look at the change before it is applied (empty: a clean proposal);
    ``sa apply`` leaves a flagged change alone unless asked."""


class EventRow(Base):
    """One observer event; ``payload`` holds every field but type, run_id, turn and timestamp."""

    __tablename__ = "events"
    __table_args__ = (Index(None, "run_id", "id"), Index(None, "type"))

    id: Mapped[int] = mapped_column(IdType, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(64))
    turn: Mapped[int] = mapped_column(Integer, default=0)
    type: Mapped[str] = mapped_column(String(64))
    ts: Mapped[datetime] = mapped_column(default=utcnow)
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)


class RunStateRow(Base):
    """The kernel state of one run between its steps."""

    __tablename__ = "run_states"
    __table_args__ = (Index(None, "phase", "updated_at"),)

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    epoch: Mapped[int] = mapped_column(Integer)
    claimed_at: Mapped[datetime | None]
    phase: Mapped[str] = mapped_column(String(16))
    turn: Mapped[int] = mapped_column(Integer)
    version: Mapped[int] = mapped_column(Integer, default=0)
    state: Mapped[dict[str, Any]] = mapped_column(default=dict)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class StepAttemptRow(Base):
    """How often one step of a run was begun, and how its last attempt failed."""

    __tablename__ = "step_attempts"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    step: Mapped[str] = mapped_column(String(200), primary_key=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
