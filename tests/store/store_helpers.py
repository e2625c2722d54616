"""Builders shared by the store tests."""

from __future__ import annotations

from structured_agents.jobs.spec import JobSpec
from structured_agents.store import Store


def make_jobs(n: int, prefix: str = "j") -> list[JobSpec]:
    """``n`` synthetic jobs with distinct ids."""
    return [
        JobSpec(
            job_id=f"{prefix}{i:06d}",
            kind="docstring",
            path=f"pkg/mod{i % 50}.py",
            qualname=f"func_{i}",
            source_hash="0" * 64,
            inputs={"source": f"def func_{i}():\n    return {i}\n", "start_line": i},
        )
        for i in range(n)
    ]


def start_run(store: Store, job_id: str = "run-1", batch_id: str | None = None) -> str:
    """A new batch with one claimed run; returns the run id."""
    batch = store.create_batch("docstrings", "1.0", "/src", batch_id=batch_id)
    (job,) = make_jobs(1, prefix=job_id)
    store.add_jobs(batch.id, [job])
    assert store.claim(job.job_id) is not None
    return job.job_id
