"""Errors of job discovery.

::

    StructuredAgentsError
    └── DiscoveryError      the codebase cannot be walked or linted (missing root, ruff failed)

Files that cannot be read or parsed are not errors: discovery logs them and goes on.
"""

from __future__ import annotations

from structured_agents.errors import StructuredAgentsError

__all__ = ["DiscoveryError"]


class DiscoveryError(StructuredAgentsError):
    """A codebase could not be walked, or ruff could not lint it; the message says which and why."""
