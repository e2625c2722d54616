"""The observer seam: one async method that receives every event of a run.

``on_event`` is async because the observers that matter do I/O (a store writing events to a
database, a progress stream), and the kernel runs many agents on one event loop: a sync
observer would block them all while it writes. The kernel awaits each event before going on,
so an observer sees a run's events in order and never two at once for the same run.

:class:`BaseObserver` is the convenient way to write one (as dramatiq middleware are): it
dispatches each event to a per-kind hook that does nothing; override the hooks you need.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from structured_agents.observer.events import (
    Event,
    KernelEnd,
    KernelStart,
    ModelRequest,
    ModelResponse,
    ToolCallEvent,
    ToolResultEvent,
    TurnComplete,
)

__all__ = ["BaseObserver", "Observer"]


@runtime_checkable
class Observer(Protocol):
    """Receives the events of agent runs."""

    async def on_event(self, event: Event) -> None:
        """Handle one event. Raising is logged by the kernel and does not stop the run."""
        ...


class BaseObserver:
    """An :class:`Observer` with one no-op hook per event kind; subclasses override some."""

    async def on_event(self, event: Event) -> None:
        """Dispatch ``event`` to its hook."""
        if isinstance(event, KernelStart):
            await self.on_kernel_start(event)
        elif isinstance(event, ModelRequest):
            await self.on_model_request(event)
        elif isinstance(event, ModelResponse):
            await self.on_model_response(event)
        elif isinstance(event, ToolCallEvent):
            await self.on_tool_call(event)
        elif isinstance(event, ToolResultEvent):
            await self.on_tool_result(event)
        elif isinstance(event, TurnComplete):
            await self.on_turn_complete(event)
        elif isinstance(event, KernelEnd):
            await self.on_kernel_end(event)

    async def on_kernel_start(self, event: KernelStart) -> None:
        """A run started."""

    async def on_model_request(self, event: ModelRequest) -> None:
        """A turn's request is about to go to the engine."""

    async def on_model_response(self, event: ModelResponse) -> None:
        """The engine answered a turn."""

    async def on_tool_call(self, event: ToolCallEvent) -> None:
        """A tool call is about to run."""

    async def on_tool_result(self, event: ToolResultEvent) -> None:
        """A tool call finished."""

    async def on_turn_complete(self, event: TurnComplete) -> None:
        """A turn ended."""

    async def on_kernel_end(self, event: KernelEnd) -> None:
        """A run ended."""
