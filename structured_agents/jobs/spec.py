"""The unit of work: one target of one task in one file."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["JobSpec"]


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One job found in a codebase, ready to enqueue; round-trips through JSON via ``to_dict``."""

    job_id: str
    """Stable id (see :func:`structured_agents.jobs.ids.job_id`); the store's run id."""
    kind: str
    """The task: ``docstring`` or ``lint``."""
    path: str
    """Target file, relative to the codebase root, ``/``-separated."""
    qualname: str
    """Qualified name of the target (``Class.method``, ``outer.<locals>.inner``), ``<module>`` for
    whole-file jobs."""
    source_hash: str
    """SHA-256 of the whole file as discovery read it; patches apply only to that exact content."""
    inputs: dict[str, Any] = field(default_factory=dict)
    """Task inputs rendered into the prompt (source segment, line span, findings...)."""

    def to_dict(self) -> dict[str, Any]:
        """The job as JSON-able data."""
        return {
            "job_id": self.job_id,
            "kind": self.kind,
            "path": self.path,
            "qualname": self.qualname,
            "source_hash": self.source_hash,
            "inputs": dict(self.inputs),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JobSpec:
        """Inverse of :meth:`to_dict`."""
        return cls(
            job_id=str(data["job_id"]),
            kind=str(data["kind"]),
            path=str(data["path"]),
            qualname=str(data["qualname"]),
            source_hash=str(data["source_hash"]),
            inputs=dict(data.get("inputs") or {}),
        )
