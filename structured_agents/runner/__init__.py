"""Running bundles over codebases: the embedded runner, result handlers, progress display."""

from __future__ import annotations

from structured_agents.runner.embedded import EmbeddedRunner, RunSummary, discover_jobs
from structured_agents.runner.errors import TaskError
from structured_agents.runner.progress import RunProgress
from structured_agents.runner.recorder import StoreRecorder
from structured_agents.runner.tasks import HANDLERS, Outcome, ResultHandler, handler_for

__all__ = [
    "HANDLERS",
    "EmbeddedRunner",
    "Outcome",
    "ResultHandler",
    "RunProgress",
    "RunSummary",
    "StoreRecorder",
    "TaskError",
    "discover_jobs",
    "handler_for",
]
