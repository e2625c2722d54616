"""Observer events: what happened during an agent run, in the order it happened.

A run emits, in this order::

    KernelStart
    per turn:  ModelRequest, ModelResponse, ToolCallEvent (per call), ToolResultEvent (per call,
               in call order), TurnComplete
    KernelEnd

Every event is a frozen dataclass with ``run_id``, ``turn`` and ``timestamp`` (``time.time()``)
and a ``to_dict()`` whose output is JSON-able and carries the event's ``"type"``, so stores can
persist events as they come.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal

from structured_agents.types import JsonDict, TokenUsage, ToolCall

__all__ = [
    "Event",
    "KernelEnd",
    "KernelEvent",
    "KernelStart",
    "ModelRequest",
    "ModelResponse",
    "TerminationReason",
    "ToolCallEvent",
    "ToolResultEvent",
    "TurnComplete",
]

TerminationReason = Literal["termination_tool", "no_tool_calls", "max_turns", "error"]
"""Why a run ended: the termination tool succeeded, the model answered without tool calls,
``max_turns`` was reached, or an error (engine, parse, kernel) stopped it."""


def _jsonable(value: Any) -> Any:
    if isinstance(value, TokenUsage):
        return {
            "prompt_tokens": value.prompt_tokens,
            "completion_tokens": value.completion_tokens,
            "total_tokens": value.total_tokens,
        }
    if isinstance(value, ToolCall):
        return value.to_dict()
    if isinstance(value, tuple | list):
        return [_jsonable(item) for item in value]
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Fields every event has."""

    type: ClassVar[str] = "event"
    """Stable snake_case name of the event kind, written as ``"type"`` by ``to_dict``."""

    run_id: str
    """Id of the run the event belongs to."""
    turn: int
    """Model turn the event belongs to (1-based; 0 for ``KernelStart``)."""
    timestamp: float = field(default_factory=time.time)
    """Wall-clock time the event was created (seconds since the epoch)."""

    def to_dict(self) -> JsonDict:
        """The event as JSON-able data, with its ``"type"`` first."""
        out: JsonDict = {"type": self.type}
        for f in fields(self):
            out[f.name] = _jsonable(getattr(self, f.name))
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelStart(Event):
    """A run started."""

    type: ClassVar[str] = "kernel_start"

    plugin: str
    """Name of the model plugin formatting the run."""
    tools: tuple[str, ...]
    """Names of the tools offered to the model."""
    max_turns: int
    """Turn limit of the run."""
    initial_messages: int
    """Number of messages the run started with."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequest(Event):
    """A generation request for one turn was built and is about to be sent to the engine."""

    type: ClassVar[str] = "model_request"

    request_id: str
    """Id of the ``GenerationRequest``."""
    messages: int
    """Messages in the (trimmed) history the request was built from."""
    prompt_chars: int
    """Length of the rendered prompt."""
    grammar: str | None
    """Kind of grammar constraining the turn (``ebnf``, ``structural_tag``, ``json_schema``) or None."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResponse(Event):
    """The engine answered one turn and the answer was parsed."""

    type: ClassVar[str] = "model_response"

    request_id: str
    """Id of the request this answers."""
    latency_s: float
    """Wall time of the engine's ``generate`` call that produced it."""
    usage: TokenUsage
    """Tokens of this turn."""
    batch_size: int
    """Requests decoded together with this one (1 when unbatched)."""
    finish_reason: str
    """Why decoding stopped (``stop``, ``length``, ``grammar``)."""
    text: str
    """Raw generated text."""
    content: str | None
    """Free text the plugin parsed out of it (None when there was none)."""
    tool_calls: int
    """Number of tool calls parsed out of it."""
    model: str = ""
    """The model that decoded it, as its engine names it (what a batch's report names)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallEvent(Event):
    """A tool call is about to run."""

    type: ClassVar[str] = "tool_call"

    call: ToolCall
    """The call (id, name, arguments)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultEvent(Event):
    """A tool call finished (emitted in call order once the turn's calls are done)."""

    type: ClassVar[str] = "tool_result"

    call_id: str
    """Id of the call this answers."""
    name: str
    """Tool name."""
    output: str
    """What the model will see."""
    is_error: bool
    """Whether the call failed (the output then describes the failure)."""
    duration_s: float
    """Wall time of the call."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnComplete(Event):
    """A turn ended: the model answered and its calls (if any) ran."""

    type: ClassVar[str] = "turn_complete"

    duration_s: float
    """Wall time from building the request to the last tool result."""
    tool_calls: int
    """Calls made in the turn."""
    tool_errors: int
    """Calls of the turn that came back as errors."""


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelEnd(Event):
    """A run ended (``turn`` is the number of turns it took)."""

    type: ClassVar[str] = "kernel_end"

    reason: TerminationReason
    """Why it ended."""
    usage: TokenUsage
    """Tokens of every turn, summed."""
    duration_s: float
    """Wall time from ``KernelStart`` to now."""
    error: str | None = None
    """For ``reason == "error"``: the error type and message."""


KernelEvent = (
    KernelStart | ModelRequest | ModelResponse | ToolCallEvent | ToolResultEvent | TurnComplete | KernelEnd
)
"""Every event the kernel emits."""
