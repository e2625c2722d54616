"""The compose stack as a user runs it: ``docker-compose --profile cpu up``, then a batch through it.

The module brings the CPU profile up with real Docker (scripts/docker.sh installs Docker when it
is missing and builds local base images when no image registry answers), waits on the health
checks and the migrations, and until Flower hears both workers (the model worker is ready once
it has converted and loaded the shipped model). It then enqueues the docstring bundle over a
copy of the sample project without its ``geometry`` package (the five targets of ``utils.py``:
the stack is what is under test here; the whole project runs on the model in
``tests/runner/test_model_e2e.py``), mounted as ``/code``, through the API with its bearer token, and
waits until the batch has finished on the real small model. The tests check what the stack
recorded: the runs and results in PostgreSQL, the ``run_summary`` view, every run ended exactly
once, and what Flower saw behind its login. Everything is taken down, volumes included, whether
the tests pass or not. When Docker cannot run here the tests say why: they fail under
``CI=true`` and skip elsewhere.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from hashlib import sha1
from pathlib import Path
from typing import Any

import httpx
import pytest
from cluster import free_port, wait_for
from compose_stack import (
    PROJECT_PREFIX,
    REPO,
    TIMINGS,
    ComposeStack,
    base_images,
    docker_problem,
    remove_abandoned,
)

pytestmark = pytest.mark.compose

SAMPLE = REPO / "tests" / "fixtures" / "sample_project"
FLOWER_USER = "flower"
STEP_KINDS = {"sa.control.start_runs", "sa.control.dispatch", "sa.llm.turn", "sa.tools.call"}
"""Celery tasks every docstring run goes through."""

WORKERS_READY_S = 900
"""Longest wait for both workers: the model worker converts the shipped model on first start."""
BATCH_S = 2400
"""Longest wait for the batch on the real model (measured: 12.5 min for the whole sample project
at n=4 on a loaded 2-core machine; its five targets take a fraction of that)."""


@dataclass
class Running:
    """The stack, up, with what the tests need to talk to it."""

    stack: ComposeStack
    api: httpx.Client
    flower: str
    flower_login: tuple[str, str]
    codebase: Path


@dataclass
class Finished:
    """The sample project's batch, done."""

    running: Running
    batch_id: str
    queued: int


