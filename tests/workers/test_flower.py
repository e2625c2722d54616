"""Flower over the test cluster: the workers and every kind of step show up, live, with their states."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest
from cluster import free_port, wait_for
from cluster_fixtures import Cluster


@pytest.fixture
def flower(cluster: Cluster) -> Iterator[str]:
    """Flower on a free port, reading the cluster's broker; its base URL."""
    port = free_port()
    env = {**cluster.gpu.env, "FLOWER_UNAUTHENTICATED_API": "true"}
    log = (cluster.root / "flower.log").open("ab")
    command = [sys.executable, "-m", "celery", "-A", "structured_agents.workers.celery_app", "flower"]
    process = subprocess.Popen(
        [*command, f"--port={port}", "--address=127.0.0.1"], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"

    def hears_every_worker() -> bool:
        # Flower's event receiver subscribes some time after its HTTP API answers, and task events
        # sent before then are lost to it. Workers' heartbeats (every 2 s) in its event state show
        # that it is listening.
        try:
            alive = httpx.get(f"{url}/api/workers?status=1", timeout=5).json()
        except (httpx.HTTPError, ValueError):
            return False
        names = [name for name, up in alive.items() if up]
        return any(n.startswith("gpu-") for n in names) and any(n.startswith("cpu-") for n in names)

    try:
        wait_for("flower to hear every worker's heartbeat", hears_every_worker, 60, 0.5)
        yield url
    finally:
        process.terminate()
        process.wait(15)
        log.close()


def test_flower_shows_the_workers_and_the_steps_of_a_batch(cluster: Cluster, flower: str) -> None:
    batch_id = cluster.enqueue(["flower-1", "flower-2"])
    cluster.wait(batch_id)

    def tasks() -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for task in httpx.get(f"{flower}/api/tasks", timeout=5).json().values():
            found.setdefault(task["name"] or "", set()).add(task["state"])
        return found

    wanted = {"sa.control.dispatch", "sa.control.start_runs", "sa.llm.turn", "sa.tools.call"}
    wait_for("flower to see every kind of step", lambda: wanted <= set(tasks()), 30, 0.5)
    seen = tasks()
    assert all(seen[name] == {"SUCCESS"} for name in wanted), seen
    every = httpx.get(f"{flower}/api/tasks", timeout=5).json().values()
    turns = [task for task in every if task["name"] == "sa.llm.turn"]
    assert turns and all(task["received"] and task["args"] for task in turns), turns
    assert None not in {task["name"] for task in every}
    workers = httpx.get(f"{flower}/api/workers?refresh=1", timeout=30).json()
    assert any(name.startswith("gpu-") for name in workers) and any(
        name.startswith("cpu-") for name in workers
    )
    gpu = next(info for name, info in workers.items() if name.startswith("gpu-"))
    assert gpu["stats"]["total"].get("sa.llm.turn", 0) >= 2  # the model worker's processed count
