"""Persistence of batches, runs, turns, tool calls, results and events (PostgreSQL or SQLite).

The schema lives in :mod:`~structured_agents.store.models`, its migrations in
``migrations/``; :class:`Store` is the protocol everything else uses, and :class:`SqlStore`
(PostgreSQL or SQLite) the implementation that owns every SQL statement. :class:`MemoryStore`
is the same contract kept in Python dicts, for tests where SQL is not under test. The statuses
they write are :mod:`structured_agents.status`'s.
"""

from __future__ import annotations

from structured_agents.store.connection import default_url
from structured_agents.store.errors import RecordNotFoundError, StoreError, StoreUnavailableError
from structured_agents.store.memory import MemoryStore
from structured_agents.store.migrate import current_revision, head_revision, upgrade
from structured_agents.store.names import VIEWS
from structured_agents.store.protocol import (
    BatchStore,
    LogStore,
    QueueStore,
    ReportStore,
    ResultStore,
    StepStore,
    Store,
)
from structured_agents.store.records import (
    BatchCounts,
    BatchRecord,
    EnqueueResult,
    EventRecord,
    ResultRecord,
    Run,
    StoredRun,
    ToolCallRecord,
    TurnRecord,
)
from structured_agents.store.report_records import (
    BatchSetupRecord,
    EngineTurnRecord,
    FailureRecord,
    RunSummaryRecord,
    ToolStatsRecord,
)
from structured_agents.store.sql import SqlStore

__all__ = [
    "VIEWS",
    "BatchCounts",
    "BatchRecord",
    "BatchSetupRecord",
    "BatchStore",
    "EngineTurnRecord",
    "EnqueueResult",
    "EventRecord",
    "FailureRecord",
    "LogStore",
    "MemoryStore",
    "QueueStore",
    "RecordNotFoundError",
    "ReportStore",
    "ResultRecord",
    "ResultStore",
    "Run",
    "RunSummaryRecord",
    "SqlStore",
    "StepStore",
    "Store",
    "StoreError",
    "StoreUnavailableError",
    "StoredRun",
    "ToolCallRecord",
    "ToolStatsRecord",
    "TurnRecord",
    "current_revision",
    "default_url",
    "head_revision",
    "upgrade",
]
