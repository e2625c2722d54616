"""How full an engine kept its batch while work was waiting: the share of backlogged steps at
full batch.

A step (a decode step of a continuous loop, one ``generate`` call of a flush) is *backlogged*
when at least a full batch of work was there to take: the batch was full, or requests were
still waiting after it was formed. Occupancy is the share of backlogged steps whose batch was
full; an engine that never stalls its queue behind a part-empty batch scores 1.0. Steps with
less than a batch of work in sight say nothing about the scheduler and are left out.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["Occupancy", "OccupancyCounter", "ReportsOccupancy"]


@dataclass(frozen=True, slots=True)
class Occupancy:
    """A snapshot of an engine's step counts."""

    steps: int = 0
    """Steps taken."""
    rows: int = 0
    """Rows over all steps (``rows / steps`` is the mean batch)."""
    backlogged: int = 0
    """Steps taken with at least a full batch of work in sight."""
    full: int = 0
    """Backlogged steps whose batch was full."""

    @property
    def mean_batch(self) -> float:
        """Mean rows per step."""
        return self.rows / self.steps if self.steps else 0.0

    @property
    def share(self) -> float | None:
        """Full backlogged steps over backlogged steps; None before any backlog."""
        return self.full / self.backlogged if self.backlogged else None

    def as_dict(self) -> dict[str, float | int | None]:
        """The counts with the mean batch and the share, for JSON."""
        return {
            "steps": self.steps,
            "rows": self.rows,
            "backlogged_steps": self.backlogged,
            "full_steps": self.full,
            "mean_batch": round(self.mean_batch, 2),
            "occupancy": None if self.share is None else round(self.share, 4),
        }


class OccupancyCounter:
    """Counts steps as an engine takes them (from its loop thread); read from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._now = Occupancy()

    def record(self, rows: int, *, full: bool, waiting: int) -> None:
        """One step of ``rows`` rows; ``full`` when the batch had no room left, ``waiting`` the
        requests left out of it."""
        backlogged = full or waiting > 0
        with self._lock:
            now = self._now
            self._now = Occupancy(
                now.steps + 1,
                now.rows + rows,
                now.backlogged + backlogged,
                now.full + (backlogged and full),
            )

    def snapshot(self) -> Occupancy:
        """The counts so far."""
        with self._lock:
            return self._now


@runtime_checkable
class ReportsOccupancy(Protocol):
    """An engine that counts how full it kept its batch."""

    def occupancy(self) -> Occupancy:
        """Its counts so far."""
        ...
