"""tool_calls.ban: the texts a tool banned from its run's next turns (a refused copy).

Revision ID: 0004_tool_call_bans
Revises: 0003_run_steps
Create Date: 2026-11-24 00:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0004_tool_call_bans"
down_revision: str | None = "0003_run_steps"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_TYPE = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    """Add the column, an empty list for the calls already recorded (a plain ``ADD COLUMN`` on
    both dialects: SQLite's batch mode would copy the table under the views that read it)."""
    op.add_column("tool_calls", sa.Column("ban", JSON_TYPE, nullable=False, server_default=sa.text("'[]'")))


def downgrade() -> None:
    """Drop the column."""
    op.drop_column("tool_calls", "ban")
