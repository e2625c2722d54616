"""The embedded runner: a bundle over a whole codebase on one machine, no services needed.

::

    bundle = load_bundle("docstring")
    with SqlStore(url) as store:
        summary = asyncio.run(EmbeddedRunner(bundle, engine, store, concurrency=8).run(root))

``concurrency`` runs are driven at once through the run lifecycle
(:class:`~structured_agents.lifecycle.RunLifecycle`), the same steps the Celery workers drive:
each step commits the run's state, turn, tool calls and events to the store. Their model
turns go through one :class:`~structured_agents.engines.batching.BatchingEngine`, so they are
decoded together. Every job's outcome is stored as a result with a unified diff (never applied
to the user's files here), and the run finishes as succeeded or failed; a step that raises
fails its run at once (there is no one else to retry it).

The batch is checked, created or resumed, and given its jobs by the lifecycle
(:func:`~structured_agents.lifecycle.prepare_batch`, :func:`~structured_agents.lifecycle.open_batch`),
as ``sa enqueue`` does for the workers.

Resuming: a batch is reused while it is unfinished (same bundle, version, root and options),
and jobs that already succeeded, in any batch, are skipped. Cancelling :meth:`run` (Ctrl-C)
puts each running job back in the queue before its task ends and leaves the batch queued;
running again picks up where it stopped (a re-queued job starts over). A batch is meant to be
run by one process at a time: a run left ``running`` by a killed process is queued again when
its batch is resumed.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from structured_agents.bundles import Bundle
from structured_agents.engines.batching import BatchingEngine
from structured_agents.errors import KernelError, StructuredAgentsError
from structured_agents.jobs import JobSpec
from structured_agents.kernel import Engine
from structured_agents.lifecycle import (
    BatchAgent,
    ModelTurn,
    PreparedBatch,
    RunLifecycle,
    next_step,
    open_batch,
    prepare_batch,
    state_of,
)
from structured_agents.observer.protocol import Observer
from structured_agents.runner.progress import RunProgress
from structured_agents.status import FinalStatus
from structured_agents.store import Store, StoredRun, StoreError

__all__ = ["EmbeddedRunner", "RunSummary"]


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
    """Drives a bundle's jobs, ``concurrency`` at a time, with one batching engine.

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
        self._observers: list[Observer] = [*([progress] if progress else []), *observers]
        self._batch_wait_s = batch_wait_s
        self._tokens = 0

    async def run(
        self,
        root: Path,
        jobs: list[JobSpec] | None = None,
        *,
        overwrite: bool = False,
        task_options: Mapping[str, object] | None = None,
    ) -> RunSummary:
        """Queue ``jobs`` (by default those the bundle's task discovers under ``root``; with
        ``overwrite``, targets that have one too) and run every queued job of the batch, taking
        up an unfinished batch of the same work if there is one. ``task_options`` (the lint
        task's ``check``...) are stored with the batch for its task."""
        prepared = prepare_batch(
            self.bundle,
            root,
            jobs,
            task_options=task_options,
            overwrite=overwrite,
            extra={"overwrite": overwrite},
        )
        return await self.run_prepared(prepared)

    async def run_prepared(self, prepared: PreparedBatch) -> RunSummary:
        """:meth:`run` for a batch checked already (:func:`~structured_agents.lifecycle.prepare_batch`
        with this runner's bundle: ``sa run`` checks it before it opens the store)."""
        started = time.monotonic()
        self._tokens = 0
        jobs = prepared.jobs
        batch = open_batch(self.store, prepared, resume=True).batch
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
        agent = await BatchAgent.connect(self.bundle, engine, observers=self._observers)

        async def agent_for(_run: StoredRun) -> BatchAgent:
            return agent

        lifecycle = RunLifecycle(self.store, agent_for)
        outcomes: list[bool] = []
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(min(self.concurrency, len(queued))):
                    group.create_task(self._worker(lifecycle, agent, batch.id, outcomes))
        except BaseException as exc:
            self.store.set_batch_status(batch.id, "queued")  # resumable
            if batching is None:  # the batch being decoded finishes in the background
                threading.Thread(target=engine.close, daemon=True).start()
            if isinstance(exc, BaseExceptionGroup):
                raise exc.exceptions[0] from None
            raise
        finally:
            agent.kernel.close()
            await self.bundle.disconnect()  # its MCP servers: started for this run
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
            batch_sizes=tuple(engine.batch_sizes)[sizes_before:],
        )

    async def _worker(
        self, lifecycle: RunLifecycle, agent: BatchAgent, batch_id: str, outcomes: list[bool]
    ) -> None:
        while (claimed := self.store.claim_next(batch_id)) is not None:
            try:
                status = await self._drive(lifecycle, agent, self.store.load_runs([claimed.id])[claimed.id])
            except BaseException as exc:  # cancelled (Ctrl-C) or broken: back to the queue
                cancelled = isinstance(exc, asyncio.CancelledError | KeyboardInterrupt)
                self.store.requeue(claimed.id, "interrupted" if cancelled else f"{type(exc).__name__}: {exc}")
                raise
            outcomes.append(status == "succeeded")
            if self.progress is not None:
                self.progress.job_done(status == "succeeded")

    async def _drive(self, lifecycle: RunLifecycle, agent: BatchAgent, run: StoredRun) -> FinalStatus:
        """Drive one claimed run through its steps to its end; its final status."""
        current: StoredRun | None = run
        turn: ModelTurn | None = None
        try:
            current = await lifecycle.start(run)
            while current is not None and (state := state_of(current)) is not None:
                step = next_step(state)
                if step == "finish":
                    return await lifecycle.finish(current) or "failed"
                if step == "model":
                    turn = await lifecycle.model_turn(current, state.turn + 1)
                    if turn is None:
                        break
                    completion = await agent.kernel.generate(turn.request)
                    self._tokens += completion.usage.completion_tokens
                    current = await lifecycle.apply_completion(turn, completion)
                    turn = None
                else:
                    rows = {}
                    for call in state.pending_calls:
                        rows = await lifecycle.call_tool(current, call.id)
                    current = await lifecycle.apply_tools(current, rows)
        except StoreError:
            raise
        except StructuredAgentsError as exc:
            events = (turn.events if turn is not None else []) + agent.events.take(run.id)
            lifecycle.fail(current or run, exc, events=events)
            return "failed"
        raise KernelError(f"run {run.id} was moved by someone else while this runner drove it")
