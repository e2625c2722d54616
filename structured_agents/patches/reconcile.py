"""Recognise a file that already holds its patches (an apply interrupted after the write).

``sa apply`` replaces a file, then records its patches as applied. Killed between the two, the
store still says *proposed* while the file holds the patched text, whose hash is no longer the
``original_hash`` of the patches. The next apply must not call them stale: it reconstructs the
original by reverting the patches' edits from the current text, accepts the reconstruction
only when its SHA-256 is the patches' ``original_hash`` (the content the jobs read, exactly);
the apply then replays itself on it in memory, and when that replay writes exactly the current
text, the file holds the patches: the replay's outcomes are the ones the interrupted apply
would have recorded.

Which patches were written is not stored anywhere; the search starts from every patch of the
group (the usual case: all of them were) and drops a patch whose edit is not in the file, or
that overlaps one kept before it, until the reverted text hashes right or nothing is left. A
wrong guess can only fail to reconcile (the patches are then stale, as before); it can never
mark a patch applied that the file does not hold, since the hash and the replay check that.
The search drops one patch per round and reverts at most once per round: quadratic in the
patches of one file, which are few.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from structured_agents.jobs.ids import source_hash
from structured_agents.patches.change import ProposedPatch
from structured_agents.patches.diff import Edit, apply_edits, hunk_edits, parse_diff
from structured_agents.patches.errors import PatchError

__all__ = ["recover_original"]


@dataclass(frozen=True, slots=True)
class _Candidate:
    run_id: str
    edits: tuple[Edit, ...]


def _revert(current: Sequence[str], edits: Sequence[Edit]) -> list[str] | Edit:
    """The lines that ``edits`` (non-overlapping) turned into ``current``, or the first edit
    whose new lines ``current`` does not hold where it should."""
    out: list[str] = []
    cursor, shift = 0, 0  # cursor in ``current``; current index = original index + shift
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        at = edit.start + shift
        if at < cursor or list(current[at : at + len(edit.lines)]) != list(edit.lines):
            return edit
        out += current[cursor:at]
        out += edit.old
        cursor = at + len(edit.lines)
        shift += len(edit.lines) - (edit.end - edit.start)
    out += current[cursor:]
    return out


def _overlaps(edits: Sequence[Edit], kept: Sequence[Edit]) -> bool:
    try:
        apply_edits((), [kept, edits])  # the apply's own overlap rule; it reads no line here
    except PatchError:
        return True
    return False


def _candidates(path: str, patches: Sequence[ProposedPatch]) -> list[_Candidate]:
    out: list[_Candidate] = []
    for patch in patches:
        try:
            parsed = parse_diff(patch.diff)
        except PatchError:
            continue
        if parsed.old_path == path:
            out.append(_Candidate(patch.run_id, tuple(hunk_edits(parsed))))
    return out


def recover_original(
    path: str, current: Sequence[str], original_hash: str, patches: Sequence[ProposedPatch]
) -> list[str] | None:
    """The lines ``patches`` (all made against ``original_hash``) were made against, recovered
    from ``current`` by reverting the edits it holds; None when no such revert hashes right.

    The caller still replays the apply on the result and compares with ``current``: the revert
    proves what the original was, not which patches an apply would have accepted.
    """
    candidates = _candidates(path, patches)
    owner = {id(edit): candidate.run_id for candidate in candidates for edit in candidate.edits}
    dropped: set[str] = set()
    while True:
        kept: list[Edit] = []
        for candidate in candidates:
            if candidate.run_id not in dropped and not _overlaps(candidate.edits, kept):
                kept.extend(candidate.edits)
        if not kept:
            return None
        original = _revert(current, kept)
        if isinstance(original, Edit):
            dropped.add(owner[id(original)])
            continue
        return original if source_hash("".join(original)) == original_hash else None
