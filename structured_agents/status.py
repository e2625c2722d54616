"""The statuses of runs, results and batches: plain literals below the store and the kernel.

The store writes them, tasks name the status a result starts in and the surfaces filter by
them; none of those needs the store's tables to spell one, so they live here (importing
:mod:`structured_agents.tasks` loads no SQLAlchemy).
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "BATCH_STATUSES",
    "FINAL_STATUSES",
    "RESULT_STATUSES",
    "RUN_STATUSES",
    "BatchStatus",
    "FinalStatus",
    "ResultStatus",
    "RunStatus",
]

RunStatus = Literal["queued", "running", "succeeded", "failed", "cancelled"]
FinalStatus = Literal["succeeded", "failed", "cancelled"]
"""The statuses a run ends in."""
ResultStatus = Literal["proposed", "applied", "rejected", "stale"]
BatchStatus = Literal["queued", "running", "finished", "cancelled"]
RUN_STATUSES: tuple[RunStatus, ...] = ("queued", "running", "succeeded", "failed", "cancelled")
FINAL_STATUSES: tuple[FinalStatus, ...] = ("succeeded", "failed", "cancelled")
RESULT_STATUSES: tuple[ResultStatus, ...] = ("proposed", "applied", "rejected", "stale")
BATCH_STATUSES: tuple[BatchStatus, ...] = ("queued", "running", "finished", "cancelled")
