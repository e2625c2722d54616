"""``sa status BATCH --watch``: live counts and a progress bar until the batch ends (no cluster needed)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from structured_agents.cli.main import app
from structured_agents.jobs import JobSpec
from structured_agents.store import SqlStore

cli = CliRunner()


def _jobs(n: int) -> list[JobSpec]:
    return [
        JobSpec(job_id=f"watch-{i}", kind="docstring", path="a.py", qualname=f"f{i}", source_hash="0" * 64)
        for i in range(n)
    ]


def test_watch_refreshes_until_every_run_has_ended(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'sa.db'}"
    monkeypatch.setenv("SA_DATABASE_URL", url)
    with SqlStore(url) as store:
        batch = store.create_batch("docstring", "1.0", "/src")
        jobs = _jobs(4)
        store.add_jobs(batch.id, jobs)

        def work() -> None:  # a worker: one run ends every 0.3 s, the second one fails
            for i, job in enumerate(jobs):
                time.sleep(0.3)
                store.claim(job.job_id)
                store.finish(
                    job.job_id, "failed" if i == 1 else "succeeded", error="boom" if i == 1 else None
                )

        worker = threading.Thread(target=work)
        worker.start()
        started = time.monotonic()
        result = cli.invoke(app, ["status", batch.id, "--watch", "--interval", "0.1"])
        worker.join()

    assert result.exit_code == 0, result.output
    assert time.monotonic() - started >= 1.2  # it waited for the last run
    assert "4/4 ended" in result.output and "1 failed" in result.output and "runs/min" in result.output
    assert "━" in result.output  # the bar


def test_watch_of_an_ended_batch_returns_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'sa.db'}"
    monkeypatch.setenv("SA_DATABASE_URL", url)
    with SqlStore(url) as store:
        batch = store.create_batch("docstring", "1.0", "/src")
        (job,) = _jobs(1)
        store.add_jobs(batch.id, [job])
        store.finish(job.job_id, "cancelled")

    result = cli.invoke(app, ["status", batch.id, "--watch"])

    assert result.exit_code == 0 and "1/1 ended" in result.output and "cancelled" in result.output


def test_watch_of_an_unknown_batch_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'sa.db'}"
    SqlStore(url).close()
    monkeypatch.setenv("SA_DATABASE_URL", url)

    result = cli.invoke(app, ["status", "nope", "--watch"])

    assert result.exit_code == 2 and "nope" in result.output
    missing = cli.invoke(app, ["status", "nope", "--db", f"sqlite:///{tmp_path / 'typo.db'}"])
    assert (
        missing.exit_code == 2 and "no database at" in missing.output and not (tmp_path / "typo.db").exists()
    )
