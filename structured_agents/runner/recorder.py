"""The observer that writes every event of the embedded runner's runs to the store.

Events are kept per run and written when the runner says the run's work is over
(:meth:`StoreRecorder.flush`), finished, failed or interrupted alike, in one transaction for
the events plus one idempotent write per turn and per tool call. Writing is synchronous on
purpose: the runner flushes between awaits, so an interruption (Ctrl-C cancels the tasks)
can never leave a run half-recorded.
"""

from __future__ import annotations

from structured_agents.observer.events import Event, ModelResponse, ToolCallEvent, ToolResultEvent
from structured_agents.store import Store
from structured_agents.types import ToolCall

__all__ = ["StoreRecorder"]


class StoreRecorder:
    """An :class:`~structured_agents.observer.protocol.Observer` buffering events per run."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._events: dict[str, list[Event]] = {}

    async def on_event(self, event: Event) -> None:
        """Keep ``event`` until its run is flushed."""
        self._events.setdefault(event.run_id, []).append(event)

    def flush(self, run_id: str) -> int:
        """Write the run's buffered events, turns and tool calls; returns how many events."""
        events = self._events.pop(run_id, [])
        if not events:
            return 0
        self.store.record_events(event.to_dict() for event in events)
        calls: dict[str, ToolCall] = {}
        for event in events:
            if isinstance(event, ModelResponse):
                self.store.record_turn(
                    run_id,
                    event.turn,
                    prompt_tokens=event.usage.prompt_tokens,
                    completion_tokens=event.usage.completion_tokens,
                    latency_s=event.latency_s,
                    batch_size=event.batch_size,
                    finish_reason=event.finish_reason,
                    raw_text=event.text,
                )
            elif isinstance(event, ToolCallEvent):
                calls[event.call.id] = event.call
            elif isinstance(event, ToolResultEvent):
                call = calls.get(event.call_id)
                self.store.record_tool_call(
                    run_id,
                    event.turn,
                    event.call_id,
                    event.name,
                    call.arguments if call is not None else {},
                    event.output,
                    is_error=event.is_error,
                    duration_s=event.duration_s,
                )
        return len(events)
