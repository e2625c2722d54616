"""results.flags: why a proposed change needs review; run_summary shows them.

``flags`` is a JSON list of reasons (empty for a clean proposal). The ``run_summary`` view
gains ``needs_review`` (1 when the run's result has flags, 0 when it has none, NULL without a
result) and ``result_flags`` (the list), so ``SELECT ... FROM run_summary WHERE needs_review =
1`` is the review queue in SQL.

Revision ID: 0005_result_flags
Revises: 0004_tool_call_bans
Create Date: 2026-11-26 00:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0005_result_flags"
down_revision: str | None = "0004_tool_call_bans"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_TYPE = sa.JSON().with_variant(JSONB(), "postgresql")


def _seconds(start: str, end: str, dialect: str) -> str:
    if dialect == "postgresql":
        return f"CAST(EXTRACT(EPOCH FROM ({end} - {start})) AS DOUBLE PRECISION)"
    return f"((julianday({end}) - julianday({start})) * 86400.0)"


def _flag_count(column: str, dialect: str) -> str:
    if dialect == "postgresql":
        return f"jsonb_array_length({column})"
    return f"json_array_length({column})"


def run_summary(dialect: str, *, with_flags: bool) -> str:
    """The ``SELECT`` of ``run_summary`` (as 0002 made it, or with the review columns)."""
    is_error = "CASE WHEN is_error THEN 1 ELSE 0 END"
    flags = ""
    if with_flags:
        count = _flag_count("res.flags", dialect)
        flags = (
            f",\n       CASE WHEN res.run_id IS NULL THEN NULL WHEN {count} > 0 THEN 1 ELSE 0 END"
            " AS needs_review,\n       res.flags AS result_flags"
        )
    return f"""
SELECT r.id AS run_id, r.batch_id, r.kind, r.target_path, r.qualname, r.status, r.attempts,
       r.created_at, r.started_at, r.finished_at,
       {_seconds("r.started_at", "r.finished_at", dialect)} AS duration_s,
       COALESCE(t.turns, 0) AS turns,
       COALESCE(t.prompt_tokens, 0) AS prompt_tokens,
       COALESCE(t.completion_tokens, 0) AS completion_tokens,
       COALESCE(t.model_latency_s, 0) AS model_latency_s,
       COALESCE(c.tool_calls, 0) AS tool_calls,
       COALESCE(c.tool_errors, 0) AS tool_errors,
       res.status AS result_status{flags}
FROM runs r
LEFT JOIN (SELECT run_id, COUNT(*) AS turns, SUM(prompt_tokens) AS prompt_tokens,
                  SUM(completion_tokens) AS completion_tokens, SUM(latency_s) AS model_latency_s
           FROM turns GROUP BY run_id) t ON t.run_id = r.id
LEFT JOIN (SELECT run_id, COUNT(*) AS tool_calls, SUM({is_error}) AS tool_errors
           FROM tool_calls GROUP BY run_id) c ON c.run_id = r.id
LEFT JOIN results res ON res.run_id = r.id"""


def upgrade() -> None:
    """Add the column (an empty list for the results already stored: a plain ``ADD COLUMN``, as
    0004 does), then make ``run_summary`` again with the review columns."""
    dialect = op.get_bind().dialect.name
    op.execute("DROP VIEW run_summary")
    op.add_column("results", sa.Column("flags", JSON_TYPE, nullable=False, server_default=sa.text("'[]'")))
    op.execute(f"CREATE VIEW run_summary AS {run_summary(dialect, with_flags=True)}")


def downgrade() -> None:
    """The view as 0002 made it, then drop the column."""
    dialect = op.get_bind().dialect.name
    op.execute("DROP VIEW run_summary")
    op.drop_column("results", "flags")
    op.execute(f"CREATE VIEW run_summary AS {run_summary(dialect, with_flags=False)}")
