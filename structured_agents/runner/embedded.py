"""The embedded runner: a bundle over a whole codebase on one machine, no services needed.

::

    bundle = load_bundle("docstring")
    jobs = discover_jobs(bundle, root)
    with Store(url) as store:
        summary = asyncio.run(EmbeddedRunner(bundle, engine, store, concurrency=8).run(root, jobs))

``concurrency`` agent loops run at once, all on one kernel whose engine is a
:class:`~structured_agents.engines.batching.BatchingEngine`, so their model turns are decoded
together. Every job is a run in the store: claimed, run, its events written
(:class:`StoreRecorder`), its outcome stored as a result with a unified diff (never applied to
the user's files here), and finished as succeeded or failed.

Resuming: a batch is reused while it is unfinished (same bundle, version, root and options),
and jobs that already succeeded, in any batch, are skipped. Cancelling :meth:`run` (Ctrl-C)
puts each running job back in the queue before its task ends, writes nothing of it but its
events, and leaves the batch queued; running again picks up where it stopped. A batch is
meant to be run by one process at a time: a run left ``running`` by a killed process is
queued again when its batch is resumed.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from structured_agents.bundles import Bundle
from structured_agents.engines.batching import BatchingEngine
from structured_agents.errors import StructuredAgentsError
from structured_agents.jobs import JobSpec, discover_docstring_jobs, discover_lint_jobs
from structured_agents.kernel import AgentKernel
from structured_agents.kernel.engine import Engine
from structured_agents.observer.protocol import Observer
from structured_agents.runner.progress import RunProgress
from structured_agents.runner.recorder import StoreRecorder
from structured_agents.runner.tasks import Outcome, handler_for, run_handler
from structured_agents.store import BatchRecord, RunRecord, Store

__all__ = ["EmbeddedRunner", "RunSummary", "discover_jobs"]


def discover_jobs(bundle: Bundle, root: Path, *, overwrite: bool = False) -> list[JobSpec]:
    """The jobs of ``bundle``'s task over the codebase at ``root``."""
    task = bundle.manifest.task
    if task == "docstring":
        return discover_docstring_jobs(root, include_documented=overwrite)
    if task == "lint":
        return discover_lint_jobs(root)
    raise StructuredAgentsError(
        f"bundle {bundle.manifest.name!r} declares no task (docstring, lint): it cannot run over a codebase"
    )


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What one :meth:`EmbeddedRunner.run` did."""

    batch_id: str
    """The batch the jobs ran in (new, or resumed)."""
    discovered: int
    """Jobs found in the codebase."""
    skipped: int
    """Discovered jobs this run did not queue: already succeeded (or queued in another batch)."""
    succeeded: int
    """Jobs that succeeded in this run."""
    failed: int
    """Jobs that failed in this run."""
    completion_tokens: int
    """Tokens generated in this run."""
    elapsed_s: float
    """Wall time of the run."""
    batch_sizes: tuple[int, ...] = ()
    """Size of every batch the engine decoded."""

    @property
    def ran(self) -> int:
        """Jobs that ran to an end in this run."""
        return self.succeeded + self.failed


class EmbeddedRunner:
    """Runs a bundle's jobs with ``concurrency`` agent loops sharing one batching engine.

    ``engine`` may be a function returning the engine: it is called only when there is work.
    An engine that is not a ``BatchingEngine`` is wrapped in one (batches of ``concurrency``,
    waiting ``batch_wait_s`` for more requests) and closed at the end.
    """

    def __init__(
        self,
        bundle: Bundle,
        engine: Engine | Callable[[], Engine],
        store: Store,
        *,
        concurrency: int = 8,
        progress: RunProgress | None = None,
        observers: Iterable[Observer] = (),
        batch_wait_s: float = 0.2,
    ) -> None:
        if concurrency < 1:
            raise StructuredAgentsError(f"EmbeddedRunner.concurrency must be >= 1, got {concurrency}")
        self.bundle = bundle
        self._engine = engine
        """The engine, or a function building it when there is work (a model loads slowly)."""
        self.store = store
        self.concurrency = concurrency
        self.progress = progress
        self.recorder = StoreRecorder(store)
        self.handler = handler_for(bundle.manifest.task)
        self._observers: list[Observer] = [self.recorder, *([progress] if progress else []), *observers]
        self._batch_wait_s = batch_wait_s
        self._tokens = 0

    def _batch(self, root: Path, options: dict[str, object]) -> BatchRecord:
        """The unfinished batch of the same work to resume, or a new one."""
        manifest = self.bundle.manifest
        for batch in self.store.list_batches():
            same = (batch.bundle_name, batch.bundle_version, batch.root_path, batch.options) == (
                manifest.name,
                manifest.version,
                str(root),
                options,
            )
            if same and batch.status in ("queued", "running"):
                for run in self.store.list_runs(batch.id, "running"):  # left by a killed process
                    self.store.requeue(run.id, "interrupted")
                return batch
        return self.store.create_batch(manifest.name, manifest.version, str(root), options)

    async def run(self, root: Path, jobs: list[JobSpec], *, overwrite: bool = False) -> RunSummary:
        """Queue ``jobs`` (found under ``root``) and run every queued job of the batch."""
        started = time.monotonic()
        self._tokens = 0
        root = root.resolve()
        options: dict[str, object] = {"bundle": str(self.bundle.path), "overwrite": overwrite}
        batch = self._batch(root, options)
        self.store.add_jobs(batch.id, jobs)
        queued = {run.id for run in self.store.list_runs(batch.id, "queued")}
        self.store.set_batch_status(batch.id, "running")
        if not queued:
            self.store.set_batch_status(batch.id, "finished")
            return RunSummary(batch.id, len(jobs), len(jobs), 0, 0, 0, time.monotonic() - started)
        inner = self._engine if isinstance(self._engine, Engine) else self._engine()
        if self.progress is not None:
            self.progress.start(len(queued))
        batching = inner if isinstance(inner, BatchingEngine) else None
        engine = batching or BatchingEngine(
            inner, max_batch_size=self.concurrency, max_wait_s=self._batch_wait_s
        )
        sizes_before = len(engine.batch_sizes)
        kernel = self.bundle.kernel(engine, observers=self._observers)
        outcomes: list[bool] = []
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(min(self.concurrency, len(queued))):
                    group.create_task(self._worker(kernel, batch.id, root, outcomes))
        except BaseException as exc:
            self.store.set_batch_status(batch.id, "queued")  # resumable
            if batching is None:  # the batch being decoded finishes in the background
                threading.Thread(target=engine.close, daemon=True).start()
            if isinstance(exc, BaseExceptionGroup):
                raise exc.exceptions[0] from None
            raise
        finally:
            kernel.close()
        self.store.set_batch_status(batch.id, "finished")
        if batching is None:
            engine.close()
        return RunSummary(
            batch_id=batch.id,
            discovered=len(jobs),
            skipped=sum(job.job_id not in queued for job in jobs),
            succeeded=sum(outcomes),
            failed=len(outcomes) - sum(outcomes),
            completion_tokens=self._tokens,
            elapsed_s=time.monotonic() - started,
            batch_sizes=tuple(engine.batch_sizes[sizes_before:]),
        )

    async def _worker(self, kernel: AgentKernel, batch_id: str, root: Path, outcomes: list[bool]) -> None:
        while (run := self.store.claim_next(batch_id)) is not None:
            try:
                outcome = await self._execute(kernel, run, root)
            except BaseException as exc:  # cancelled (Ctrl-C) or broken: back to the queue, nothing stored
                self.recorder.flush(run.id)
                cancelled = isinstance(exc, asyncio.CancelledError | KeyboardInterrupt)
                self.store.requeue(run.id, "interrupted" if cancelled else f"{type(exc).__name__}: {exc}")
                raise
            self.recorder.flush(run.id)
            self._finish(run, outcome)
            outcomes.append(outcome.succeeded)
            if self.progress is not None:
                self.progress.job_done(outcome.succeeded)

    async def _execute(self, kernel: AgentKernel, run: RunRecord, root: Path) -> Outcome:
        try:
            messages = await self.bundle.initial_messages(run.inputs, root)
            result = await kernel.run(messages, run_id=run.id, workspace=root, inputs=run.inputs)
        except StructuredAgentsError as exc:
            return Outcome(False, error=f"{type(exc).__name__}: {exc}")
        self._tokens += result.usage.completion_tokens
        return await asyncio.to_thread(run_handler, self.handler, run, result, root)

    def _finish(self, run: RunRecord, outcome: Outcome) -> None:
        """Store the outcome and end the run (no await in between: never half-written)."""
        change = outcome.change
        if change is not None and change.diff:
            self.store.save_result(
                run.id,
                target_path=change.target_path,
                original_hash=change.original_hash,
                diff=change.diff,
                summary=outcome.summary,
                status=outcome.result_status,
            )
        self.store.finish(run.id, "succeeded" if outcome.succeeded else "failed", outcome.error)
