"""Errors of patch making and applying.

::

    StructuredAgentsError
    └── PatchError          a change cannot be made or applied (target not found or ambiguous,
                            a diff that does not parse or does not match, overlapping edits)

``apply_patches`` does not raise for a stale, invalid, conflicting or unwritable patch: it
reports it. It raises ``PatchError`` only when another apply holds the codebase's lock.
"""

from __future__ import annotations

from structured_agents.errors import StructuredAgentsError

__all__ = ["PatchError"]


class PatchError(StructuredAgentsError):
    """A change could not be made or applied; the message names the file, target or hunk."""
