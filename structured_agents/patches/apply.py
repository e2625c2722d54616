"""Applying accepted results to a codebase, all-or-nothing per file.

For each file, in order: a patch whose recorded hash differs from the file's current content is
*stale* (the file changed since the job read it); a patch whose diff does not apply, or whose
result does not parse (``ast.parse``, for ``.py`` files), or whose diff is of another path, is
*invalid*; a patch whose edits overlap an earlier patch of the same file is a *conflict*. The
remaining patches are applied together, the result is parsed once more, and the file is replaced
atomically (temporary file in the same directory, ``fsync``, ``os.replace``, permissions kept)
after checking that it did not change meanwhile; a write that fails leaves the file as it was and
makes its patches *invalid*. A file is written completely or not at all.
"""

from __future__ import annotations

import ast
import os
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from structured_agents.jobs.ids import source_hash
from structured_agents.patches.change import ProposedPatch
from structured_agents.patches.diff import Edit, apply_edits, diff_edits, parse_diff, split_keepends
from structured_agents.patches.errors import PatchError

__all__ = ["ApplyReport", "FileReport", "PatchOutcome", "PatchStatus", "apply_patches", "write_atomic"]

PatchStatus = Literal["applied", "stale", "invalid", "conflict"]
_RESULT_STATUS = {"applied": "applied", "stale": "stale", "invalid": "rejected", "conflict": "rejected"}


@dataclass(frozen=True, slots=True)
class PatchOutcome:
    """What happened to one patch."""

    run_id: str
    status: PatchStatus
    detail: str = ""


@dataclass(frozen=True, slots=True)
class FileReport:
    """What happened to one file."""

    path: str
    written: bool
    outcomes: tuple[PatchOutcome, ...]

    def run_ids(self, status: PatchStatus) -> list[str]:
        """Runs of this file whose patch ended in ``status``."""
        return [outcome.run_id for outcome in self.outcomes if outcome.status == status]


@dataclass(frozen=True, slots=True)
class ApplyReport:
    """Per-file outcome of :func:`apply_patches`."""

    files: tuple[FileReport, ...]

    def run_ids(self, status: PatchStatus) -> list[str]:
        """Runs whose patch ended in ``status``, over all files."""
        return [run_id for report in self.files for run_id in report.run_ids(status)]

    def result_statuses(self) -> dict[str, str]:
        """Run id -> the store's result status (``applied``, ``stale`` or ``rejected``)."""
        return {o.run_id: _RESULT_STATUS[o.status] for f in self.files for o in f.outcomes}


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically, keeping its permission bits."""
    mode = stat.S_IMODE(path.stat().st_mode)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _parse_error(path: str, text: str) -> str | None:
    if not path.endswith((".py", ".pyi")):
        return None
    try:
        ast.parse(text)
    except (SyntaxError, ValueError) as exc:
        return f"the result does not parse: {exc}"
    return None


def _check(
    path: str, original: list[str], current_hash: str, patch: ProposedPatch, accepted: list[list[Edit]]
) -> PatchOutcome | list[Edit]:
    """The patch's edits when it can join the accepted ones, else why not."""
    if patch.original_hash != current_hash:
        return PatchOutcome(patch.run_id, "stale", "the file changed since the job read it")
    try:
        parsed = parse_diff(patch.diff)
        if parsed.old_path != path:
            raise PatchError(f"the diff is of {parsed.old_path!r}, not of {path!r}")
        edits = diff_edits(original, parsed)
        error = _parse_error(path, apply_edits(original, [edits]))
    except PatchError as exc:
        return PatchOutcome(patch.run_id, "invalid", str(exc))
    if error is not None:
        return PatchOutcome(patch.run_id, "invalid", error)
    try:
        apply_edits(original, [*accepted, edits])
    except PatchError as exc:
        return PatchOutcome(patch.run_id, "conflict", f"with an earlier patch of the file: {exc}")
    return edits


def _write(
    target: Path, path: str, original: list[str], current_hash: str, accepted: list[list[Edit]]
) -> PatchOutcome:
    """Apply the accepted edits together and replace the file; the outcome (run id left empty)."""
    new_text = apply_edits(original, accepted)
    error = _parse_error(path, new_text)
    if error is not None:
        return PatchOutcome("", "invalid", f"together with the other patches of the file, {error}")
    if source_hash(target.read_bytes()) != current_hash:
        return PatchOutcome("", "stale", "the file changed while the patches were applied")
    try:
        write_atomic(target, new_text.encode("utf-8"))
    except OSError as exc:
        return PatchOutcome("", "invalid", f"the file could not be written (left as it was): {exc}")
    return PatchOutcome("", "applied")


def _apply_file(root: Path, path: str, patches: list[ProposedPatch]) -> FileReport:
    target = (root / path).resolve()
    problem = None
    if not target.is_relative_to(root.resolve()):
        problem = "the path is outside the codebase root"
    elif not target.is_file():
        problem = "no such file"
    if problem is not None:
        return FileReport(path, False, tuple(PatchOutcome(p.run_id, "invalid", problem) for p in patches))
    data = target.read_bytes()
    current_hash = source_hash(data)
    try:
        original = split_keepends(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return FileReport(path, False, tuple(PatchOutcome(p.run_id, "invalid", str(exc)) for p in patches))
    outcomes: dict[str, PatchOutcome] = {}
    accepted: dict[str, list[Edit]] = {}
    for patch in patches:
        checked = _check(path, original, current_hash, patch, list(accepted.values()))
        if isinstance(checked, PatchOutcome):
            outcomes[patch.run_id] = checked
        else:
            accepted[patch.run_id] = checked
    written = False
    if accepted:
        joint = _write(target, path, original, current_hash, list(accepted.values()))
        written = joint.status == "applied"
        outcomes.update({run_id: PatchOutcome(run_id, joint.status, joint.detail) for run_id in accepted})
    return FileReport(path, written, tuple(outcomes[p.run_id] for p in patches))


def apply_patches(root: Path, patches: Iterable[ProposedPatch]) -> ApplyReport:
    """Apply ``patches`` under ``root``; patches of one file are applied together, in the given order."""
    by_file: dict[str, list[ProposedPatch]] = {}
    for patch in patches:
        by_file.setdefault(patch.target_path, []).append(patch)
    return ApplyReport(tuple(_apply_file(root, path, items) for path, items in sorted(by_file.items())))
