"""Errors of the evaluation.

::

    StructuredAgentsError
    └── EvaluationError     a package cannot be fetched, unpacked or evaluated (names the
                            package, the file or the command and what it said)
"""

from __future__ import annotations

from structured_agents.errors import StructuredAgentsError

__all__ = ["EvaluationError"]


class EvaluationError(StructuredAgentsError):
    """A package could not be fetched, unpacked or evaluated; the message says which and why."""
