"""The result of a finished run."""

from __future__ import annotations

from dataclasses import dataclass

from structured_agents.errors import KernelError
from structured_agents.kernel.state import RunState
from structured_agents.observer.events import TerminationReason
from structured_agents.types import JsonDict, Message, TokenUsage, ToolResult

__all__ = ["RunResult"]


@dataclass(frozen=True, slots=True)
class RunResult:
    """What a run produced and how it ended."""

    run_id: str
    """Id of the run."""
    termination: TerminationReason
    """Why it ended (never ``error``: errors are raised)."""
    final_output: str | None
    """The termination tool's result, or the model's answer when it stopped calling tools;
    None when the run hit ``max_turns``."""
    final_message: Message | None
    """The last assistant message."""
    turns: int
    """Model turns taken."""
    history: tuple[Message, ...]
    """The whole conversation, untrimmed."""
    usage: TokenUsage
    """Tokens of every turn, summed."""
    tool_results: tuple[ToolResult, ...]
    """Every tool result, in call order."""
    confidence: float | None = None
    """The review margin of the last turn's output (:attr:`RunState.confidence`)."""

    @classmethod
    def from_state(cls, state: RunState) -> RunResult:
        """The result of a finished run's state."""
        if state.termination is None or state.termination == "error":
            raise KernelError(f"run {state.run_id} has no result (termination={state.termination!r})")
        final = next((m for m in reversed(state.messages) if m.role == "assistant"), None)
        return cls(
            run_id=state.run_id,
            termination=state.termination,
            final_output=state.final_output,
            final_message=final,
            turns=state.turn,
            history=tuple(state.messages),
            usage=state.usage,
            tool_results=tuple(state.tool_results),
            confidence=state.confidence,
        )

    def to_dict(self) -> JsonDict:
        """The result as JSON-able data."""
        return {
            "run_id": self.run_id,
            "termination": self.termination,
            "final_output": self.final_output,
            "final_message": self.final_message.to_dict() if self.final_message else None,
            "turns": self.turns,
            "history": [m.to_dict() for m in self.history],
            "usage": {
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
            },
            "tool_results": [r.to_dict() for r in self.tool_results],
            "confidence": self.confidence,
        }
