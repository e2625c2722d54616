"""Errors of tasks.

::

    StructuredAgentsError
    ├── TaskError       a finished run's output cannot become a result (no submission, a
    │                   target that changed since discovery, a proposal ruff rejects...), or
    │                   a task name nobody registered
    └── DiscoveryError  (``jobs.DiscoveryError``) a codebase could not be walked or linted

A ``TaskError`` from :meth:`~structured_agents.tasks.protocol.Task.outcome` fails that job
only; the runner records its message and goes on.
"""

from __future__ import annotations

from structured_agents.errors import StructuredAgentsError

__all__ = ["TaskError"]


class TaskError(StructuredAgentsError):
    """A run's output could not be turned into a result; the message says why."""
