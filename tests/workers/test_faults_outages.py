"""Outages and crashing tools: Redis down for a while or back empty, PostgreSQL restarted, a
tool that kills its worker, and how often a tool really runs when its worker dies mid-call.

After each fault every run still ends exactly once (``assert_exactly_once``: one
``kernel_start`` and one ``kernel_end`` per run, one row per turn and per tool call, no event
twice). A tool, though, runs *at least* once: a call whose worker is killed before its result
is recorded runs again on the next delivery (``test_a_tool_runs_again_when_its_worker_dies_mid_call``).
"""

from __future__ import annotations

import signal
import time
from collections import Counter

import pytest
import redis
from cluster import pg_start, pg_stop, wait_for
from cluster_fixtures import WORKER_SETTINGS, Cluster
from dist_tools import EXECUTIONS_LOG
from test_faults import assert_exactly_once, progress

REDIS_OUTAGE_S = 10.0
"""How long Redis stays down in the outage test."""
POSTGRES_OUTAGE_S = 3.0
"""How long PostgreSQL stays down between its stop and its start."""
RECOVERY_TIMEOUT_S = 180.0
"""How long a batch may take to finish after a fault: the sweep waits ``SA_WORKERS__STALE_AFTER_S``
before it re-sends a lost step, and redelivery waits the visibility timeout (generous for CI)."""


def start_midway(cluster: Cluster, prefix: str, runs: int) -> str:
    """Enqueue ``runs`` lookups and return once the first model turn is recorded, well before
    the last (the fault then hits a batch in full flight)."""
    batch_id = cluster.enqueue([f"{prefix}-{i}" for i in range(runs)])
    wait_for("the first model turns", lambda: progress(cluster, batch_id) >= 1, 60, 0.05)
    assert progress(cluster, batch_id) < 2 * runs, "the batch finished before the fault"
    return batch_id


def broker_messages(cluster: Cluster) -> int:
    """Messages in Redis now: waiting in a queue, or delivered and not yet acknowledged."""
    client = redis.Redis(port=cluster.redis.port)
    waiting = sum(int(client.llen(key)) for key in client.scan_iter() if client.type(key) == b"list")
    return waiting + int(client.hlen("unacked"))


def test_redis_outage_of_ten_seconds_mid_batch(cluster: Cluster) -> None:
    batch_id = start_midway(cluster, "outage", 40)
    cluster.redis.stop()
    time.sleep(REDIS_OUTAGE_S)  # the outage itself: workers keep trying to reconnect
    cluster.redis.start()
    cluster.wait(batch_id, timeout=RECOVERY_TIMEOUT_S)
    assert_exactly_once(cluster, batch_id, 40)


def test_redis_back_empty_mid_batch_the_sweep_finishes_every_run(cluster: Cluster) -> None:
    batch_id = start_midway(cluster, "empty-redis", 40)
    lost = broker_messages(cluster)
    cluster.redis.stop()
    cluster.redis.wipe()  # every queued and unacknowledged message, and the queue bindings, lost
    cluster.redis.start()
    assert lost > 0, "no message was waiting: nothing was lost"
    cluster.wait(batch_id, timeout=RECOVERY_TIMEOUT_S)
    assert_exactly_once(cluster, batch_id, 40)


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_postgres_restart_mid_batch(cluster: Cluster, mode: str) -> None:
    assert cluster.postgres is not None
    batch_id = start_midway(cluster, f"pg-{mode}", 30)
    pg_stop(cluster.postgres, mode)  # fast: clients disconnected; immediate: as a crash
    try:
        time.sleep(POSTGRES_OUTAGE_S)  # the outage itself: steps meet a database that is down
    finally:
        pg_start(cluster.postgres)
    cluster.wait(batch_id, timeout=RECOVERY_TIMEOUT_S)
    assert_exactly_once(cluster, batch_id, 30)