class Phase:
    """Times a phase of the module into TIMINGS (shown at the end of the session)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        self.start = time.monotonic()

    def __exit__(self, *_: object) -> None:
        TIMINGS[self.name] = time.monotonic() - self.start


def _codebase() -> Path:
    """A copy of the sample project, without its geometry package, the containers' user (uid
    1000) can read."""
    root = Path(tempfile.mkdtemp(prefix="sa-compose-code-"))
    root.chmod(0o755)
    shutil.copytree(SAMPLE, root / "project", ignore=shutil.ignore_patterns("geometry"))
    return root / "project"


def _flower_workers(running: Running) -> dict[str, bool]:
    try:
        answer = httpx.get(f"{running.flower}/api/workers?status=1", auth=running.flower_login, timeout=10)
        return dict(answer.json()) if answer.status_code == 200 else {}
    except (httpx.HTTPError, ValueError):
        return {}


def _both_workers_heard(running: Running) -> bool:
    # Flower's event receiver starts some time after its HTTP API answers, and task events sent
    # before then are lost to it: heartbeats of both workers show it is listening.
    alive = [name for name, up in _flower_workers(running).items() if up]
    return any(n.startswith("gpu-") for n in alive) and any(n.startswith("cpu-") for n in alive)


@pytest.fixture(scope="module")
def running() -> Iterator[Running]:
    """The CPU profile, built, up, healthy, migrated, with both workers heard by Flower."""
    with Phase("docker ready (install, dockerd)"):
        problem = docker_problem()
    if problem is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(problem)
        pytest.skip(problem)
    token, flower_login = secrets.token_urlsafe(24), (FLOWER_USER, secrets.token_urlsafe(16))
    api_port, flower_port = free_port(), free_port()
    codebase = _codebase()
    with Phase("base images"):
        variables = base_images()
    variables |= {
        "SA_IMAGE": f"structured-agents-test-{sha1(str(REPO).encode()).hexdigest()[:8]}",
        "TORCH_INDEX_URL": os.environ.get("TORCH_INDEX_URL", ""),
        "CODEBASE": str(codebase),
        "SA_API_PORT": f"127.0.0.1:{api_port}",
        "SA_FLOWER_PORT": f"127.0.0.1:{flower_port}",
        "FLOWER_BASIC_AUTH": ":".join(flower_login),
        "SA_API__TOKEN": token,
    }
    remove_abandoned(variables)
    stack = ComposeStack(f"{PROJECT_PREFIX}{os.getpid()}", variables)
    api = httpx.Client(
        base_url=f"http://127.0.0.1:{api_port}", headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    running = Running(stack, api, f"http://127.0.0.1:{flower_port}", flower_login, codebase)
    try:
        with Phase("build images (app, model)"):
            stack.compose("build", "migrations", "cpu-model-worker", timeout=2400)
        with Phase("up -d"):
            stack.compose("up", "-d", timeout=600)
        with Phase("api healthy, migrations done"):
            wait_for("the API's health check", lambda: stack.healthy("api"), 300, 2)
        migrations = stack.state("migrations")
        assert (migrations.get("Status"), migrations.get("ExitCode")) == ("exited", 0), migrations
        with Phase("both workers heard by flower"):
            wait_for("Flower to hear both workers", lambda: _both_workers_heard(running), WORKERS_READY_S, 2)
        yield running
    finally:
        api.close()
        with Phase("down --volumes"):
            log = Path(tempfile.gettempdir()) / f"{stack.project}.log"
            log.write_text(stack.logs(), encoding="utf-8")
            print(f"compose logs: {log}")
            stack.down()
            shutil.rmtree(codebase.parent, ignore_errors=True)


@pytest.fixture(scope="module")
def finished(running: Running) -> Finished:
    """The docstring bundle over the codebase, enqueued through the API and finished."""
    with Phase("batch (utils.py of the sample project, real model)"):
        answer = running.api.post("/batches", json={"bundle": "/bundles/docstring", "root": "/code"})
        assert answer.status_code == 201, answer.text
        created = answer.json()
        batch_id = created["batch_id"]
        wait_for(
            "the batch to finish", lambda: running.api.get(f"/batches/{batch_id}").json()["done"], BATCH_S, 5
        )
    return Finished(running, batch_id, created["queued"])


def _rows(finished: Finished, query: str) -> list[dict[str, Any]]:
    return finished.running.stack.sql(query.replace(":batch", f"'{finished.batch_id}'"))


def test_the_api_wants_its_token(running: Running) -> None:
    url = f"{running.api.base_url}/runs?batch_id=none"
    assert httpx.get(url, timeout=30).status_code == 401
    assert httpx.get(url, headers={"Authorization": "Bearer wrong"}, timeout=30).status_code == 401
    assert running.api.get("/runs?batch_id=none").status_code == 404


def test_every_job_of_the_sample_project_ran_once_and_ended(finished: Finished) -> None:
    batch = finished.running.api.get(f"/batches/{finished.batch_id}").json()
    assert finished.queued == 5 and batch["total"] == finished.queued  # the five targets of utils.py
    assert batch["status"] == "finished"
    runs = _rows(finished, "SELECT * FROM runs WHERE batch_id = :batch")
    assert len(runs) == finished.queued
    for run in runs:
        assert run["status"] in ("succeeded", "failed"), run
        assert run["attempts"] >= 1 and run["started_at"] and run["finished_at"], run
        assert (run["status"] == "failed") == bool(run["error"]), run
        assert (finished.running.codebase / run["target_path"].removeprefix("/code/")).is_file(), run
    per_run = _rows(
        finished,
        "SELECT r.id,"
        " (SELECT count(*) FROM events e WHERE e.run_id = r.id AND e.type = 'kernel_start') AS starts,"
        " (SELECT count(*) FROM events e WHERE e.run_id = r.id AND e.type = 'kernel_end') AS ends,"
        " (SELECT count(*) - count(DISTINCT t.turn) FROM turns t WHERE t.run_id = r.id) AS repeated_turns"
        " FROM runs r WHERE r.batch_id = :batch",
    )
    for run in per_run:
        assert (run["starts"], run["ends"], run["repeated_turns"]) == (1, 1, 0), run


def test_every_succeeded_run_proposes_a_change_and_the_api_serves_the_results(finished: Finished) -> None:
    stored = _rows(
        finished,
        "SELECT s.run_id, s.target_path, s.diff, s.status, r.status AS run_status, r.target_path AS run_path"
        " FROM results s JOIN runs r ON r.id = s.run_id WHERE r.batch_id = :batch",
    )
    succeeded = _rows(finished, "SELECT id FROM runs WHERE batch_id = :batch AND status = 'succeeded'")
    assert {run["id"] for run in succeeded} <= {result["run_id"] for result in stored}
    for result in stored:
        assert result["target_path"] == result["run_path"] and result["diff"], result
    served = finished.running.api.get(f"/batches/{finished.batch_id}/results")
    assert served.status_code == 200, served.text
    assert sorted((r["run_id"], r["diff"], r["status"]) for r in served.json()) == sorted(
        (r["run_id"], r["diff"], r["status"]) for r in stored
    )


def test_run_summary_agrees_with_the_tables(finished: Finished) -> None:
    summary = {
        row["run_id"]: row for row in _rows(finished, "SELECT * FROM run_summary WHERE batch_id = :batch")
    }
    counted = _rows(
        finished,
        "SELECT r.id, r.status, (SELECT count(*) FROM turns t WHERE t.run_id = r.id) AS turns,"
        " (SELECT count(*) FROM tool_calls c WHERE c.run_id = r.id) AS tool_calls,"
        " (SELECT s.status FROM results s WHERE s.run_id = r.id) AS result_status"
        " FROM runs r WHERE r.batch_id = :batch",
    )
    assert set(summary) == {row["id"] for row in counted}
    for row in counted:
        seen = summary[row["id"]]
        assert seen["turns"] >= 1 and seen["duration_s"] >= 0, seen
        assert (seen["status"], seen["turns"], seen["tool_calls"], seen["result_status"]) == (
            row["status"],
            row["turns"],
            row["tool_calls"],
            row["result_status"],
        )


def test_flower_wants_its_login_and_saw_the_workers_and_the_steps(finished: Finished) -> None:
    flower, login = finished.running.flower, finished.running.flower_login
    assert httpx.get(f"{flower}/api/workers", timeout=10).status_code == 401
    assert httpx.get(f"{flower}/api/workers", auth=(login[0], "wrong"), timeout=10).status_code == 401
    tasks = httpx.get(f"{flower}/api/tasks", auth=login, timeout=30).json().values()
    succeeded = {task["name"] for task in tasks if task["state"] == "SUCCESS"}
    assert succeeded >= STEP_KINDS, succeeded
    workers = httpx.get(f"{flower}/api/workers?refresh=1", auth=login, timeout=60).json()
    assert any(n.startswith("gpu-") for n in workers) and any(n.startswith("cpu-") for n in workers), workers
