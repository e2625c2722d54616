"""Enqueue without services running: inputs checked once per shape, yet every bad job named."""

from __future__ import annotations

from pathlib import Path

import pytest
from cluster_fixtures import BUNDLE

from structured_agents.jobs import JobInputError, parse_jobs
from structured_agents.settings import Settings
from structured_agents.store import SqlStore
from structured_agents.workers.celery_app import make_app
from structured_agents.workers.enqueue import enqueue


def test_every_job_of_a_bad_shape_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    inputs = [{"key": "a"}, {"wrong": 1}, {"key": None}, {"key": "b"}, {"wrong": 2}, {"key": ["c"]}]
    jobs = parse_jobs({"kind": "lookup", "path": f"{i}.txt", "inputs": item} for i, item in enumerate(inputs))
    app = make_app(Settings(redis_url="redis://127.0.0.1:1/0"))  # never reached: refused first
    with SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}") as store:
        with pytest.raises(JobInputError) as refused:
            enqueue(store, app, BUNDLE, tmp_path, jobs)
        assert store.list_batches() == []
    message = str(refused.value)
    assert message.startswith("2 of 6 jobs are malformed")
    lines = message.splitlines()[1:]
    assert [line.split(" (")[0] for line in lines] == ["job 2", "job 5"]
    assert all("'key' is undefined" in line for line in lines)