def test_a_tool_that_kills_its_worker_fails_its_run_naming_the_tool(cluster: Cluster) -> None:
    batch_id = cluster.enqueue(["CRASH-1", *(f"beside-crash-{i}" for i in range(6))])
    try:
        cluster.wait(batch_id, timeout=RECOVERY_TIMEOUT_S)
        assert cluster.cpu.process is not None
        assert cluster.cpu.process.poll() is None, "the pool replaces its child; the worker lives on"
    finally:
        if cluster.cpu.process is None or cluster.cpu.process.poll() is not None:
            cluster.cpu.start()  # leave a working tools worker to the next tests
    assert cluster.store.batch_counts(batch_id).by_status == {"succeeded": 6, "failed": 1}
    failed = cluster.store.list_runs(batch_id, "failed")[0]
    assert failed.inputs == {"key": "CRASH-1"}
    assert failed.error is not None
    assert "crashing_lookup" in failed.error, failed.error
    attempts = WORKER_SETTINGS["SA_WORKERS__MAX_ATTEMPTS"]
    assert f"was begun {attempts} times without finishing" in failed.error, failed.error
    assert "worker was lost" in failed.error, failed.error
    assert not cluster.rows("SELECT 1 FROM tool_calls WHERE run_id = :run", run=failed.id)
    events = [event.type for event in cluster.store.events(failed.id)]
    assert events.count("kernel_start") == events.count("kernel_end") == 1
    assert events[-1] == "kernel_end"
    assert cluster.store.events(failed.id)[-1].payload["reason"] == "error"
    succeeded = cluster.store.list_runs(batch_id, "succeeded")
    assert {run.inputs["key"] for run in succeeded} == {f"beside-crash-{i}" for i in range(6)}
    for run in succeeded:  # the others ended exactly once (as in assert_exactly_once)
        events = [event.type for event in cluster.store.events(run.id)]
        assert len(events) == 12 and events.count("kernel_end") == 1, run.id
        turns = cluster.rows("SELECT turn FROM turns WHERE run_id = :run", run=run.id)
        assert sorted(turn for (turn,) in turns) == [1, 2], run.id
        calls = cluster.rows("SELECT name FROM tool_calls WHERE run_id = :run", run=run.id)
        assert sorted(name for (name,) in calls) == ["lookup", "submit_result"], run.id


def test_a_tool_runs_again_when_its_worker_dies_mid_call(
    cluster: Cluster, record_property: pytest.RecordProperty
) -> None:
    """At least once, not exactly once: a call whose worker is killed after the tool's outside
    effect and before its result is recorded runs again; the store still records it once."""
    log = cluster.root / EXECUTIONS_LOG
    batch_id = cluster.enqueue([f"COUNTED-{i}" for i in range(4)])
    run_ids = {run.id for run in cluster.store.list_runs(batch_id)}

    def executions() -> Counter[str]:
        lines = log.read_text(encoding="utf-8").split() if log.exists() else []
        return Counter(line for line in lines if line in run_ids)

    wait_for("a counted tool call to start", lambda: executions().total() >= 1, 60, 0.02)
    cluster.cpu.kill(signal.SIGKILL)
    killed_mid_call = executions().total()  # each line of a call not recorded yet: it runs again
    recorded_sql = (
        "SELECT c.run_id, count(*) FROM tool_calls c JOIN runs r ON r.id = c.run_id"
        " WHERE r.batch_id = :batch AND c.name = 'counted_lookup' GROUP BY c.run_id"
    )
    assert not cluster.rows(recorded_sql, batch=batch_id), "killed before any call was recorded"
    cluster.cpu.start()
    cluster.wait(batch_id, timeout=RECOVERY_TIMEOUT_S)
    assert_exactly_once(cluster, batch_id, 4)

    counted = executions()
    assert set(counted) == run_ids, "every call ran at least once"
    recorded = dict(cluster.rows(recorded_sql, batch=batch_id))
    assert recorded == dict.fromkeys(run_ids, 1), "each call recorded once"
    extra = counted.total() - len(run_ids)
    record_property("killed_mid_call", killed_mid_call)
    record_property("extra_tool_executions", extra)
    total = counted.total()
    print(f"tool executions: {total} for {len(run_ids)} calls, {extra} extra ({killed_mid_call} killed)")
    assert extra >= killed_mid_call >= 1, "a call killed mid-way runs again"
