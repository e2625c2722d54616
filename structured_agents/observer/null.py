"""The do-nothing observer (the kernel's default)."""

from __future__ import annotations

from structured_agents.observer.protocol import BaseObserver

__all__ = ["NullObserver"]


class NullObserver(BaseObserver):
    """Ignores every event."""
