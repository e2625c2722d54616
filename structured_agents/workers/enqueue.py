"""Enqueue: jobs from a codebase or a JSON Lines file, validated, bulk-inserted, dispatched.

Jobs are checked before anything is written: every job must have the fields of a
:class:`~structured_agents.jobs.JobSpec` with the right types, and its inputs must render the
bundle's templates (undefined names are errors; context providers' values are placeholders),
rendered once for each shape of inputs (keys, types, empty or not), not once per job.
One bad job refuses the whole enqueue with a :class:`~structured_agents.workers.errors.JobInputError`
naming each bad job. Accepted jobs are inserted in bulk (``Store.add_jobs``: ``COPY`` on
PostgreSQL) and one ``dispatch`` message sends their starts (in chunks, see
:func:`~structured_agents.workers.dispatch.dispatch_batch`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from celery import Celery
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from structured_agents.bundles import Bundle, BundleError, load_bundle
from structured_agents.jobs import JobSpec, job_id
from structured_agents.store import Store, StoreError
from structured_agents.tasks import check_task_options
from structured_agents.workers.constants import DISPATCH
from structured_agents.workers.dispatch import send
from structured_agents.workers.errors import JobInputError

__all__ = ["Enqueued", "JobInput", "enqueue", "parse_jobs", "read_jobs_file"]

MAX_REPORTED = 20
"""Problems listed in a :class:`JobInputError` before the rest are only counted."""


class JobInput(BaseModel):
    """One job as a client submits it (JSON Lines file, ``POST /batches``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str = Field(min_length=1, max_length=64)
    """The task (``docstring``, ``lint`` or a bundle's own kind)."""
    path: str = Field(min_length=1)
    """Target file, relative to the batch's root."""
    qualname: str = "<module>"
    """Qualified name of the target."""
    inputs: dict[str, Any] = {}
    """Variables of the bundle's user template."""
    source_hash: str = Field(default="", max_length=64)
    """SHA-256 of the target file as read (empty when the job reads no file)."""
    job_id: str | None = Field(default=None, min_length=1, max_length=64)
    """Stable id; by default derived from kind, path, qualname and inputs."""

    def to_spec(self) -> JobSpec:
        """The job as a :class:`JobSpec`."""
        segment = json.dumps(self.inputs, sort_keys=True, default=str)
        return JobSpec(
            job_id=self.job_id or job_id(self.kind, self.path, self.qualname, segment),
            kind=self.kind,
            path=self.path,
            qualname=self.qualname,
            source_hash=self.source_hash,
            inputs=dict(self.inputs),
        )


@dataclass(frozen=True, slots=True)
class Enqueued:
    """What an enqueue did."""

    batch_id: str
    queued: int
    """Jobs queued in the batch (new, or failed before and queued again)."""
    skipped: int
    """Jobs already succeeded, queued or running (left alone)."""


def _refuse(problems: list[str], total: int) -> JobInputError:
    shown = "\n".join(problems[:MAX_REPORTED])
    more = f"\n... and {len(problems) - MAX_REPORTED} more" if len(problems) > MAX_REPORTED else ""
    return JobInputError(f"{len(problems)} of {total} jobs are malformed:\n{shown}{more}")


def parse_jobs(items: Iterable[Mapping[str, Any]], where: str = "job") -> list[JobSpec]:
    """Validate raw job objects; :class:`JobInputError` names every malformed one."""
    jobs: list[JobSpec] = []
    problems: list[str] = []
    total = 0
    for number, item in enumerate(items, 1):
        total += 1
        try:
            jobs.append(JobInput.model_validate(item).to_spec())
        except ValidationError as exc:
            for err in exc.errors():
                field = ".".join(str(part) for part in err["loc"]) or "(job)"
                problems.append(f"{where} {number}: {field}: {err['msg']}")
    if problems:
        raise _refuse(problems, total)
    return jobs


def read_jobs_file(path: Path) -> list[JobSpec]:
    """The jobs of a JSON Lines file (one object per line; blank lines skipped)."""
    items: list[Any] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise JobInputError(f"cannot read jobs file {path}: {exc}") from exc
    for number, line in enumerate(lines, 1):
        if line.strip():
            try:
                items.append(json.loads(line))
            except ValueError as exc:
                raise JobInputError(f"{path}:{number}: not a JSON object: {exc}") from exc
    return parse_jobs(items, where=f"{path} job")


_SCALARS = (str, int, float, type(None))


def _shape(value: Any) -> Hashable:
    """What rendering a template can depend on besides the text of ``value``: the keys of a
    mapping (and their values' shapes), the shapes of a list's items, each value's type, and
    whether it is empty (an ``{% if %}`` on it)."""
    if isinstance(value, _SCALARS):  # most inputs: checked first, without the ABC machinery
        return (type(value), bool(value))
    if isinstance(value, Mapping):
        return ("mapping", tuple(sorted((str(key), _shape(item)) for key, item in value.items())))
    if isinstance(value, list | tuple):
        return ("list", bool(value), frozenset(map(_shape, value)))
    return (type(value), bool(value))


def _check_templates(bundle: Bundle, jobs: list[JobSpec]) -> None:
    """Render the templates for one job of each shape of inputs (see :func:`_shape`): jobs
    found by the same task share one, so ten thousand jobs cost a render or two. When that
    render fails, every job of the shape is rendered, so each bad job is named."""
    context_names = list(bundle.manifest.initial_context.context_providers)
    shapes: dict[Hashable, list[tuple[int, JobSpec]]] = {}
    for number, job in enumerate(jobs, 1):
        shapes.setdefault(_shape(job.inputs), []).append((number, job))
    problems: list[tuple[int, str]] = []
    for first, group in enumerate(shapes.values()):
        checked = _check_jobs(bundle, context_names, group[:1], every=first == 0)
        if checked:
            checked = _check_jobs(bundle, context_names, group, every=first == 0)
        problems += checked
    if problems:
        raise _refuse([problem for _, problem in sorted(problems)], len(jobs))


def _check_jobs(
    bundle: Bundle, context_names: list[str], jobs: list[tuple[int, JobSpec]], *, every: bool
) -> list[tuple[int, str]]:
    problems = []
    installed = f"{bundle.directory.resolve()}/"
    for number, job in jobs:
        try:
            bundle.templates.check(job.inputs, context_names, every=every)
        except BundleError as exc:  # the caller's inputs are at fault: name the template, not where it lives
            where = str(exc).replace(installed, f"{bundle.directory.name}/")
            problems.append((number, f"job {number} ({job.path} {job.qualname}): inputs: {where}"))
    return problems


def enqueue(
    store: Store,
    app: Celery,
    bundle: str | Path,
    root: Path,
    jobs: list[JobSpec] | None = None,
    *,
    task_options: Mapping[str, Any] | None = None,
) -> Enqueued:
    """Create a batch of ``bundle`` (a path or a name) over ``root``: ``jobs``, or those its task
    discovers under ``root``. ``task_options`` (the lint task's ``check``...) are stored with
    the batch; only the operator's command line gives them, never a network caller."""
    loaded = load_bundle(bundle)
    try:
        check_task_options(loaded.manifest.task, task_options or {})
        specs = loaded.discover_jobs(root, options=task_options) if jobs is None else jobs
        if not specs:
            raise JobInputError(f"no jobs to enqueue under {root}")
        _check_templates(loaded, specs)
        manifest = loaded.manifest
        options = {**(task_options or {}), "bundle": str(loaded.directory.resolve())}
    finally:
        loaded.close()
    batch = store.create_batch(manifest.name, manifest.version, str(root.resolve()), options)
    try:
        result = store.add_jobs(batch.id, specs)
        send(app, DISPATCH, (batch.id,))
    except BaseException:  # the broker (or the store) refused: leave nothing a retry would skip
        with contextlib.suppress(StoreError):
            store.discard_batch(batch.id)
        raise
    return Enqueued(batch.id, len(result.queued), len(result.skipped))
