"""Interrupting an embedded run (as Ctrl-C does: the task is cancelled) and resuming it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from runner_helpers import run_embedded, scripted, submit_docstring

from structured_agents.bundles import Bundle
from structured_agents.engines import BatchingEngine, Engine, FunctionEngine
from structured_agents.observer.events import Event, KernelEnd, ModelRequest
from structured_agents.runner import EmbeddedRunner
from structured_agents.store import Store


class CancelAfter:
    """Cancels the task running the batch at the ``count``-th event of a kind (runs ended)."""

    def __init__(self, count: int, kind: type[Event] = KernelEnd) -> None:
        self.count = count
        self.kind = kind
        self.task: asyncio.Task[object] | None = None

    async def on_event(self, event: Event) -> None:
        if isinstance(event, self.kind):
            self.count -= 1
            if self.count == 0 and self.task is not None:
                self.task.cancel()


def _interrupted_run(
    bundle: Bundle,
    store: Store,
    root: Path,
    after: int,
    engine: Engine | None = None,
    kind: type[Event] = KernelEnd,
) -> None:
    stopper = CancelAfter(after, kind)
    runner = EmbeddedRunner(bundle, engine or scripted(bundle), store, concurrency=4, observers=[stopper])

    async def main() -> None:
        stopper.task = asyncio.ensure_future(runner.run(root, bundle.discover_jobs(root)))
        await stopper.task

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(main())


def test_an_interrupted_run_leaves_no_running_job_and_no_half_written_result(
    docstring_bundle: Bundle, store: Store, project: Path
) -> None:
    _interrupted_run(docstring_bundle, store, project, after=5)

    batch = store.list_batches()[0]
    assert batch.status == "queued"
    runs = store.list_runs(batch.id)
    by_status = {
        status: [r for r in runs if r.status == status] for status in ("succeeded", "queued", "running")
    }
    assert not by_status["running"]
    assert 1 <= len(by_status["succeeded"]) < len(runs)
    assert len(by_status["succeeded"]) + len(by_status["queued"]) == len(runs)
    with_result = {r.run_id for r in store.results(batch.id)}
    assert with_result == {r.id for r in by_status["succeeded"]}
    requeued = [r for r in by_status["queued"] if r.attempts]
    assert requeued, "the runs in flight when cancelled go back to the queue"
    assert all(r.attempts == 1 and r.error == "interrupted" for r in requeued)


def test_running_again_resumes_the_same_batch_and_finishes_it(
    docstring_bundle: Bundle, store: Store, project: Path
) -> None:
    _interrupted_run(docstring_bundle, store, project, after=5)
    batch = store.list_batches()[0]
    done_before = {r.id for r in store.list_runs(batch.id, "succeeded")}

    summary = run_embedded(docstring_bundle, scripted(docstring_bundle), store, project)

    assert summary.batch_id == batch.id
    assert summary.succeeded == summary.discovered - len(done_before)
    assert summary.skipped == len(done_before)
    runs = store.list_runs(batch.id)
    assert all(r.status == "succeeded" for r in runs)
    assert all(r.attempts == 1 for r in runs if r.id in done_before)
    assert len(store.results(batch.id)) == len(runs)
    assert store.get_batch(batch.id).status == "finished"


def test_a_run_left_running_by_a_killed_process_is_queued_again(
    docstring_bundle: Bundle, store: Store, project: Path
) -> None:
    _interrupted_run(docstring_bundle, store, project, after=3)
    batch = store.list_batches()[0]
    orphan = store.claim_next(batch.id)  # as if a process died holding it
    assert orphan is not None

    run_embedded(docstring_bundle, scripted(docstring_bundle), store, project)

    assert store.get_run(orphan.id).status == "succeeded"


def test_a_shared_batching_engine_keeps_serving_after_an_interruption(
    docstring_bundle: Bundle, store: Store, project: Path
) -> None:
    # two scripted turns per run: a run cut off after its first turn plays the second when retried;
    # slow batches, so the interruption surely comes while a batch is being decoded
    model = scripted(docstring_bundle, submit_docstring, submit_docstring)
    slow = FunctionEngine(lambda request, _info: (time.sleep(0.05), model.generate([request])[0])[1])
    with BatchingEngine(slow, max_batch_size=4, max_wait_s=0.05) as shared:
        # cancelled as the 7th request is built: requests 5 and 6 wait in the engine's queue
        _interrupted_run(docstring_bundle, store, project, after=7, engine=shared, kind=ModelRequest)
        runner = EmbeddedRunner(docstring_bundle, shared, store, concurrency=4)
        jobs = docstring_bundle.discover_jobs(project)

        summary = asyncio.run(asyncio.wait_for(runner.run(project, jobs), timeout=60))

    assert summary.failed == 0 and summary.succeeded + summary.skipped == summary.discovered
