"""Errors of jobs: discovering them, and the jobs a client gives.

::

    StructuredAgentsError
    ├── DiscoveryError      the codebase cannot be walked or linted (missing root, ruff failed)
    └── ConfigError
        └── JobInputError   jobs a client gave are malformed (fields, or inputs the templates refuse)

Files that cannot be read or parsed are not errors: discovery logs them and goes on.
"""

from __future__ import annotations

from structured_agents.errors import ConfigError, StructuredAgentsError

__all__ = ["DiscoveryError", "JobInputError"]


class DiscoveryError(StructuredAgentsError):
    """A codebase could not be walked, or ruff could not lint it; the message says which and why."""


class JobInputError(ConfigError):
    """Jobs given to a batch are malformed; the message names each bad job and field."""
