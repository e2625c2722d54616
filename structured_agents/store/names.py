"""Names the store writes and answers to, the same whichever store keeps the data: the SQL
store (:mod:`~structured_agents.store.runlog`) and the memory one
(:mod:`~structured_agents.store.memory`) both import them from here, which imports nothing.
"""

from __future__ import annotations

__all__ = ["EVENT_KEYS", "SHARED_SUMMARY", "VIEWS"]

VIEWS = ("failures", "run_summary", "throughput_by_minute", "tool_stats")
"""The reporting views created by the migrations (see ``migrations/versions/0002_views.py``)."""
SHARED_SUMMARY = "shared-summary: another target with other code got the same summary"
"""The flag of results that share a summary (``save_result(..., unique_summary=True)``)."""
EVENT_KEYS = ("type", "run_id", "turn", "timestamp")
"""The keys of an observer event dict stored as columns; the rest of the dict is its payload."""
