"""Batches and the run queue: bulk enqueue, claims (also under threads), status transitions; on
SQLite, PostgreSQL and in memory."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from store_helpers import make_jobs

from structured_agents.jobs import JobSpec
from structured_agents.status import FinalStatus
from structured_agents.store import RecordNotFoundError, Run, Store, StoreError


def test_bulk_insert_10000_jobs(store: Store) -> None:
    batch = store.create_batch("docstrings", "1.0", "/src", {"overwrite": False})
    jobs = make_jobs(10_000)
    started = time.perf_counter()
    result = store.add_jobs(batch.id, jobs)
    elapsed = time.perf_counter() - started
    print(f"\n{store.dialect}: add_jobs(10000) took {elapsed:.2f}s")
    assert len(result.queued) == 10_000 and result.skipped == ()
    assert store.batch_counts(batch.id)["queued"] == 10_000
    assert elapsed < 30
    again = store.add_jobs(batch.id, jobs)
    assert again.queued == () and len(again.skipped) == 10_000


def test_add_jobs_skips_succeeded_and_requeues_failed(store: Store) -> None:
    first = store.create_batch("docstrings", "1.0", "/src")
    jobs = make_jobs(4)
    store.add_jobs(first.id, jobs)
    statuses: tuple[FinalStatus, ...] = ("succeeded", "failed", "cancelled")
    for job, status in zip(jobs, statuses, strict=False):
        assert store.claim(job.job_id) is not None
        assert store.finish(job.job_id, status, error="boom" if status == "failed" else None)

    second = store.create_batch("docstrings", "1.0", "/src")
    extra = make_jobs(1, prefix="new")
    result = store.add_jobs(second.id, [*jobs, *extra, jobs[0]])
    assert result.queued == (jobs[1].job_id, jobs[2].job_id, extra[0].job_id)
    assert result.skipped == (jobs[0].job_id, jobs[3].job_id)  # succeeded; still queued in `first`
    requeued = store.get_run(jobs[1].job_id)
    assert (requeued.batch_id, requeued.status, requeued.attempts, requeued.error) == (
        second.id,
        "queued",
        0,
        None,
    )
    assert store.get_run(jobs[3].job_id).batch_id == first.id


def test_claim_finish_and_requeue(store: Store) -> None:
    batch = store.create_batch("lint", "0.1", "/src")
    (job,) = make_jobs(1)
    store.add_jobs(batch.id, [job])
    run = store.claim(job.job_id)
    assert isinstance(run, Run)
    assert (run.status, run.attempts, run.inputs["start_line"]) == ("running", 1, 0)
    assert run.started_at is not None and run.started_at.tzinfo is not None
    assert store.claim(job.job_id) is None
    assert store.requeue(job.job_id, error="transient")
    retried = store.claim(job.job_id)
    assert retried is not None and retried.attempts == 2 and retried.error is None
    assert store.finish(job.job_id, "succeeded")
    assert not store.finish(job.job_id, "succeeded")  # a redelivered finish changes nothing
    assert not store.requeue(job.job_id)
    done = store.get_run(job.job_id)
    assert done.status == "succeeded" and done.finished_at is not None
    with pytest.raises(RecordNotFoundError):
        store.finish("missing", "failed")
    with pytest.raises(StoreError, match="finish status"):
        store.finish(job.job_id, "queued")  # type: ignore[arg-type]


def test_claim_clears_an_earlier_attempt(store: Store) -> None:
    batch = store.create_batch("docstrings", "1.0", "/src")
    (job,) = make_jobs(1)
    store.add_jobs(batch.id, [job])
    store.claim(job.job_id)
    store.record_turn(job.job_id, 1, raw_text="first attempt")
    store.record_tool_call(job.job_id, 1, "call-1", "read_file", {"path": "a.py"}, "...")
    store.record_event({"type": "kernel_start", "run_id": job.job_id, "turn": 0, "timestamp": 1.0})
    store.requeue(job.job_id, error="worker lost")
    store.claim(job.job_id)
    assert store.turns(job.job_id) == [] and store.tool_calls(job.job_id) == []
    assert len(store.events(job.job_id)) == 1  # the event log keeps every attempt
    assert store.record_turn(job.job_id, 1, raw_text="second attempt")


def test_batches_counts_listing_and_cancel(store: Store) -> None:
    batch = store.create_batch("docstrings", "1.0", "/src", {"model": "gemma"})
    jobs = make_jobs(5)
    store.add_jobs(batch.id, jobs)
    store.claim(jobs[0].job_id)
    store.finish(jobs[0].job_id, "succeeded")
    store.claim(jobs[1].job_id)
    assert store.get_batch(batch.id).options == {"model": "gemma"}
    assert [b.id for b in store.list_batches()] == [batch.id]
    assert [r.id for r in store.list_runs(batch.id, "running")] == [jobs[1].job_id]
    assert [r.id for r in store.list_runs(batch.id, limit=2, offset=1)] == [jobs[1].job_id, jobs[2].job_id]
    assert store.cancel_batch(batch.id) == 3
    counts = store.batch_counts(batch.id)
    assert counts.by_status == {"succeeded": 1, "running": 1, "cancelled": 3}
    assert counts.total == 5 and not counts.done
    store.finish(jobs[1].job_id, "failed", error="x")
    assert store.batch_counts(batch.id).done
    assert store.get_batch(batch.id).status == "cancelled"
    store.set_batch_status(batch.id, "finished")
    assert store.get_batch(batch.id).status == "finished"
    with pytest.raises(RecordNotFoundError):
        store.get_batch("nope")
    with pytest.raises(RecordNotFoundError):
        store.add_jobs("nope", jobs)


def race_claim(store: Store, run_id: str) -> list[Run | None]:
    """Two threads claim ``run_id`` at the same moment; what each got."""
    barrier = threading.Barrier(2)
    results: list[Run | None] = []

    def contend() -> None:
        barrier.wait()
        results.append(store.claim(run_id))

    threads = [threading.Thread(target=contend) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_two_threads_claiming_the_same_job_one_wins(store: Store) -> None:
    batch = store.create_batch("docstrings", "1.0", "/src")
    jobs = make_jobs(20)
    store.add_jobs(batch.id, jobs)
    for job in jobs:
        results = race_claim(store, job.job_id)
        assert len(results) == 2 and sum(run is not None for run in results) == 1
    assert store.batch_counts(batch.id)["running"] == 20


def test_claim_next_hands_each_run_to_exactly_one_worker(store: Store) -> None:
    batch = store.create_batch("docstrings", "1.0", "/src")
    jobs = make_jobs(60)
    store.add_jobs(batch.id, jobs)
    claimed: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        while (run := store.claim_next(batch.id)) is not None:
            with lock:
                claimed.append(run.id)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert Counter(claimed) == Counter(job.job_id for job in jobs)
    assert store.claim_next(batch.id) is None


def test_the_last_run_to_end_finishes_its_batch_in_the_same_transaction(store: Store) -> None:
    batch = store.create_batch("docstrings", "1.0", "/src")
    jobs = make_jobs(3)
    store.add_jobs(batch.id, jobs)
    assert store.move_batch(batch.id, "running", only_from=("queued",))
    for job in jobs:
        store.claim(job.job_id)
    store.finish(jobs[0].job_id, "succeeded")
    store.finish(jobs[1].job_id, "failed", error="x")
    assert store.get_batch(batch.id).status == "running"
    assert not store.finish(jobs[1].job_id, "failed")  # a redelivered finish changes nothing
    store.finish(jobs[2].job_id, "succeeded")
    assert store.get_batch(batch.id).status == "finished"


def test_the_last_runs_ending_at_once_finish_the_batch(store: Store) -> None:
    """Each finish sees the other: they take turns on the batch row, so one of them ends it."""
    for _ in range(10):
        batch = store.create_batch("docstrings", "1.0", "/src")
        jobs = make_jobs(2, prefix=batch.id)
        store.add_jobs(batch.id, jobs)
        for job in jobs:
            store.claim(job.job_id)
        barrier = threading.Barrier(2)

        def end(run_id: str, barrier: threading.Barrier) -> None:
            barrier.wait()
            store.finish(run_id, "succeeded")

        threads = [threading.Thread(target=end, args=(job.job_id, barrier)) for job in jobs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert store.get_batch(batch.id).status == "finished"


def test_add_jobs_stores_each_jobs_fields_and_inputs_as_given(store: Store) -> None:
    batch = store.create_batch("docstrings", "1.0", "/src")
    inputs = {
        "text": 'tab\tnewline\n back\\slash "quoted" ünïcode',
        "n": 3,
        "none": None,
        "nested": [{"a": 1}],
    }
    job = JobSpec("odd-1", "docstring", "pkg/ä b.py", "Outer.<locals>.f", "f" * 64, inputs)
    store.add_jobs(batch.id, [job])
    run = store.get_run(job.job_id)
    assert (run.kind, run.target_path, run.qualname, run.source_hash, run.inputs) == (
        job.kind,
        job.path,
        job.qualname,
        job.source_hash,
        inputs,
    )
    assert (run.status, run.attempts, run.batch_id) == ("queued", 0, batch.id)
    assert store.run_ids(batch.id, "queued") == [job.job_id]


def test_inputs_that_are_not_json_are_refused_naming_the_job(store: Store) -> None:
    batch = store.create_batch("docstrings", "1.0", "/src")
    job = JobSpec("bad-1", "docstring", "a.py", "f", "", {"when": object()})
    with pytest.raises(StoreError, match="bad-1"):
        store.add_jobs(batch.id, [job])
    assert store.batch_counts(batch.id).by_status == {}


def test_ids_starting_a_prefix_are_found_and_like_wildcards_match_only_themselves(store: Store) -> None:
    batch = store.create_batch("b", "1", "/r", batch_id="batch-ab_1")
    store.add_jobs(batch.id, make_jobs(3, prefix="run%a"))
    assert store.ids_starting("batch-ab") == (["batch-ab_1"], [])
    assert store.ids_starting("batch-ab%") == ([], [])  # % is a character here, not a wildcard
    assert store.ids_starting("batch_") == ([], [])
    batches, runs = store.ids_starting("run%a")
    assert batches == [] and len(runs) == 2 and all(run.startswith("run%a") for run in runs)
    assert store.ids_starting("run%a", limit=5)[1] == sorted(
        job.job_id for job in make_jobs(3, prefix="run%a")
    )
