"""Tables of the distributed runner: each run's kernel state, and delivery counts of its steps.

::

    run_states     one per run being driven by queue workers: the kernel's ``RunState`` as
                   JSON, its phase and turn, the claim it belongs to (``claimed_at`` is the run's
                   ``started_at`` of that claim; ``epoch`` counts the claims) and a version
                   bumped by every step that moves it (compare-and-set: a redelivered or
                   concurrent duplicate step cannot apply twice)
    step_attempts  one per (run, step): how many times a worker began the step and the last
                   error it ended with, so a step that keeps failing (or killing its worker)
                   fails its run after the retry budget instead of looping forever

Both cascade with their run. The Alembic revision ``0003_run_steps`` creates them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from structured_agents.store.models import Base, utcnow

__all__ = ["RunStateRow", "StepAttemptRow"]


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
