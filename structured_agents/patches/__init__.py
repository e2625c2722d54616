"""Results as patches: make unified diffs without touching files, apply them safely later.

:func:`docstring_change` and :func:`file_change` turn a run's output into a diff against the
file the job read; :func:`apply_patches` applies accepted diffs only to that exact content.
"""

from __future__ import annotations

from structured_agents.patches.apply import (
    ApplyReport,
    FileReport,
    PatchOutcome,
    PatchStatus,
    apply_patches,
    combined_diff,
    write_atomic,
)
from structured_agents.patches.change import (
    Patch,
    ProposedChange,
    ProposedPatch,
    docstring_change,
    file_change,
)
from structured_agents.patches.diff import make_diff, parse_diff
from structured_agents.patches.docstring import docstring_literal, set_docstring
from structured_agents.patches.errors import PatchError

__all__ = [
    "ApplyReport",
    "FileReport",
    "Patch",
    "PatchError",
    "PatchOutcome",
    "PatchStatus",
    "ProposedChange",
    "ProposedPatch",
    "apply_patches",
    "combined_diff",
    "docstring_change",
    "docstring_literal",
    "file_change",
    "make_diff",
    "parse_diff",
    "set_docstring",
    "write_atomic",
]
