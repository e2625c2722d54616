"""Proposed changes: what a run produces instead of touching the user's files.

A change is a unified diff against the file as the job read it, plus that file's hash; the
worker stores it as the run's result (``Store.save_result``) and ``apply_patches`` applies it
later, only to that exact content.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from structured_agents.jobs.ids import source_hash
from structured_agents.patches.diff import make_diff
from structured_agents.patches.docstring import set_docstring

__all__ = ["Patch", "ProposedChange", "ProposedPatch", "docstring_change", "file_change"]


class ProposedPatch(Protocol):
    """What ``apply_patches`` needs of a result (``store.ResultRecord`` and :class:`Patch` have it)."""

    @property
    def run_id(self) -> str:
        """The run that proposed the change."""
        ...

    @property
    def target_path(self) -> str:
        """The file, relative to the codebase root, ``/``-separated."""
        ...

    @property
    def original_hash(self) -> str:
        """SHA-256 of the file content the diff was made against."""
        ...

    @property
    def diff(self) -> str:
        """Unified diff of the file (``a/``/``b/`` paths)."""
        ...


@dataclass(frozen=True, slots=True)
class Patch:
    """A proposed change of one run, ready for ``apply_patches``."""

    run_id: str
    target_path: str
    original_hash: str
    diff: str


@dataclass(frozen=True, slots=True)
class ProposedChange:
    """A change of one file computed from its original text."""

    target_path: str
    """The file, relative to the codebase root."""
    original_hash: str
    """SHA-256 of the original text."""
    diff: str
    """Unified diff from the original to ``new_text`` (empty when nothing changes)."""
    new_text: str
    """The whole new file."""

    def as_patch(self, run_id: str) -> Patch:
        """The change as the result of run ``run_id``."""
        return Patch(run_id, self.target_path, self.original_hash, self.diff)


def file_change(path: str, original: str, new_text: str) -> ProposedChange:
    """A whole-file proposal (the lint task's result) as a change."""
    return ProposedChange(path, source_hash(original), make_diff(path, original, new_text), new_text)


def docstring_change(
    path: str, original: str, qualname: str, docstring: str, *, line: int | None = None
) -> ProposedChange:
    """Set the docstring of ``qualname`` in the file ``path`` whose text is ``original``."""
    return file_change(path, original, set_docstring(original, qualname, docstring, line=line))
