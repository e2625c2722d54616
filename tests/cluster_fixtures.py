"""The distributed cluster of the tests (tests/workers, tests/api, tests/cli): PostgreSQL,
redis-server, one GPU and one CPU worker. The root conftest imports the ``cluster`` fixture, so
one cluster serves the whole session, whichever of those folders run.

One cluster serves the whole run (starting it takes a few seconds); each test works in
its own batch. Tests that kill a worker or restart Redis start it again before they return.
The GPU worker plays a turn-keyed script (``SA_ENGINE__NAME=scripted``): every run looks a key
up, then submits; prompts with ``SLOW`` use a tool that sleeps, prompts with ``POISON`` get an
empty script (their first model turn always fails), prompts with ``CRASH`` call a tool that
kills its worker process, prompts with ``COUNTED`` a slow tool that notes each execution in the
workspace. The CPU worker plays the same script for agents run as tools
(``SA_WORKERS__AGENT_ENGINE__NAME=scripted``).
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from celery import Celery

sys.path.insert(0, str(Path(__file__).resolve().parent / "workers"))  # the bundle's dist_tools

from cluster import WORKER_SETTINGS, RedisServer, WorkerProcess, wait_for
from services import PostgresServer, create_database

from structured_agents.jobs import parse_jobs
from structured_agents.plugins.registry import get_plugin
from structured_agents.settings import Settings
from structured_agents.store import SqlStore, Store
from structured_agents.types import ToolCall
from structured_agents.workers.celery_app import make_app
from structured_agents.workers.enqueue import enqueue

HERE = Path(__file__).resolve().parent / "workers"
"""tests/workers: the cluster's bundles and the tools they import."""
BUNDLE = HERE / "bundle"


SCRIPTED_DOCSTRING = "Do what the name says."
TEAM_MARKER = "(a team run: docstring_team)"
"""Text only the docstring_team bundle's system prompt has."""
SUMMARIZER_MARKER = "(the team's summarizer)"
"""Text only the prompt of its summarizer agent (run as a tool, in the tools worker) has."""
SCRIPTED_SUMMARY = "It does what its name says."
DOCSTRING_MARKER = "You write docstrings for Python code. Read the code"
"""Text only the shipped docstring_calls bundle's system prompt has."""
NATIVE_MARKER = "# Docstrings say what each definition does, in the words of its code."
"""The shipped docstring bundle's system prompt, as its plugin (python_docstring) shows it."""
LINT_MARKER = "You review fixes for the findings ruff's safe fixes leave in"
"""Text of the shipped lint bundle's prompts: its scripted model accepts fix 1, then submits."""


def write_script(path: Path, *, delay_s: float = 0.05) -> Path:
    """The workers' script: look up, then submit (a slow lookup for SLOW, nothing for POISON,
    a worker-killing lookup for CRASH, a slow lookup noting its executions for COUNTED, a
    docstring for the shipped docstring bundles' prompts, fix 1 for the lint bundle's; for
    docstring_team's, ask the summarizer and the style guide first, and the summarizer submits a
    summary)."""
    plugin = get_plugin("function_gemma")
    submit = plugin.render_tool_calls([ToolCall("submit_result", {"summary": "done"})], ())
    lookup = plugin.render_tool_calls([ToolCall("lookup", {"key": "abc"})], ())
    slow = plugin.render_tool_calls([ToolCall("slow_lookup", {"key": "abc", "seconds": 2.5})], ())
    crash = plugin.render_tool_calls([ToolCall("crashing_lookup", {"key": "abc"})], ())
    counted = plugin.render_tool_calls([ToolCall("counted_lookup", {"key": "abc", "seconds": 2.5})], ())
    docstring = plugin.render_tool_calls([ToolCall("submit_result", {"description": SCRIPTED_DOCSTRING})], ())
    accept = plugin.render_tool_calls([ToolCall("accept_fix", {"id": 1})], ())
    decided = plugin.render_tool_calls([ToolCall("submit_result", {})], ())
    team = [plugin.render_tool_calls([ToolCall(name, {})], ()) for name in ("summarize_code", "style_rules")]
    summary = plugin.render_tool_calls([ToolCall("submit_summary", {"summary": SCRIPTED_SUMMARY})], ())
    team_submit = plugin.render_tool_calls(
        [ToolCall("submit_result", {"description": SCRIPTED_DOCSTRING})], ()
    )
    script = {
        "turns": [lookup, submit],
        "delay_s": delay_s,
        "when_prompt_contains": {
            "SLOW": [slow, submit],
            "POISON": [],
            "CRASH": [crash, submit],
            "COUNTED": [counted, submit],
            DOCSTRING_MARKER: [docstring],
            NATIVE_MARKER: [f'{SCRIPTED_DOCSTRING}"""'],  # the docstring written, then closed
            LINT_MARKER: [accept, decided],
            TEAM_MARKER: [*team, team_submit],
            SUMMARIZER_MARKER: [summary],
        },
    }
    path.write_text(json.dumps(script), encoding="utf-8")
    return path


