"""Runs driven step by step: run_states and step_attempts (see ``store/models.py``).

Written by hand to match the models.

Revision ID: 0003_run_steps
Revises: 0002_views
Create Date: 2025-01-01 00:00:02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

from structured_agents.store.models import RunStateRow, StepAttemptRow

revision: str = "0003_run_steps"
down_revision: str | None = "0002_views"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = (RunStateRow.__tablename__, StepAttemptRow.__tablename__)
JSON_TYPE = sa.JSON().with_variant(JSONB(), "postgresql")
TS = sa.DateTime(timezone=True)


def _run_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["run_id"], ["runs.id"], name=f"fk_{table}_run_id_runs", ondelete="CASCADE"
    )


def upgrade() -> None:
    """Create run_states and step_attempts."""
    op.create_table(
        "run_states",
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("epoch", sa.Integer(), nullable=False),
        sa.Column("claimed_at", TS, nullable=True),
        sa.Column("phase", sa.String(16), nullable=False),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("state", JSON_TYPE, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("run_id", name="pk_run_states"),
        _run_fk("run_states"),
    )
    op.create_index("ix_run_states_phase_updated_at", "run_states", ["phase", "updated_at"])
    op.create_table(
        "step_attempts",
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("step", sa.String(200), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("updated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("run_id", "step", name="pk_step_attempts"),
        _run_fk("step_attempts"),
    )


def downgrade() -> None:
    """Drop both tables."""
    for table in reversed(TABLES):
        op.drop_table(table)
