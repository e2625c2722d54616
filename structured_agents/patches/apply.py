"""Applying accepted results to a codebase, all-or-nothing per file, safe to interrupt.

For each file, in order: a patch whose recorded hash differs from the file's current content is
*stale* (the file changed since the job read it), unless the file already holds it (see below);
a patch whose diff does not apply, or whose result does not parse (``ast.parse``, for ``.py``
files), or whose diff is of another path, is *invalid*; a patch whose edits overlap an earlier
patch of the same file is a *conflict*. The remaining patches are applied together, the result
is parsed once more, and the file is replaced atomically (temporary file in the same directory,
``fsync``, ``os.replace``, the directory ``fsync``-ed, permissions kept) after checking that it
did not change meanwhile. A read-only file (no write permission bit) is not replaced. A write
that fails leaves the file as it was and its patches *failed*: they stay proposed, and the next
apply tries them again. A file is written completely or not at all.

Interrupted applies (``kill -9`` at any point) are reconciled by the next one. ``record`` is
called with each file's report right after that file, so a caller records it before the next
file is touched; a file replaced but not yet recorded holds the patched text, which
:mod:`~structured_agents.patches.reconcile` recognises (the patches are then
*applied*, not stale); a temporary file left by a kill before the rename is removed. One apply
runs at a time per codebase root (an advisory lock on the root directory).
"""

from __future__ import annotations

import contextlib
import glob
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from structured_agents import syntax
from structured_agents.jobs.ids import source_hash
from structured_agents.patches.change import ProposedPatch
from structured_agents.patches.diff import (
    Edit,
    apply_edits,
    diff_edits,
    make_diff,
    parse_diff,
    split_keepends,
)
from structured_agents.patches.errors import PatchError
from structured_agents.patches.reconcile import recover_original

__all__ = [
    "ApplyReport",
    "FileReport",
    "PatchOutcome",
    "PatchStatus",
    "Plan",
    "apply_patches",
    "combined_diff",
    "plan_patches",
    "write_atomic",
]

PatchStatus = Literal["applied", "stale", "invalid", "conflict", "failed"]
_RESULT_STATUS = {
    "applied": "applied",
    "stale": "stale",
    "invalid": "rejected",
    "conflict": "rejected",
    "failed": "proposed",
}
_TEMP_MARK = ".sa-apply-"
"""Part of the name of a temporary file :func:`write_atomic` writes next to its target."""
_ALREADY_APPLIED = "already in the file (an earlier apply was interrupted after writing it)"


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

    def result_statuses(self) -> dict[str, str]:
        """Run id -> the store's result status (``applied``, ``stale``, ``rejected``, or ``proposed``
        for a patch whose write failed: it is tried again by the next apply)."""
        return {o.run_id: _RESULT_STATUS[o.status] for o in self.outcomes}


@dataclass(frozen=True, slots=True)
class ApplyReport:
    """Per-file outcome of :func:`apply_patches`."""

    files: tuple[FileReport, ...]

    def run_ids(self, status: PatchStatus) -> list[str]:
        """Runs whose patch ended in ``status``, over all files."""
        return [run_id for report in self.files for run_id in report.run_ids(status)]

    def result_statuses(self) -> dict[str, str]:
        """Run id -> the store's result status, over all files (see :meth:`FileReport.result_statuses`)."""
        return {run_id: status for f in self.files for run_id, status in f.result_statuses().items()}


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably, keeping its permission bits."""
    mode = stat.S_IMODE(path.stat().st_mode)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}{_TEMP_MARK}", suffix=".tmp")
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
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable before the caller records it."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - a platform without directory handles
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - a file system that cannot sync directories
        pass
    finally:
        os.close(fd)


def _remove_leftovers(target: Path) -> None:
    """Temporary files of ``target`` that a killed apply left before its rename."""
    for leftover in target.parent.glob(f".{glob.escape(target.name)}{_TEMP_MARK}*.tmp"):
        leftover.unlink(missing_ok=True)


@contextlib.contextmanager
def _root_lock(root: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``root`` (POSIX), so two applies never interleave."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no lock
        yield
        return
    try:
        fd = os.open(root, os.O_RDONLY)
    except OSError as exc:
        raise PatchError(f"the codebase root {root} cannot be opened: {exc}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PatchError(f"another apply is running under {root}; wait for it to finish") from None
        yield
    finally:
        os.close(fd)


def _parse_error(path: str, text: str) -> str | None:
    if not path.endswith((".py", ".pyi")):
        return None
    try:
        syntax.parse(text)
    except (SyntaxError, ValueError) as exc:
        return f"the result does not parse: {exc}"
    return None


def _check(
    path: str, original: list[str], patch: ProposedPatch, accepted: list[list[Edit]]
) -> PatchOutcome | list[Edit]:
    """The patch's edits when it can join the accepted ones, else why not."""
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


@dataclass(slots=True)
class Plan:
    """What applying some patches (all made against ``original``) does, before any write."""

    refused: dict[str, PatchOutcome] = field(default_factory=dict)
    accepted: list[str] = field(default_factory=list)
    """Run ids of the patches the new text holds."""
    text: str | None = None
    """The new file text; None when no patch is accepted."""


