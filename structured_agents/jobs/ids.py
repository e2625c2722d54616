"""Stable ids: the same work on the same source gets the same id on every run.

A job id is the SHA-256 of the job kind, the target's path relative to the codebase root
(POSIX separators), its qualified name and its exact source segment, each followed by a NUL
byte. Re-discovering an unchanged codebase yields the same ids, so the store can skip jobs
that already succeeded; editing a target's source changes its id. The kind is part of the id
so that two tasks over the same function (docstring, lint...) are distinct jobs.

A bundle's discovery gives each task job an id of its own (:func:`bundle_job_id`): two bundles,
or two versions of one, doing the same task over the same target are distinct jobs with
results of their own (``sa run docstring_calls`` after ``sa run docstring`` on the same store
does its work, where it once skipped every job as already done), while running one bundle
again still finds what it already did. The codebase's root is part of it too: a second
checkout of the same code is a codebase of its own, whose batch does its own work and proposes
patches to its own files (it once skipped every job as done elsewhere, and its batch stayed
running with no run).
"""

from __future__ import annotations

import hashlib
from pathlib import PurePath

__all__ = ["bundle_job_id", "job_id", "relative_posix", "source_hash"]


def source_hash(source: str | bytes) -> str:
    """SHA-256 hex digest of a file's content (text is hashed as UTF-8)."""
    data = source.encode("utf-8") if isinstance(source, str) else source
    return hashlib.sha256(data).hexdigest()


def relative_posix(path: PurePath | str) -> str:
    """A relative path with ``/`` separators, as ids and the store record it."""
    return (path if isinstance(path, PurePath) else PurePath(path)).as_posix()


def job_id(kind: str, path: PurePath | str, qualname: str, segment: str) -> str:
    """The stable id of one job (64 hex characters)."""
    digest = hashlib.sha256()
    for part in (kind, relative_posix(path), qualname, segment):
        digest.update(part.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()


def bundle_job_id(bundle: str, version: str, task_job_id: str, root: str = "") -> str:
    """The id of the task job ``task_job_id`` as version ``version`` of bundle ``bundle`` runs
    it over the codebase at ``root`` (64 hex characters)."""
    digest = hashlib.sha256()
    for part in ("bundle", bundle, version, root, task_job_id):
        digest.update(part.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()
