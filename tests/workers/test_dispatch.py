"""Dispatch: a batch's starts go out in chunked ``start_runs`` messages, and starts sent again
(a redelivered chunk, the sweep's, a duplicate) change nothing."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import redis
from cluster import RedisServer, wait_for
from cluster_fixtures import BUNDLE, Cluster

from structured_agents.jobs import JobSpec, parse_jobs
from structured_agents.settings import Settings
from structured_agents.store import SqlStore
from structured_agents.workers.celery_app import make_app
from structured_agents.workers.constants import CONTROL_QUEUE, START_RUN, START_RUNS
from structured_agents.workers.dispatch import (
    START_CHUNK,
    START_SPREAD,
    dispatch_batch,
    queue_length,
    send,
    send_starts,
)


@pytest.fixture
def broker(tmp_path: Path) -> Any:
    """A redis-server no worker reads from."""
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()


def _messages(server: RedisServer) -> list[tuple[str, list[Any]]]:
    """Task name and arguments of every message waiting in the control queue, oldest first."""
    client = redis.Redis(port=server.port)
    found = []
    for raw in reversed(client.lrange(CONTROL_QUEUE, 0, -1)):  # kombu LPUSHes, workers pop the right
        message = json.loads(raw)
        args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
        found.append((message["headers"]["task"], args))
    client.delete(CONTROL_QUEUE)
    return found


@pytest.mark.parametrize("runs", [1, 10, 250, 2_345])
def test_starts_go_in_chunks_carrying_every_run_once(broker: RedisServer, runs: int) -> None:
    app = make_app(Settings(redis_url=broker.url))
    ids = [f"run-{i}" for i in range(runs)]
    sent = send_starts(app, ids)
    messages = _messages(broker)
    assert sent == len(messages)
    assert {name for name, _ in messages} == {START_RUNS}
    chunks = [args[0] for _, args in messages]
    assert [run_id for chunk in chunks for run_id in chunk] == ids
    assert max(len(chunk) for chunk in chunks) <= START_CHUNK
    assert len(chunks) >= min(runs, START_SPREAD)  # a small batch still spreads over the workers
    assert len(chunks) <= max(START_SPREAD, -(-runs // START_CHUNK))  # a big one: few messages


def test_a_batch_is_dispatched_once_and_never_after_its_cancel(broker: RedisServer, tmp_path: Path) -> None:
    app = make_app(Settings(redis_url=broker.url))
    jobs = [JobSpec(f"job-{i}", "lookup", f"{i}.txt", "<module>", "", {"key": str(i)}) for i in range(40)]
    with SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}") as store:
        batch = store.create_batch("b", "1", str(tmp_path))
        store.add_jobs(batch.id, jobs)
        assert dispatch_batch(store, app, batch.id) > 0
        assert store.get_batch(batch.id).status == "running"
        started = [run_id for _, args in _messages(broker) for run_id in args[0]]
        assert sorted(started) == sorted(job.job_id for job in jobs)
        assert dispatch_batch(store, app, batch.id) == 0  # a redelivered dispatch sends nothing
        cancelled = store.create_batch("b", "1", str(tmp_path))
        store.add_jobs(cancelled.id, [JobSpec("other", "lookup", "o.txt", "<module>", "", {"key": "o"})])
        store.cancel_batch(cancelled.id)
        assert dispatch_batch(store, app, cancelled.id) == 0
    assert _messages(broker) == []


def test_a_batch_whose_jobs_were_all_done_before_ends_at_its_dispatch(
    broker: RedisServer, tmp_path: Path
) -> None:
    app = make_app(Settings(redis_url=broker.url))
    jobs = [JobSpec(f"job-{i}", "lookup", f"{i}.txt", "<module>", "", {"key": str(i)}) for i in range(3)]
    with SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}") as store:
        first = store.create_batch("b", "1", str(tmp_path))
        store.add_jobs(first.id, jobs)
        again = store.create_batch("b", "1", str(tmp_path))
        added = store.add_jobs(again.id, jobs)  # the same jobs: skipped, the batch holds no run
        assert not added.queued and len(added.skipped) == 3
        assert dispatch_batch(store, app, again.id) == 0
        assert store.get_batch(again.id).status == "finished"
        assert store.get_batch(first.id).status == "queued"  # its runs are still to do
        assert not store.finish_if_idle(first.id)
    assert _messages(broker) == []


def test_starts_sent_again_and_unknown_runs_change_nothing(cluster: Cluster) -> None:
    """Every run of a batch gets its start three times (two chunks and a single start), plus a
    chunk naming a run that does not exist: each run is claimed once and runs once."""
    from structured_agents.workers.enqueue import enqueue

    keys = [f"again-{i}" for i in range(24)]
    jobs = parse_jobs({"kind": "lookup", "path": f"{key}.txt", "inputs": {"key": key}} for key in keys)
    batch_id = enqueue(cluster.store, cluster.app, BUNDLE, cluster.root, jobs).batch_id
    run_ids = [job.job_id for job in jobs]
    send_starts(cluster.app, ["no-such-run", *run_ids])
    for run_id in run_ids:
        send(cluster.app, START_RUN, (run_id,))
    cluster.wait(batch_id)
    wait_for("the control queue to drain", lambda: queue_length(cluster.app, CONTROL_QUEUE) == 0, 60)
    send_starts(cluster.app, run_ids)  # and once more after they finished
    wait_for("the control queue to drain", lambda: queue_length(cluster.app, CONTROL_QUEUE) == 0, 60)
    assert cluster.store.batch_counts(batch_id).by_status == {"succeeded": len(keys)}
    rows = cluster.rows(
        "SELECT r.attempts, "
        "(SELECT count(*) FROM turns t WHERE t.run_id = r.id), "
        "(SELECT count(*) FROM events e WHERE e.run_id = r.id AND e.type = 'kernel_start') "
        "FROM runs r WHERE r.batch_id = :batch",
        batch=batch_id,
    )
    assert sorted(set(map(tuple, rows))) == [(1, 2, 1)]
