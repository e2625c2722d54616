"""Faults: workers killed mid-step, Redis restarted mid-batch, a step that always fails, lost messages.

After each fault every run still ends exactly once: one ``kernel_start`` and one
``kernel_end`` per run, one row per turn, one row per tool call, and no event twice.
"""

from __future__ import annotations

import signal

from cluster import wait_for
from cluster_fixtures import BUNDLE, Cluster
from sqlalchemy import text

from structured_agents.jobs import parse_jobs
from structured_agents.workers.constants import START_RUNS
from structured_agents.workers.dispatch import send


def assert_exactly_once(cluster: Cluster, batch_id: str, runs: int) -> None:
    """Every run of the batch succeeded, with each turn, call and event recorded once."""
    assert cluster.store.batch_counts(batch_id).by_status == {"succeeded": runs}
    per_run = cluster.rows(
        "SELECT r.id,"
        " (SELECT count(*) FROM turns t WHERE t.run_id = r.id),"
        " (SELECT count(*) FROM tool_calls c WHERE c.run_id = r.id),"
        " (SELECT count(*) FROM events e WHERE e.run_id = r.id AND e.type = 'kernel_start'),"
        " (SELECT count(*) FROM events e WHERE e.run_id = r.id AND e.type = 'kernel_end'),"
        " (SELECT count(*) FROM events e WHERE e.run_id = r.id AND e.type = 'tool_result'),"
        " (SELECT count(*) FROM events e WHERE e.run_id = r.id)"
        " FROM runs r WHERE r.batch_id = :batch",
        batch=batch_id,
    )
    assert len(per_run) == runs
    for run_id, turns, calls, starts, ends, results, events in per_run:
        assert (turns, calls, starts, ends, results, events) == (2, 2, 1, 1, 2, 12), run_id


def progress(cluster: Cluster, batch_id: str) -> int:
    """Model turns recorded so far in the batch."""
    rows = cluster.rows(
        "SELECT count(*) FROM turns t JOIN runs r ON r.id = t.run_id WHERE r.batch_id = :batch",
        batch=batch_id,
    )
    return int(rows[0][0])


def test_cpu_worker_killed_mid_tool_call(cluster: Cluster) -> None:
    batch_id = cluster.enqueue([f"SLOW-{i}" for i in range(4)])
    wait_for("a slow tool call to start", lambda: progress(cluster, batch_id) >= 1, 30, 0.1)
    cluster.cpu.kill(signal.SIGKILL)
    assert not cluster.rows("SELECT 1 FROM tool_calls WHERE name = 'slow_lookup'")
    cluster.cpu.start()
    cluster.wait(batch_id, timeout=90)
    assert_exactly_once(cluster, batch_id, 4)


def test_gpu_worker_killed_mid_batch(cluster: Cluster) -> None:
    batch_id = cluster.enqueue([f"gpu-{i}" for i in range(60)])
    wait_for("the first model turns", lambda: progress(cluster, batch_id) >= 1, 30, 0.05)
    cluster.gpu.kill(signal.SIGKILL)
    done_before = progress(cluster, batch_id)
    assert done_before < 120
    cluster.gpu.start()
    cluster.wait(batch_id, timeout=90)
    assert_exactly_once(cluster, batch_id, 60)


def test_redis_restart_during_a_batch(cluster: Cluster) -> None:
    batch_id = cluster.enqueue([f"redis-{i}" for i in range(60)])
    wait_for("the first model turns", lambda: progress(cluster, batch_id) >= 1, 30, 0.05)
    cluster.redis.stop()
    cluster.redis.start()
    cluster.wait(batch_id, timeout=90)
    assert_exactly_once(cluster, batch_id, 60)


def test_a_step_that_always_fails_fails_its_run_after_the_budget(cluster: Cluster) -> None:
    batch_id = cluster.enqueue(["POISON", "fine-1", "fine-2"])
    cluster.wait(batch_id, timeout=60)
    assert cluster.store.batch_counts(batch_id).by_status == {"succeeded": 2, "failed": 1}
    failed = cluster.store.list_runs(batch_id, "failed")[0]
    assert failed.inputs == {"key": "POISON"}
    assert failed.error is not None
    assert "step e1:llm:1 failed 3 times" in failed.error
    assert "EngineError: ScriptedEngine: the script of conversation 'POISON' has 0 turns" in failed.error
    events = cluster.store.events(failed.id)
    # the failed turn's own events stay in the log, as the kernel and the embedded runner keep them
    assert [e.type for e in events] == ["kernel_start", "model_request", "kernel_end"]
    assert events[-1].payload["reason"] == "error"
    assert not cluster.rows("SELECT 1 FROM step_attempts WHERE run_id = :run", run=failed.id)


def test_lost_dispatch_and_start_messages_are_sent_again_by_the_sweep(cluster: Cluster) -> None:
    def batch_without_messages(prefix: str) -> str:
        jobs = parse_jobs(
            {"kind": "lookup", "path": f"{prefix}-{i}.txt", "inputs": {"key": "k"}} for i in range(3)
        )
        batch = cluster.store.create_batch("dist-test", "1.0", str(cluster.root), {"bundle": str(BUNDLE)})
        cluster.store.add_jobs(batch.id, jobs)
        return batch.id

    never_dispatched = batch_without_messages("lost-dispatch")  # its dispatch message was lost
    never_started = batch_without_messages("lost-start")  # dispatched, its start messages lost
    with cluster.store.engine.begin() as conn:
        conn.execute(text("UPDATE batches SET status = 'running' WHERE id = :id"), {"id": never_started})

    for batch_id in (never_dispatched, never_started):
        cluster.wait(batch_id, timeout=60)
        assert_exactly_once(cluster, batch_id, 3)


def test_a_run_whose_start_fails_fails_alone_and_its_chunk_runs(cluster: Cluster) -> None:
    """A chunk of starts where one run's first prompt cannot be rendered (its inputs lack the
    template's ``key``, as a client writing rows straight into the store could leave them):
    the others start together and succeed, that run retries on its own and fails after the
    budget, naming the start step."""
    jobs = parse_jobs({"kind": "lookup", "path": f"chunk-{i}.txt", "inputs": {"key": "k"}} for i in range(5))
    broken = parse_jobs([{"kind": "lookup", "path": "broken.txt", "inputs": {"other": "k"}}])
    batch = cluster.store.create_batch("dist-test", "1.0", str(cluster.root), {"bundle": str(BUNDLE)})
    cluster.store.add_jobs(batch.id, [*jobs[:2], *broken, *jobs[2:]])
    send(cluster.app, START_RUNS, ([job.job_id for job in [*jobs[:2], *broken, *jobs[2:]]],))  # one chunk
    wait_for("every run to end", lambda: cluster.store.batch_counts(batch.id).done, 60)
    assert cluster.store.batch_counts(batch.id).by_status == {"succeeded": 5, "failed": 1}
    (failed,) = cluster.store.list_runs(batch.id, "failed")
    assert failed.id == broken[0].job_id
    assert failed.error is not None and "step start failed 3 times" in failed.error, failed.error
    assert "key" in failed.error
