"""Initial schema: batches, runs, turns, tool_calls, results, events.

Written by hand to match ``structured_agents/store/models.py`` at the time (the test suite
compares a migrated database with the models on SQLite and PostgreSQL).

Revision ID: 0001_initial
Revises:
Create Date: 2025-01-01 00:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0001_initial"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_TYPE = sa.JSON().with_variant(JSONB(), "postgresql")
ID_TYPE = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
TS = sa.DateTime(timezone=True)


def _run_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["run_id"], ["runs.id"], name=f"fk_{table}_run_id_runs", ondelete="CASCADE"
    )


def upgrade() -> None:
    """Create the six tables and their indexes."""
    op.create_table(
        "batches",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("bundle_name", sa.String(200), nullable=False),
        sa.Column("bundle_version", sa.String(64), nullable=False),
        sa.Column("root_path", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("options", JSON_TYPE, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_batches"),
        sa.CheckConstraint(
            "status IN ('queued', 'running', 'finished', 'cancelled')", name="ck_batches_status"
        ),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("batch_id", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("target_path", sa.Text(), nullable=False),
        sa.Column("qualname", sa.Text(), nullable=False),
        sa.Column("source_hash", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("started_at", TS, nullable=True),
        sa.Column("finished_at", TS, nullable=True),
        sa.Column("inputs", JSON_TYPE, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_runs"),
        sa.ForeignKeyConstraint(
            ["batch_id"], ["batches.id"], name="fk_runs_batch_id_batches", ondelete="CASCADE"
        ),
        sa.CheckConstraint(
            "status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')", name="ck_runs_status"
        ),
    )
    op.create_index("ix_runs_batch_id_status", "runs", ["batch_id", "status"])
    op.create_index("ix_runs_status_created_at", "runs", ["status", "created_at"])
    op.create_table(
        "turns",
        sa.Column("id", ID_TYPE, autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("latency_s", sa.Float(), nullable=False),
        sa.Column("batch_size", sa.Integer(), nullable=False),
        sa.Column("finish_reason", sa.String(32), nullable=True),
        sa.Column("raw_text", sa.Text(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_turns"),
        _run_fk("turns"),
        sa.UniqueConstraint("run_id", "turn", name="uq_turns_run_id_turn"),
    )
    op.create_table(
        "tool_calls",
        sa.Column("id", ID_TYPE, autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("call_id", sa.String(128), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("arguments", JSON_TYPE, nullable=False),
        sa.Column("output", sa.Text(), nullable=False),
        sa.Column("is_error", sa.Boolean(), nullable=False),
        sa.Column("duration_s", sa.Float(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_tool_calls"),
        _run_fk("tool_calls"),
        sa.UniqueConstraint("call_id", name="uq_tool_calls_call_id"),
    )
    op.create_index("ix_tool_calls_run_id_turn", "tool_calls", ["run_id", "turn"])
    op.create_index("ix_tool_calls_name", "tool_calls", ["name"])
    op.create_table(
        "results",
        sa.Column("id", ID_TYPE, autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("target_path", sa.Text(), nullable=False),
        sa.Column("original_hash", sa.String(64), nullable=False),
        sa.Column("diff", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_results"),
        _run_fk("results"),
        sa.UniqueConstraint("run_id", name="uq_results_run_id"),
        sa.CheckConstraint(
            "status IN ('proposed', 'applied', 'rejected', 'stale')", name="ck_results_status"
        ),
    )
    op.create_table(
        "events",
        sa.Column("id", ID_TYPE, autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("ts", TS, nullable=False),
        sa.Column("payload", JSON_TYPE, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_events"),
    )
    op.create_index("ix_events_run_id_id", "events", ["run_id", "id"])
    op.create_index("ix_events_type", "events", ["type"])


def downgrade() -> None:
    """Drop every table (children first)."""
    for table in ("events", "results", "tool_calls", "turns", "runs", "batches"):
        op.drop_table(table)
