"""Runs through the real cluster: 200 jobs finish, events in order, turns share batches, bad input refused."""

from __future__ import annotations

import pytest
from cluster import wait_for
from cluster_fixtures import BUNDLE, Cluster

from structured_agents.jobs import JobInputError, parse_jobs
from structured_agents.workers.enqueue import enqueue

EXPECTED_EVENTS = [
    "kernel_start",
    *["model_request", "model_response", "tool_call", "tool_result", "turn_complete"] * 2,
    "kernel_end",
]


@pytest.fixture(scope="module")
def big_batch(cluster: Cluster) -> str:
    """A batch of 200 jobs, finished."""
    batch_id = cluster.enqueue([f"key{i}" for i in range(200)])
    cluster.wait(batch_id, timeout=120)
    # the last run's step moves the batch just after committing the run itself
    wait_for(
        "the batch to be finished", lambda: cluster.store.get_batch(batch_id).status == "finished", 30, 0.2
    )
    return batch_id


def test_every_run_finishes_once_with_its_result(cluster: Cluster, big_batch: str) -> None:
    counts = cluster.store.batch_counts(big_batch)
    assert counts.by_status == {"succeeded": 200}
    assert cluster.store.get_batch(big_batch).status == "finished"
    results = cluster.store.results(big_batch)
    assert len(results) == 200
    assert {result.summary for result in results} == {"done"}
    turns = cluster.rows(
        "SELECT count(*), count(DISTINCT (t.run_id, t.turn)) FROM turns t JOIN runs r ON r.id = t.run_id "
        "WHERE r.batch_id = :batch",
        batch=big_batch,
    )
    assert turns[0] == (400, 400)


def test_every_event_is_stored_in_order(cluster: Cluster, big_batch: str) -> None:
    rows = cluster.rows(
        "SELECT e.run_id, e.type FROM events e JOIN runs r ON r.id = e.run_id "
        "WHERE r.batch_id = :batch ORDER BY e.run_id, e.id",
        batch=big_batch,
    )
    by_run: dict[str, list[str]] = {}
    for run_id, kind in rows:
        by_run.setdefault(run_id, []).append(kind)
    assert len(by_run) == 200
    assert all(kinds == EXPECTED_EVENTS for kinds in by_run.values())
    run_id = next(iter(by_run))
    events = cluster.store.events(run_id)
    assert [e.ts for e in events] == sorted(e.ts for e in events)
    assert events[-1].payload["reason"] == "termination_tool"


def test_concurrent_runs_share_generate_calls(cluster: Cluster, big_batch: str) -> None:
    sizes = cluster.rows(
        "SELECT t.batch_size FROM turns t JOIN runs r ON r.id = t.run_id WHERE r.batch_id = :batch",
        batch=big_batch,
    )
    mean = sum(size for (size,) in sizes) / len(sizes)
    assert mean > 1, f"mean batch size {mean}"
    responses = cluster.rows(
        "SELECT max(CAST(e.payload->>'batch_size' AS INTEGER)) FROM events e JOIN runs r ON r.id = e.run_id "
        "WHERE r.batch_id = :batch AND e.type = 'model_response'",
        batch=big_batch,
    )
    assert responses[0][0] > 1


def test_malformed_jobs_are_refused_before_anything_is_written(cluster: Cluster) -> None:
    before = len(cluster.store.list_batches(limit=1000))
    with pytest.raises(JobInputError, match=r"job 2: path: Field required") as missing:
        parse_jobs([{"kind": "lookup", "path": "a.txt"}, {"kind": "lookup", "inputs": {}}])
    assert "1 of 2 jobs" in str(missing.value)
    with pytest.raises(JobInputError, match=r"job 1: inputs: Input should be a valid dictionary"):
        parse_jobs([{"kind": "lookup", "path": "a.txt", "inputs": ["not", "a", "dict"]}])
    with pytest.raises(JobInputError, match=r"job 1: unexpected: Extra inputs are not permitted"):
        parse_jobs([{"kind": "lookup", "path": "a.txt", "unexpected": 1}])
    jobs = parse_jobs([{"kind": "lookup", "path": "a.txt", "inputs": {"wrong": "name"}}])
    with pytest.raises(JobInputError, match=r"'key' is undefined"):
        enqueue(cluster.store, cluster.app, BUNDLE, cluster.root, jobs)
    assert len(cluster.store.list_batches(limit=1000)) == before
