"""What happens to a batch as a whole, the same under both drivers: its jobs checked against
its bundle, the batch created (or, for the embedded runner, an unfinished one resumed) with its
jobs, and cancelled.

``sa run`` (:class:`~structured_agents.runner.EmbeddedRunner`) and ``sa enqueue`` / ``POST
/batches`` (:func:`structured_agents.workers.enqueue`) both go through :func:`prepare_batch`
and then :func:`open_batch`, so a batch records the same options and refuses the same jobs whichever
driver runs it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from structured_agents.bundles import Bundle, BundleError
from structured_agents.jobs import JobSpec
from structured_agents.jobs.inputs import refused
from structured_agents.store import BatchRecord, EnqueueResult, Store, StoreError
from structured_agents.tasks import check_task_options

__all__ = ["OpenedBatch", "PreparedBatch", "cancel_batch", "check_inputs", "open_batch", "prepare_batch"]


@dataclass(frozen=True, slots=True)
class PreparedBatch:
    """A batch checked and ready to store: its bundle, root, jobs and options."""

    bundle: Bundle
    root: Path
    """The codebase root, resolved."""
    jobs: list[JobSpec]
    options: dict[str, Any]
    """The task options, ``bundle`` (the bundle directory, resolved) and the driver's own."""


@dataclass(frozen=True, slots=True)
class OpenedBatch:
    """A batch as stored with its jobs."""

    batch: BatchRecord
    added: EnqueueResult
    resumed: bool
    """Whether an unfinished batch of the same work was taken up again."""


def prepare_batch(
    bundle: Bundle,
    root: Path,
    jobs: list[JobSpec] | None = None,
    *,
    task_options: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    extra: Mapping[str, Any] | None = None,
) -> PreparedBatch:
    """Check a batch before anything is stored: the task's options, then ``jobs`` (or those
    the bundle's task discovers under ``root``) against the bundle's templates. ``extra`` are
    options the driver records besides (the engine and model of ``sa run``)."""
    options = dict(task_options or {})
    check_task_options(bundle.manifest.task, options)
    root = root.resolve()
    found = bundle.discover_jobs(root, overwrite=overwrite, options=options) if jobs is None else jobs
    if found:
        check_inputs(bundle, found)
    recorded = {**options, "bundle": str(bundle.directory.resolve()), **dict(extra or {})}
    return PreparedBatch(bundle, root, found, recorded)


def open_batch(store: Store, prepared: PreparedBatch, *, resume: bool = False) -> OpenedBatch:
    """Store the batch and queue its jobs. With ``resume``, an unfinished batch of the same
    bundle, root and options is taken up instead of a new one: its runs left running by a
    killed process are queued again first."""
    manifest = prepared.bundle.manifest
    key = (manifest.name, manifest.version, str(prepared.root), prepared.options)
    found = _unfinished(store, key) if resume else None
    if found is not None:
        return OpenedBatch(found, store.add_jobs(found.id, prepared.jobs), resumed=True)
    batch = store.create_batch(manifest.name, manifest.version, str(prepared.root), prepared.options)
    try:
        added = store.add_jobs(batch.id, prepared.jobs)
    except BaseException:  # leave no empty batch behind, so a retry of the same work skips nothing
        with contextlib.suppress(StoreError):
            store.discard_batch(batch.id)
        raise
    return OpenedBatch(batch, added, resumed=False)


def _unfinished(store: Store, key: tuple[str, str, str, dict[str, Any]]) -> BatchRecord | None:
    for batch in store.list_batches():
        same = (batch.bundle_name, batch.bundle_version, batch.root_path, batch.options) == key
        if same and batch.status in ("queued", "running"):
            for run in store.list_runs(batch.id, "running"):  # left by a killed process
                store.requeue(run.id, "interrupted")
            return batch
    return None


def cancel_batch(store: Store, batch_id: str) -> int:
    """Cancel a batch: queued runs at once, running ones at their next step; returns how many.

    A running run's next step finds it finished and does nothing (a Celery step, or the
    embedded runner's), so nothing a cancel leaves behind is ever applied.
    """
    cancelled = store.cancel_batch(batch_id)
    for run in store.list_runs(batch_id, "running"):
        cancelled += store.finish(run.id, "cancelled", "cancelled with its batch")
    return cancelled


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


def check_inputs(bundle: Bundle, jobs: list[JobSpec]) -> None:
    """Refuse jobs whose inputs do not render the bundle's templates (undefined names are
    errors; context providers' values are placeholders): one
    :class:`~structured_agents.jobs.JobInputError` names each bad job.

    The templates are rendered for one job of each shape of inputs (see :func:`_shape`): jobs
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
        raise refused([problem for _, problem in sorted(problems)], len(jobs))


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
