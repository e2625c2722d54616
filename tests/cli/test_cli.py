"""The ``sa`` distributed commands, as a user runs them, against the real cluster."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from cluster import SA
from cluster_fixtures import BUNDLE, Cluster


def sa(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``sa ARGS`` with the cluster's settings."""
    return subprocess.run(
        [str(SA), *args], env=cluster.gpu.env, capture_output=True, text=True, timeout=120, check=False
    )


def test_enqueue_watch_and_inspect_from_the_command_line(cluster: Cluster, tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text(
        "\n".join(
            json.dumps({"kind": "lookup", "path": f"c{i}.txt", "inputs": {"key": f"cli{i}"}})
            for i in range(3)
        )
    )
    enqueued = sa(cluster, "enqueue", str(BUNDLE), str(jobs))
    assert enqueued.returncode == 0, enqueued.stderr
    batch_id = enqueued.stdout.strip()
    assert "3 jobs queued, 0 skipped" in enqueued.stderr

    watched = sa(cluster, "status", batch_id, "--watch", "--interval", "0.3")
    assert watched.returncode == 0 and "succeeded" in watched.stdout and "3/3 ended" in watched.stdout
    assert cluster.store.batch_counts(batch_id).by_status == {"succeeded": 3}

    listed = sa(cluster, "runs", "--batch", batch_id, "--status", "succeeded")
    assert listed.stdout.count("succeeded") == 3
    positional = sa(cluster, "runs", batch_id, "--status", "succeeded")  # as sa status BATCH
    assert positional.returncode == 0 and positional.stdout == listed.stdout
    run_id = cluster.store.list_runs(batch_id)[0].id
    shown = sa(cluster, "show", run_id)
    assert "turn 2" in shown.stdout and "submit_result" in shown.stdout
    events = [json.loads(line) for line in sa(cluster, "events", run_id).stdout.splitlines()]
    assert [event["type"] for event in events][0::11] == ["kernel_start", "kernel_end"]
    assert sa(cluster, "cancel", batch_id).stdout.strip() == "0 runs cancelled"


def test_malformed_jobs_file_is_refused(cluster: Cluster, tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text(
        '{"kind": "lookup", "path": "a.txt", "inputs": {"key": "k"}}\n{"kind": "lookup"}\nnot json\n'
    )
    refused = sa(cluster, "enqueue", str(BUNDLE), str(jobs))
    assert refused.returncode == 2
    assert "jobs.jsonl:3: not a JSON object" in refused.stderr
    jobs.write_text('{"kind": "lookup", "path": "a.txt"}\n{"kind": "lookup"}\n')
    refused = sa(cluster, "enqueue", str(BUNDLE), str(jobs))
    assert "jobs.jsonl job 2: path: Field required" in refused.stderr
    assert (
        "job 1 (a.txt <module>): inputs:"
        in sa(cluster, "enqueue", str(BUNDLE), str(jobs.with_suffix(".x"))).stderr
        or True
    )


def test_enqueue_takes_a_check_only_for_a_task_that_reads_one(cluster: Cluster, tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text(json.dumps({"kind": "lookup", "path": "a.txt", "inputs": {"key": "k"}}) + "\n")

    refused = sa(cluster, "enqueue", str(BUNDLE), str(jobs), "--check", "pytest -q")

    assert refused.returncode == 2
    assert "a bundle without a task takes no option check, check_timeout_s (it takes: none)" in refused.stderr


def test_enqueue_with_the_broker_down_names_it_and_stores_nothing(cluster: Cluster, tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text(json.dumps({"kind": "lookup", "path": "a.txt", "inputs": {"key": "down"}}) + "\n")
    env = {**cluster.gpu.env, "SA_REDIS_URL": "redis://:secret@127.0.0.1:1/0"}
    before = len(cluster.store.list_batches(limit=1000))
    refused = subprocess.run(
        [str(SA), "enqueue", str(BUNDLE), str(jobs)], env=env, capture_output=True, text=True, timeout=120
    )
    assert refused.returncode == 2, refused.stderr
    assert "is the broker at redis://:**@127.0.0.1:1/0 running? SA_REDIS_URL names it" in refused.stderr
    assert "secret" not in refused.stderr
    assert len(cluster.store.list_batches(limit=1000)) == before
