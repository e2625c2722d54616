"""Real jobs through the real small model: the GPU worker runs the transformers engine on CPU."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cluster import WorkerProcess
from cluster_fixtures import HERE, Cluster

from structured_agents.jobs import parse_jobs
from structured_agents.plugins.registry import get_plugin
from structured_agents.workers.enqueue import enqueue

MODEL_BUNDLE = HERE / "model_bundle"


@pytest.fixture
def model_worker(cluster: Cluster) -> Iterator[WorkerProcess]:
    """The cluster's GPU worker replaced by one decoding with the shipped small model."""
    cluster.gpu.stop()
    env = {**cluster.gpu.env, "SA_ENGINE__NAME": "transformers", "SA_ENGINE__DEVICE": "cpu"}
    env.pop("SA_ENGINE__MODEL", None)
    worker = WorkerProcess("gpu", env, cluster.root / "model-gpu.log")
    try:
        worker.start(timeout=180)
        yield worker
    finally:
        worker.kill()
        cluster.gpu.start()


@pytest.mark.model
def test_real_jobs_finish_with_the_small_model(cluster: Cluster, model_worker: WorkerProcess) -> None:
    jobs = parse_jobs(
        {"kind": "lookup", "path": f"{k}.txt", "inputs": {"key": k}} for k in ("alpha", "beta", "gamma")
    )
    batch_id = enqueue(cluster.store, cluster.app, MODEL_BUNDLE, cluster.root, jobs).batch_id
    cluster.wait(batch_id, timeout=240)
    plugin = get_plugin("function_gemma")
    for run in cluster.store.list_runs(batch_id):
        assert run.status in ("succeeded", "failed"), run
        if run.status == "failed":  # a small model may not submit within two turns, or ramble
            assert run.error is not None, run
            assert "max_turns" in run.error or "cut off at max_new_tokens" in run.error, run.error
        turns = cluster.store.turns(run.id)
        assert 1 <= len(turns) <= 2
        complete = [turn for turn in turns if turn.finish_reason != "length"]
        assert all(plugin.parse_response(turn.raw_text, ())[1] for turn in complete), turns
        kinds = [event.type for event in cluster.store.events(run.id)]
        assert kinds[0] == "kernel_start" and kinds[-1] == "kernel_end" and kinds.count("kernel_end") == 1
    assert (
        max(
            turn.batch_size
            for run in cluster.store.list_runs(batch_id)
            for turn in cluster.store.turns(run.id)
        )
        > 1
    )
