"""Observer events and observers: visibility into agent runs."""

from structured_agents.observer.composite import CompositeObserver
from structured_agents.observer.events import (
    Event,
    KernelEnd,
    KernelEvent,
    KernelStart,
    ModelRequest,
    ModelResponse,
    TerminationReason,
    ToolCallEvent,
    ToolResultEvent,
    TurnComplete,
)
from structured_agents.observer.null import NullObserver
from structured_agents.observer.protocol import BaseObserver, Observer
from structured_agents.observer.recording import RecordingObserver

__all__ = [
    "BaseObserver",
    "CompositeObserver",
    "Event",
    "KernelEnd",
    "KernelEvent",
    "KernelStart",
    "ModelRequest",
    "ModelResponse",
    "NullObserver",
    "Observer",
    "RecordingObserver",
    "TerminationReason",
    "ToolCallEvent",
    "ToolResultEvent",
    "TurnComplete",
]
