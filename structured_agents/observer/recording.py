"""An observer that keeps every event, for tests and for inspecting a run afterwards."""

from __future__ import annotations

from typing import TypeVar

from structured_agents.observer.events import Event
from structured_agents.types import JsonDict

__all__ = ["RecordingObserver"]

E = TypeVar("E", bound=Event)


class RecordingObserver:
    """Collects events in the order received."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        """Every event received, in order."""

    async def on_event(self, event: Event) -> None:
        """Append ``event``."""
        self.events.append(event)

    @property
    def types(self) -> list[str]:
        """The ``type`` of every event, in order."""
        return [event.type for event in self.events]

    def of_type(self, kind: type[E]) -> list[E]:
        """The events of one class, in order."""
        return [event for event in self.events if isinstance(event, kind)]

    def for_run(self, run_id: str) -> list[Event]:
        """The events of one run, in order."""
        return [event for event in self.events if event.run_id == run_id]

    def to_dicts(self) -> list[JsonDict]:
        """Every event as ``to_dict()`` data, in order."""
        return [event.to_dict() for event in self.events]
