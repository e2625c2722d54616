"""The state of one run between steps: everything needed to go on, as JSON-able data.

A run alternates between two phases: ``model`` (the next step builds a request and applies
the engine's completion) and ``tools`` (the calls in ``pending_calls`` are to be executed and
their results applied). A queue worker can persist the state after any step with
``to_dict()`` and continue elsewhere with ``from_dict()``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from structured_agents.context import RunContext
from structured_agents.observer.events import TerminationReason
from structured_agents.types import JsonDict, Message, TokenUsage, ToolCall, ToolResult

__all__ = ["Phase", "RunState"]

Phase = Literal["model", "generating", "tools", "done"]
"""``model``: ready to build a request; ``generating``: a request is out, awaiting its
completion; ``tools``: ``pending_calls`` await results; ``done``: the run ended."""


@dataclass(slots=True)
class RunState:
    """Mutable state of one run, advanced by the kernel's step methods."""

    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    """Id of the run (the job id when run by a worker)."""
    messages: list[Message] = field(default_factory=list)
    """The whole history, untrimmed."""
    turn: int = 0
    """Model turns started so far."""
    phase: Phase = "model"
    """Where the run is (see :data:`Phase`)."""
    request_id: str | None = None
    """Id of the outstanding request while ``phase == "generating"``."""
    pending_calls: list[ToolCall] = field(default_factory=list)
    """Calls of the current turn awaiting results while ``phase == "tools"``."""
    tool_results: list[ToolResult] = field(default_factory=list)
    """Every tool result of the run, in call order."""
    usage: TokenUsage = field(default_factory=TokenUsage)
    """Tokens of every turn so far."""
    termination: TerminationReason | None = None
    """Why the run ended, once it has."""
    final_output: str | None = None
    """The run's output: the termination tool's result, or the answer without calls."""
    error: str | None = None
    """The error that ended the run (type and message), if one did."""
    workspace: str | None = None
    """Root directory the run's tools may read."""
    inputs: dict[str, Any] = field(default_factory=dict)
    """The job's inputs, handed to tools in their ``RunContext``."""
    started_at: float = field(default_factory=time.time)
    """``time.time()`` when the run started."""
    turn_started_at: float = 0.0
    """``time.time()`` when the current turn's request was built."""
    confidence: float | None = None
    """The review margin of the output the latest turn kept (``KernelConfig.review``: how much
    more likely it made the reviewed text than saying nothing did); None: not measured."""

    @property
    def done(self) -> bool:
        """Whether the run has ended."""
        return self.phase == "done"

    def context(self) -> RunContext:
        """The run context for tools at the current turn."""
        workspace = Path(self.workspace) if self.workspace is not None else None
        return RunContext(run_id=self.run_id, turn=self.turn, workspace=workspace, inputs=self.inputs)

    def to_dict(self) -> JsonDict:
        """The state as JSON-able data."""
        return {
            "run_id": self.run_id,
            "messages": [m.to_dict() for m in self.messages],
            "turn": self.turn,
            "phase": self.phase,
            "request_id": self.request_id,
            "pending_calls": [c.to_dict() for c in self.pending_calls],
            "tool_results": [r.to_dict() for r in self.tool_results],
            "usage": {
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
            },
            "termination": self.termination,
            "final_output": self.final_output,
            "error": self.error,
            "workspace": self.workspace,
            "inputs": self.inputs,
            "started_at": self.started_at,
            "turn_started_at": self.turn_started_at,
            "confidence": self.confidence,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunState:
        """Rebuild a state written by :meth:`to_dict`."""
        usage = data.get("usage") or {}
        return cls(
            run_id=str(data["run_id"]),
            messages=[Message.from_dict(m) for m in data.get("messages") or ()],
            turn=int(data.get("turn", 0)),
            phase=data.get("phase", "model"),
            request_id=data.get("request_id"),
            pending_calls=[ToolCall.from_dict(c) for c in data.get("pending_calls") or ()],
            tool_results=[ToolResult.from_dict(r) for r in data.get("tool_results") or ()],
            usage=TokenUsage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
            termination=data.get("termination"),
            final_output=data.get("final_output"),
            error=data.get("error"),
            workspace=data.get("workspace"),
            inputs=dict(data.get("inputs") or {}),
            started_at=float(data.get("started_at", 0.0)),
            turn_started_at=float(data.get("turn_started_at", 0.0)),
            confidence=None if data.get("confidence") is None else float(data["confidence"]),
        )
