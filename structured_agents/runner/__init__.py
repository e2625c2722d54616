"""Running bundles over codebases on one machine: the embedded runner and its progress display."""

from __future__ import annotations

from structured_agents.runner.embedded import EmbeddedRunner, RunSummary
from structured_agents.runner.progress import RunProgress

__all__ = ["EmbeddedRunner", "RunProgress", "RunSummary"]
