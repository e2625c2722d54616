"""Accepted patches as a branch to review: one commit on a new branch, the working tree untouched.

:func:`commit_to_branch` writes a batch's patches into a new git branch of the codebase, made
from ``HEAD`` with git's plumbing only (a private index file, ``hash-object``, ``write-tree``,
``commit-tree``, ``update-ref``): the working tree, the index and the current branch are never
read for content nor written, so uncommitted work (a dirty tree, staged changes) stays exactly
as it was. Each patch applies to its file as ``HEAD`` holds it: a patch whose file at ``HEAD``
is not the content its job read (``original_hash``; the job read uncommitted edits, or the
file moved on since) is *stale* and left out, as :func:`~structured_agents.patches.apply_patches`
would leave it; a patch that does not apply, parse or join the others is left out with its
reason. Refused, with a clear message, when the root is not in a git repository, ``HEAD`` has
no commit yet, the branch name is not a valid one or already exists.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from structured_agents.jobs.ids import source_hash
from structured_agents.patches.apply import PatchOutcome, plan_patches
from structured_agents.patches.change import ProposedPatch
from structured_agents.patches.diff import split_keepends
from structured_agents.patches.errors import PatchError

__all__ = ["BranchReport", "commit_to_branch"]

_IDENTITY = {
    "GIT_AUTHOR_NAME": "structured-agents",
    "GIT_AUTHOR_EMAIL": "structured-agents@localhost",
    "GIT_COMMITTER_NAME": "structured-agents",
    "GIT_COMMITTER_EMAIL": "structured-agents@localhost",
}
"""Who the commit is by, so a repository without a configured identity still gets its branch."""


@dataclass(frozen=True, slots=True)
class BranchReport:
    """What :func:`commit_to_branch` did."""

    branch: str
    commit: str
    """The new commit's id."""
    applied: tuple[str, ...]
    """Run ids of the patches the commit holds."""
    left: tuple[PatchOutcome, ...] = field(default_factory=tuple)
    """The patches left out, with why."""
    files: int = 0
    """Files the commit changes."""


def _git(repo: Path, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> str:
    """Git's standard output for ``args`` in ``repo``; PatchError with git's message on failure."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=repo, input=stdin, capture_output=True, env={**os.environ, **(env or {})}
        )
    except OSError as exc:
        raise PatchError(f"could not run git: {exc}") from None
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise PatchError(f"git {args[0]} failed: {message[-1] if message else done.returncode}")
    return done.stdout.decode(errors="replace").strip()


def _repository(root: Path) -> tuple[Path, str]:
    """The repository's top level and ``root``'s path inside it (``""`` at the top)."""
    try:
        top = Path(_git(root, "rev-parse", "--show-toplevel")).resolve()
    except PatchError:
        raise PatchError(f"{root} is not in a git repository: --branch needs one") from None
    inside = root.resolve().relative_to(top).as_posix()
    return top, "" if inside == "." else f"{inside}/"


def _check_branch(top: Path, name: str) -> None:
    try:
        _git(top, "check-ref-format", "--branch", name)
    except PatchError:
        raise PatchError(f"{name!r} is not a valid branch name") from None
    exists = subprocess.run(
        ["git", "show-ref", "--verify", "--quiet", f"refs/heads/{name}"], cwd=top, capture_output=True
    )
    if exists.returncode == 0:
        raise PatchError(f"branch {name!r} already exists: choose another name, or delete it first")


def _head(top: Path) -> str:
    try:
        return _git(top, "rev-parse", "--verify", "HEAD^{commit}")
    except PatchError:
        raise PatchError("the repository has no commit yet: commit once, then ask for a branch") from None


def _blob(top: Path, head: str, path: str) -> tuple[str, bytes] | None:
    """The mode and content of ``path`` at ``head``, or None when it has no such file."""
    listed = _git(top, "ls-tree", head, "--", path)
    if not listed:
        return None
    mode, kind, sha = listed.split("\t", 1)[0].split()
    if kind != "blob":
        return None
    content = subprocess.run(["git", "cat-file", "blob", sha], cwd=top, capture_output=True, check=True)
    return mode, content.stdout


def commit_to_branch(root: Path, name: str, patches: Iterable[ProposedPatch], message: str) -> BranchReport:
    """Commit ``patches`` (paths relative to ``root``) on a new branch ``name`` made from
    ``HEAD``, with ``message``; see the module docstring. PatchError when the repository
    state makes it unsafe, or when no patch applies (no empty commit is made)."""
    top, prefix = _repository(root)
    _check_branch(top, name)
    head = _head(top)
    by_file: dict[str, list[ProposedPatch]] = {}
    for patch in patches:
        by_file.setdefault(patch.target_path, []).append(patch)
    left: list[PatchOutcome] = []
    applied: list[str] = []
    with tempfile.TemporaryDirectory(prefix="sa-branch-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index"), **_IDENTITY}
        _git(top, "read-tree", head, env=env)
        changed = 0
        for path, group in sorted(by_file.items()):
            outcomes, new_text, mode = _file(top, head, prefix + path, path, group)
            left += outcomes
            if new_text is None:
                continue
            sha = _git(top, "hash-object", "-w", "--stdin", stdin=new_text.encode("utf-8"))
            _git(top, "update-index", "--cacheinfo", f"{mode},{sha},{prefix}{path}", env=env)
            applied += [p.run_id for p in group if p.run_id not in {o.run_id for o in outcomes}]
            changed += 1
        if not applied:
            raise PatchError("no patch applies to the files as HEAD holds them: no branch was made")
        tree = _git(top, "write-tree", env=env)
        commit = _git(top, "commit-tree", tree, "-p", head, "-F", "-", stdin=message.encode("utf-8"), env=env)
    _git(top, "update-ref", f"refs/heads/{name}", commit, "0" * 40)  # fails if it appeared meanwhile
    return BranchReport(name, commit, tuple(applied), tuple(left), changed)


def _file(
    top: Path, head: str, in_repo: str, path: str, patches: Sequence[ProposedPatch]
) -> tuple[list[PatchOutcome], str | None, str]:
    """The outcomes of the patches of one file left out, its new text (None: none applies) and
    its mode, applied to the file as ``head`` holds it."""
    found = _blob(top, head, in_repo)
    if found is None:
        return [PatchOutcome(p.run_id, "invalid", "no such file at HEAD") for p in patches], None, ""
    mode, data = found
    current = source_hash(data)
    stale = [p for p in patches if p.original_hash != current]
    outcomes = [
        PatchOutcome(p.run_id, "stale", "the file at HEAD is not what the job read (uncommitted, or changed)")
        for p in stale
    ]
    fresh = [p for p in patches if p.original_hash == current]
    if not fresh:
        return outcomes, None, mode
    try:
        lines = split_keepends(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return outcomes + [PatchOutcome(p.run_id, "invalid", str(exc)) for p in fresh], None, mode
    plan = plan_patches(path, lines, fresh)
    outcomes += plan.refused.values()
    return outcomes, plan.text, mode
