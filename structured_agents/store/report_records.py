"""What the store's report queries return (:mod:`.report`): frozen records, one per figure source."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

__all__ = ["BatchSetupRecord", "EngineTurnRecord", "FailureRecord", "RunSummaryRecord", "ToolStatsRecord"]


@dataclass(frozen=True, slots=True)
class RunSummaryRecord:
    """One run of the batch as the ``run_summary`` view sums it up."""

    run_id: str
    target_path: str
    qualname: str
    status: str
    attempts: int
    started_at: datetime | None
    finished_at: datetime | None
    duration_s: float | None
    """Seconds from the (last) claim to the end; None while the run has not ended."""
    turns: int
    prompt_tokens: int
    completion_tokens: int
    model_latency_s: float
    """Seconds of the engine calls of the run's turns, added up."""
    tool_calls: int
    tool_errors: int
    result_status: str | None
    """Status of the run's proposed change, None when it stored none."""
    result_flags: tuple[str, ...] = ()
    """Why the run's proposed change needs review (empty: clean, or no change)."""


@dataclass(frozen=True, slots=True)
class EngineTurnRecord:
    """One answer of the engine (a ``model_response`` event) to a run of the batch."""

    ts: datetime
    """When the engine answered."""
    batch_size: int
    """Requests the engine decoded together in that call."""
    latency_s: float
    """Seconds of that engine call."""
    completion_tokens: int
    finish_reason: str | None


@dataclass(frozen=True, slots=True)
class ToolStatsRecord:
    """The tool calls of one tool in the batch (the columns of the ``tool_stats`` view)."""

    name: str
    calls: int
    errors: int
    error_rate: float
    avg_duration_s: float
    max_duration_s: float
    runs: int
    """Runs that called the tool."""


@dataclass(frozen=True, slots=True)
class FailureRecord:
    """A failed run of the batch, as the ``failures`` view shows it."""

    run_id: str
    target_path: str
    qualname: str
    attempts: int
    error: str
    finished_at: datetime | None
    turns: int
    last_event: str | None
    """Type of the run's last observer event."""


@dataclass(frozen=True, slots=True)
class BatchSetupRecord:
    """How the batch's agents were set up, as their ``kernel_start``/``model_request`` events say."""

    plugin: str | None
    """Model plugin (prompt format and parser); None before any run started."""
    tools: tuple[str, ...]
    max_turns: int | None
    grammars: tuple[str, ...]
    """Kinds of grammar that constrained the turns (``ebnf``, ``structural_tag``...), sorted."""
    model: str | None = None
    """The model that decoded the batch's first answered turn, as its engine named it."""

    @classmethod
    def of(cls, start: Mapping[str, Any], grammars: Iterable[str], model: str | None) -> BatchSetupRecord:
        """The setup from the first ``kernel_start`` payload (empty before any run started), the
        grammar kinds of the turns and the model of the first answer (both stores build it so)."""
        max_turns = start.get("max_turns")
        return cls(
            plugin=start.get("plugin"),
            tools=tuple(str(tool) for tool in start.get("tools") or ()),
            max_turns=int(max_turns) if max_turns is not None else None,
            grammars=tuple(sorted(str(kind) for kind in grammars)),
            model=model or None,
        )