@dataclass
class Cluster:
    """Handles on the running services, plus helpers to enqueue and wait."""

    store: Store
    app: Celery
    redis: RedisServer
    gpu: WorkerProcess
    cpu: WorkerProcess
    root: Path
    workers: list[WorkerProcess] = field(default_factory=list)
    postgres: PostgresServer | None = None
    """The PostgreSQL server of the cluster's database (``pg_stop`` and ``pg_start`` of
    ``cluster.py`` take it down and bring it back)."""

    def enqueue(self, keys: list[str]) -> str:
        """A batch of one job per key; returns its id."""
        jobs = parse_jobs({"kind": "lookup", "path": f"{key}.txt", "inputs": {"key": key}} for key in keys)
        return enqueue(self.store, self.app, BUNDLE, self.root, jobs).batch_id

    def wait(self, batch_id: str, timeout: float = 90) -> None:
        """Wait until no run of the batch is queued or running."""
        wait_for(f"batch {batch_id} to finish", lambda: self.store.batch_counts(batch_id).done, timeout, 0.5)

    def rows(self, sql: str, **params: Any) -> list[Any]:
        """Rows of a query on the cluster's database."""
        from sqlalchemy import text

        with self.store.engine.connect() as conn:
            return list(conn.execute(text(sql), params))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory, pg_server: PostgresServer) -> Iterator[Cluster]:
    """Database, broker and one worker of each kind, all real processes."""
    base = tmp_path_factory.mktemp("cluster")
    database_url = create_database(pg_server)
    redis_server = RedisServer(base)
    redis_server.start()
    env = {
        **os.environ,
        **WORKER_SETTINGS,
        "SA_DATABASE_URL": database_url,
        "SA_REDIS_URL": redis_server.url,
        "SA_ENGINE__NAME": "scripted",
        "SA_ENGINE__MODEL": str(write_script(base / "script.json")),
        "SA_WORKERS__AGENT_ENGINE__NAME": "scripted",  # the tools worker's engine for agents as tools
        "SA_WORKERS__AGENT_ENGINE__MODEL": str(base / "script.json"),
        "SA_WORKERS__METRICS_PORT": str(_free_port()),  # the llm worker's /metrics
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    gpu = WorkerProcess("gpu", env, base / "gpu.log")
    cpu = WorkerProcess(
        "cpu", env, base / "cpu.log", "--concurrency=2", "--beat", f"--schedule={base / 'beat'}"
    )
    store = SqlStore(database_url)
    settings = Settings(database_url=database_url, redis_url=redis_server.url)
    try:
        gpu.start()
        cpu.start()
        yield Cluster(store, make_app(settings), redis_server, gpu, cpu, base, postgres=pg_server)
    finally:
        for worker in (gpu, cpu):
            worker.kill()
        redis_server.stop()
        store.close()
