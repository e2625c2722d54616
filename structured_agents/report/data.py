"""What one batch's report is made of: the records the store holds about the batch, read in one go."""

from __future__ import annotations

from dataclasses import dataclass

from structured_agents.store import (
    BatchRecord,
    BatchSetupRecord,
    EngineTurnRecord,
    FailureRecord,
    ResultRecord,
    RunSummaryRecord,
    Store,
    ToolStatsRecord,
)

__all__ = ["BatchReportData", "load_report_data"]

DIFF_SAMPLE = 8
"""Proposed changes shown in a report."""


@dataclass(frozen=True, slots=True)
class BatchReportData:
    """Every record a report draws, for one batch."""

    batch: BatchRecord
    setup: BatchSetupRecord
    runs: tuple[RunSummaryRecord, ...]
    """Every run, in the order they finished (unfinished last)."""
    engine_turns: tuple[EngineTurnRecord, ...]
    """Every answer of the engine to the batch's runs, in time order."""
    tools: tuple[ToolStatsRecord, ...]
    """Per tool, most called first."""
    failures: tuple[FailureRecord, ...]
    """Failed runs, last finished first."""
    result_counts: dict[str, int]
    """Results by status (proposed, applied, rejected, stale)."""
    result_sample: tuple[ResultRecord, ...]
    """A few results that change something, by file."""


def load_report_data(store: Store, batch_id: str, *, diff_sample: int = DIFF_SAMPLE) -> BatchReportData:
    """Read the batch's records (``RecordNotFoundError`` for an unknown batch)."""
    return BatchReportData(
        batch=store.get_batch(batch_id),
        setup=store.batch_setup(batch_id),
        runs=tuple(store.run_summaries(batch_id)),
        engine_turns=tuple(store.engine_turns(batch_id)),
        tools=tuple(store.batch_tool_stats(batch_id)),
        failures=tuple(store.batch_failures(batch_id)),
        result_counts=store.result_counts(batch_id),
        result_sample=tuple(store.result_sample(batch_id, diff_sample)),
    )