def plan_patches(path: str, original: list[str], patches: list[ProposedPatch]) -> Plan:
    """What applying ``patches`` (all made against ``original``, the lines of ``path``) together
    gives, before anything is written: the new text and which patches it holds, or why not."""
    plan = Plan()
    accepted: dict[str, list[Edit]] = {}
    for patch in patches:
        checked = _check(path, original, patch, list(accepted.values()))
        if isinstance(checked, PatchOutcome):
            plan.refused[patch.run_id] = checked
        else:
            accepted[patch.run_id] = checked
    if not accepted:
        return plan
    text = apply_edits(original, list(accepted.values()))
    error = _parse_error(path, text)
    if error is not None:
        detail = f"together with the other patches of the file, {error}"
        plan.refused.update({run_id: PatchOutcome(run_id, "invalid", detail) for run_id in accepted})
        return plan
    plan.accepted, plan.text = list(accepted), text
    return plan


def _write(target: Path, current_hash: str, text: str) -> tuple[PatchStatus, str]:
    """Replace the file with ``text`` unless it changed meanwhile or cannot be written."""
    if source_hash(target.read_bytes()) != current_hash:
        return "stale", "the file changed while the patches were applied"
    mode = stat.S_IMODE(target.stat().st_mode)
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        return "failed", f"the file is read-only (mode {mode:04o}); make it writable and apply again"
    try:
        write_atomic(target, text.encode("utf-8"))
    except OSError as exc:
        return "failed", f"the file could not be written (left as it was; apply again): {exc}"
    return "applied", ""


def _reconcile(path: str, lines: list[str], patches: list[ProposedPatch]) -> dict[str, PatchOutcome]:
    """Outcomes of patches made against another content: applied when the file holds them."""
    groups: dict[str, list[ProposedPatch]] = {}
    for patch in patches:
        groups.setdefault(patch.original_hash, []).append(patch)
    outcomes: dict[str, PatchOutcome] = {}
    for original_hash, group in groups.items():
        original = recover_original(path, lines, original_hash, group)
        plan = plan_patches(path, original, group) if original is not None else None
        if plan is None or plan.text != "".join(lines):
            detail = "the file changed since the job read it"
            outcomes.update({p.run_id: PatchOutcome(p.run_id, "stale", detail) for p in group})
            continue
        outcomes.update(plan.refused)
        outcomes.update(
            {run_id: PatchOutcome(run_id, "applied", _ALREADY_APPLIED) for run_id in plan.accepted}
        )
    return outcomes


def _apply_file(root: Path, path: str, patches: list[ProposedPatch]) -> FileReport:
    target = (root / path).resolve()
    problem = None
    if not target.is_relative_to(root.resolve()):
        problem = "the path is outside the codebase root"
    elif not target.is_file():
        problem = "no such file"
    if problem is not None:
        return FileReport(path, False, tuple(PatchOutcome(p.run_id, "invalid", problem) for p in patches))
    _remove_leftovers(target)
    data = target.read_bytes()
    current_hash = source_hash(data)
    try:
        lines = split_keepends(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return FileReport(path, False, tuple(PatchOutcome(p.run_id, "invalid", str(exc)) for p in patches))
    fresh = [p for p in patches if p.original_hash == current_hash]
    outcomes = _reconcile(path, lines, [p for p in patches if p.original_hash != current_hash])
    plan = plan_patches(path, lines, fresh)
    outcomes.update(plan.refused)
    written = False
    if plan.text is not None:
        status, detail = _write(target, current_hash, plan.text)
        written = status == "applied"
        outcomes.update({run_id: PatchOutcome(run_id, status, detail) for run_id in plan.accepted})
    return FileReport(path, written, tuple(outcomes[p.run_id] for p in patches))


def combined_diff(root: Path, path: str, patches: list[ProposedPatch]) -> str | None:
    """One unified diff of ``path`` holding all ``patches`` (as ``git apply`` wants a file's
    changes: separate diffs of one file fail after the first), made as :func:`apply_patches`
    would apply them; None when the file is not as the patches read it or they do not apply
    together. Nothing is written."""
    target = (root / path).resolve()
    if not target.is_relative_to(root.resolve()) or not target.is_file():
        return None
    data = target.read_bytes()
    if any(patch.original_hash != source_hash(data) for patch in patches):
        return None
    try:
        original = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    plan = plan_patches(path, split_keepends(original), patches)
    if plan.refused or plan.text is None:
        return None
    return make_diff(path, original, plan.text)


def apply_patches(
    root: Path, patches: Iterable[ProposedPatch], *, record: Callable[[FileReport], object] | None = None
) -> ApplyReport:
    """Apply ``patches`` under ``root``; patches of one file are applied together, in the given order.

    A patch with no diff (the result of a job that ended changing nothing, stored with its
    summary) has nothing to apply, and no outcome. ``record(report)`` is called after each
    file, before the next one is touched: the place to store its outcome, so that an apply
    killed at any point loses nothing (see the module doc).
    """
    by_file: dict[str, list[ProposedPatch]] = {}
    for patch in patches:
        if patch.diff:
            by_file.setdefault(patch.target_path, []).append(patch)
    reports: list[FileReport] = []
    with _root_lock(root):
        for path, items in sorted(by_file.items()):
            report = _apply_file(root, path, items)
            if record is not None:
                record(report)
            reports.append(report)
    return ApplyReport(tuple(reports))
