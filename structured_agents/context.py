"""The run context handed to tools, backends and observers."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["RunContext"]


@dataclass(frozen=True, slots=True)
class RunContext:
    """Where a tool call or event belongs."""

    run_id: str
    """Id of the agent run (one job's conversation)."""
    turn: int = 0
    """Current turn number, starting at 1 for the first model turn (0 before any turn)."""
    workspace: Path | None = None
    """Root directory the run's tools may read; externals refuse paths outside it."""
    inputs: dict[str, Any] = field(default_factory=dict)
    """The job's inputs (target file, qualified name, ...), as rendered into the user prompt."""
