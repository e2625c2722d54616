"""Fan events out to several observers, isolating their failures from the run."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from structured_agents.observer.events import Event
from structured_agents.observer.protocol import Observer

__all__ = ["CompositeObserver"]

logger = logging.getLogger(__name__)


class CompositeObserver:
    """Sends each event to every observer, one after another, in the order given.

    An observer that raises is logged (with the event type and run id) and the others still
    get the event; the run goes on. Cancellation (``asyncio.CancelledError``) is not caught.
    """

    def __init__(self, observers: Iterable[Observer] = ()) -> None:
        self.observers: tuple[Observer, ...] = tuple(observers)
        """The observers, in dispatch order."""

    async def on_event(self, event: Event) -> None:
        """Dispatch ``event`` to every observer."""
        for observer in self.observers:
            try:
                await observer.on_event(event)
            except Exception:
                logger.exception(
                    "observer %s failed on %s event of run %s (turn %d); the run goes on",
                    type(observer).__name__,
                    event.type,
                    event.run_id,
                    event.turn,
                )
