"""Several model workers behind one ``llm`` queue: the turns of one batch spread over them,
each turn is committed once, and a killed worker's turns are finished by the other."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import pytest
from cluster import WorkerProcess, wait_for
from cluster_fixtures import Cluster
from test_faults import assert_exactly_once, progress


def model_turn_stats(cluster: Cluster) -> dict[str, dict[str, Any]]:
    """``celery inspect model_turns`` of every llm worker that answers, by hostname."""
    replies = cluster.app.control.broadcast("model_turns", reply=True, timeout=3)
    return {name: stats for reply in replies for name, stats in reply.items() if stats}


@pytest.fixture
def second_gpu(cluster: Cluster) -> Iterator[WorkerProcess]:
    """Another ``sa worker gpu`` on the cluster's queue, killed after the test."""
    worker = WorkerProcess("gpu", cluster.gpu.env, cluster.root / "gpu2.log")
    worker.start()
    try:
        yield worker
    finally:
        worker.kill()


def test_two_model_workers_share_a_batch_and_one_finishes_what_a_killed_one_held(
    cluster: Cluster, second_gpu: WorkerProcess
) -> None:
    before = {name: stats["committed"] for name, stats in model_turn_stats(cluster).items()}
    shared = cluster.enqueue([f"two-{i}" for i in range(80)])
    cluster.wait(shared, timeout=120)
    assert_exactly_once(cluster, shared, 80)
    after = model_turn_stats(cluster)
    assert len(after) == 2, after  # both workers answer
    committed = {name: stats["committed"] - before.get(name, 0) for name, stats in after.items()}
    assert sum(committed.values()) == 160 and all(committed.values()), committed  # both decoded turns
    for stats in after.values():
        assert stats["in_flight"] == 0 and stats["engine"]["steps"] > 0

    killed = cluster.enqueue([f"kill-{i}" for i in range(80)])
    wait_for("the first model turns", lambda: progress(cluster, killed) >= 20, 60, 0.05)
    second_gpu.kill(signal.SIGKILL)
    assert progress(cluster, killed) < 160
    cluster.wait(killed, timeout=120)  # the other worker, and the broker restoring what the dead one held
    assert_exactly_once(cluster, killed, 80)
