"""Reporting views: run_summary, tool_stats, failures, throughput_by_minute.

The SQL is shared between SQLite and PostgreSQL except for two expressions, chosen per
dialect: seconds between two timestamps, and a timestamp truncated to its minute (UTC; text
``YYYY-MM-DD HH:MM:00`` on SQLite, ``timestamp`` on PostgreSQL). Ratios and durations are cast to
``DOUBLE PRECISION`` so PostgreSQL returns floats, not ``numeric``.

Revision ID: 0002_views
Revises: 0001_initial
Create Date: 2025-01-01 00:00:01
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0002_views"
down_revision: str | None = "0001_initial"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

VIEWS = ("run_summary", "tool_stats", "failures", "throughput_by_minute")


def _seconds(start: str, end: str, dialect: str) -> str:
    if dialect == "postgresql":
        return f"CAST(EXTRACT(EPOCH FROM ({end} - {start})) AS DOUBLE PRECISION)"
    return f"((julianday({end}) - julianday({start})) * 86400.0)"


def _minute(ts: str, dialect: str) -> str:
    if dialect == "postgresql":
        return f"date_trunc('minute', {ts} AT TIME ZONE 'UTC')"
    return f"strftime('%Y-%m-%d %H:%M:00', {ts})"


def view_sql(dialect: str) -> dict[str, str]:
    """The ``SELECT`` of every view for ``dialect`` (``sqlite`` or ``postgresql``)."""
    is_error = "CASE WHEN is_error THEN 1 ELSE 0 END"
    return {
        "run_summary": f"""
SELECT r.id AS run_id, r.batch_id, r.kind, r.target_path, r.qualname, r.status, r.attempts,
       r.created_at, r.started_at, r.finished_at,
       {_seconds("r.started_at", "r.finished_at", dialect)} AS duration_s,
       COALESCE(t.turns, 0) AS turns,
       COALESCE(t.prompt_tokens, 0) AS prompt_tokens,
       COALESCE(t.completion_tokens, 0) AS completion_tokens,
       COALESCE(t.model_latency_s, 0) AS model_latency_s,
       COALESCE(c.tool_calls, 0) AS tool_calls,
       COALESCE(c.tool_errors, 0) AS tool_errors,
       res.status AS result_status
FROM runs r
LEFT JOIN (SELECT run_id, COUNT(*) AS turns, SUM(prompt_tokens) AS prompt_tokens,
                  SUM(completion_tokens) AS completion_tokens, SUM(latency_s) AS model_latency_s
           FROM turns GROUP BY run_id) t ON t.run_id = r.id
LEFT JOIN (SELECT run_id, COUNT(*) AS tool_calls, SUM({is_error}) AS tool_errors
           FROM tool_calls GROUP BY run_id) c ON c.run_id = r.id
LEFT JOIN results res ON res.run_id = r.id""",
        "tool_stats": f"""
SELECT name, COUNT(*) AS calls, SUM({is_error}) AS errors,
       CAST(SUM({is_error}) AS DOUBLE PRECISION) / COUNT(*) AS error_rate,
       AVG(duration_s) AS avg_duration_s, MAX(duration_s) AS max_duration_s,
       COUNT(DISTINCT run_id) AS runs
FROM tool_calls GROUP BY name""",
        "failures": """
SELECT r.id AS run_id, r.batch_id, r.kind, r.target_path, r.qualname, r.attempts, r.error,
       r.finished_at,
       (SELECT COUNT(*) FROM turns t WHERE t.run_id = r.id) AS turns,
       (SELECT e.type FROM events e WHERE e.run_id = r.id ORDER BY e.id DESC LIMIT 1) AS last_event
FROM runs r WHERE r.status = 'failed'""",
        "throughput_by_minute": f"""
SELECT minute, batch_id, SUM(runs_finished) AS runs_finished, SUM(runs_succeeded) AS runs_succeeded,
       SUM(runs_failed) AS runs_failed, SUM(turns) AS turns, SUM(prompt_tokens) AS prompt_tokens,
       SUM(completion_tokens) AS completion_tokens
FROM (
    SELECT {_minute("finished_at", dialect)} AS minute, batch_id, 1 AS runs_finished,
           CASE WHEN status = 'succeeded' THEN 1 ELSE 0 END AS runs_succeeded,
           CASE WHEN status = 'failed' THEN 1 ELSE 0 END AS runs_failed,
           0 AS turns, 0 AS prompt_tokens, 0 AS completion_tokens
    FROM runs WHERE finished_at IS NOT NULL
    UNION ALL
    SELECT {_minute("t.created_at", dialect)}, r.batch_id, 0, 0, 0, 1, t.prompt_tokens, t.completion_tokens
    FROM turns t JOIN runs r ON r.id = t.run_id
) x
GROUP BY minute, batch_id""",
    }


def upgrade() -> None:
    """Create the views for the connected dialect."""
    for name, select in view_sql(op.get_bind().dialect.name).items():
        op.execute(f"CREATE VIEW {name} AS {select}")


def downgrade() -> None:
    """Drop the views."""
    for name in reversed(VIEWS):
        op.execute(f"DROP VIEW {name}")
