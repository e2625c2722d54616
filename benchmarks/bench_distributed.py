"""Distributed benchmark: runs per minute through the queue workers vs the embedded runner.

Run (prints a table, then the JSON)::

    .venv/bin/python benchmarks/bench_distributed.py [--jobs 300] [--delay 0.05]
        [--flush-every 32] [--enqueue-jobs 10000]

Both paths run the same jobs, the shipped ``docstring_calls`` bundle over a generated codebase (one
job per function without a docstring), on the same engine: the turn-keyed scripted engine,
whose single turn submits a docstring, sleeping ``--delay`` seconds per ``generate`` call
whatever its batch size, as a GPU decoding a batch roughly does. Both store every run, event
and result in PostgreSQL (a database each). What is measured:

* ``distributed``: redis-server, one GPU worker (its engine's batch ``--flush-every`` rows,
  ``SA_ENGINE__MAX_BATCH_SIZE``; ``--flush-interval`` is ``SA_WORKERS__BATCH_WAIT_S``)
  and one CPU worker (prefork, 2 processes), as subprocesses; wall time from enqueue to the
  last run finished, runs per minute, mean batch size at the engine (``turns.batch_size``),
  and the GPU worker's ``celery inspect model_turns``: ``occupancy``, the share of the
  engine's steps (here: flushes) at full batch among those taken while a full batch of turns
  was waiting in the worker (see ``structured_agents.engines.occupancy``).
* ``embedded``: :class:`~structured_agents.runner.EmbeddedRunner` in this process, with
  ``--flush-every`` concurrent agent loops sharing one ``BatchingEngine``.
* ``enqueue``: ``--enqueue-jobs`` jobs discovered, validated, bulk-inserted and dispatched:
  ``enqueue_s`` covers the whole path, ``structured_agents.workers.enqueue.enqueue`` (which
  ends by sending the batch's ``dispatch`` message) then the fan-out that message's task runs
  (``dispatch_batch``: the ``start_runs`` messages, up to 500 runs each), with no worker
  consuming; ``parts_s`` splits it, ``starts_waiting`` counts the start messages in the queue.

The machine is shared (2 cores): compare numbers from the same run only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"
sys.path[:0] = [str(TESTS), str(TESTS / "workers")]  # services.py, cluster.py, the bundle's dist_tools

from cluster import WORKER_SETTINGS, RedisServer, WorkerProcess, wait_for  # noqa: E402
from codebase import make_codebase  # noqa: E402
from services import PostgresServer, create_database, start_postgres  # noqa: E402

from structured_agents.bundles import load_bundle  # noqa: E402
from structured_agents.engines.script_file import load_script  # noqa: E402
from structured_agents.plugins.registry import get_plugin  # noqa: E402
from structured_agents.runner import EmbeddedRunner  # noqa: E402
from structured_agents.settings import Settings  # noqa: E402
from structured_agents.store import SqlStore  # noqa: E402
from structured_agents.types import ToolCall  # noqa: E402
from structured_agents.workers.celery_app import make_app  # noqa: E402
from structured_agents.workers.constants import CONTROL_QUEUE  # noqa: E402
from structured_agents.workers.dispatch import dispatch_batch, queue_length  # noqa: E402
from structured_agents.workers.enqueue import enqueue  # noqa: E402

BUNDLE = HERE.parent / "bundles" / "docstring_calls"


def write_script(path: Path, delay_s: float) -> Path:
    """One turn: submit a docstring (the docstring_calls bundle's ``submit_result``: its parts)."""
    reply = get_plugin("function_gemma").render_tool_calls(
        [ToolCall("submit_result", {"description": "Return x plus a constant."})], ()
    )
    path.write_text(json.dumps({"turns": [reply], "delay_s": delay_s}))
    return path


def distributed(pg: PostgresServer, env: dict[str, str], base: Path, root: Path) -> dict[str, Any]:
    """The jobs under ``root`` through one GPU and one CPU worker."""
    url = create_database(pg)
    (base / "redis-runs").mkdir()
    redis_server = RedisServer(base / "redis-runs")
    redis_server.start()
    env = {**env, "SA_DATABASE_URL": url, "SA_REDIS_URL": redis_server.url}
    gpu = WorkerProcess("gpu", env, base / "gpu.log")
    cpu = WorkerProcess("cpu", env, base / "cpu.log", "--concurrency=2")
    try:
        with SqlStore(url) as store:
            gpu.start()
            cpu.start()
            app = make_app(Settings(database_url=url, redis_url=redis_server.url))
            started = time.perf_counter()
            batch_id = enqueue(store, app, BUNDLE, root).batch_id
            wait_for("the batch", lambda: store.batch_counts(batch_id).done, 1800, 0.2)
            elapsed = time.perf_counter() - started
            runs = store.list_runs(batch_id)
            sizes = [turn.batch_size for run in runs for turn in store.turns(run.id)]
            counts = store.batch_counts(batch_id).by_status
            replies = app.control.broadcast("model_turns", reply=True, timeout=5)
            feed = next(stats for reply in replies for stats in reply.values() if stats)
    finally:
        gpu.kill()
        cpu.kill()
        redis_server.stop()
    mean = sum(sizes) / len(sizes)
    return {
        "runs": len(runs),
        "statuses": dict(counts),
        "seconds": round(elapsed, 2),
        "runs_per_minute": round(len(runs) / elapsed * 60, 1),
        "mean_batch_size": round(mean, 2),
        "generate_calls": round(len(sizes) / mean),
        "occupancy": feed["engine"]["occupancy"],
        "engine": feed["engine"],
    }


def embedded(
    pg: PostgresServer, script: Path, root: Path, flush_every: int, flush_interval: float
) -> dict[str, Any]:
    """The same jobs with the embedded runner in this process."""
    bundle = load_bundle(BUNDLE)
    try:
        jobs = bundle.discover_jobs(root)
        with SqlStore(create_database(pg)) as store:
            runner = EmbeddedRunner(
                bundle, load_script(script), store, concurrency=flush_every, batch_wait_s=flush_interval
            )
            started = time.perf_counter()
            summary = asyncio.run(runner.run(root, jobs))
            elapsed = time.perf_counter() - started
    finally:
        bundle.close()
    sizes = summary.batch_sizes
    return {
        "runs": summary.ran,
        "statuses": {"succeeded": summary.succeeded, "failed": summary.failed},
        "seconds": round(elapsed, 2),
        "runs_per_minute": round(summary.ran / elapsed * 60, 1),
        "mean_batch_size": round(sum(sizes) / len(sizes), 2),
        "generate_calls": len(sizes),
    }


def enqueue_rate(pg: PostgresServer, base: Path, root: Path) -> dict[str, Any]:
    """The whole path from a codebase to runs whose starts wait in the broker, no worker running:
    ``enqueue`` (discover, validate, insert, the ``dispatch`` message), then the fan-out that
    message's task does (``dispatch_batch``: the queued runs' ``start_runs`` messages)."""
    (base / "redis-enqueue").mkdir()
    redis_server = RedisServer(base / "redis-enqueue")
    redis_server.start()
    url = create_database(pg)
    try:
        with SqlStore(url) as store:
            app = make_app(Settings(database_url=url, redis_url=redis_server.url))
            started = time.perf_counter()
            done = enqueue(store, app, BUNDLE, root)
            enqueued = time.perf_counter()
            sent = dispatch_batch(store, app, done.batch_id)
            dispatched = time.perf_counter()
            waiting = queue_length(app, CONTROL_QUEUE) - 1  # the starts, less the dispatch message
    finally:
        redis_server.stop()
    return {
        "jobs": done.queued,
        "enqueue_s": round(dispatched - started, 2),
        "enqueue_jobs_per_s": round(done.queued / (dispatched - started)),
        "parts_s": {"enqueue": round(enqueued - started, 2), "dispatch": round(dispatched - enqueued, 2)},
        "dispatch_messages": sent,
        "dispatch_messages_per_s": round(sent / (dispatched - enqueued)),
        "starts_waiting": waiting,
    }


def main() -> None:
    """Run the three measurements and print them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--delay", type=float, default=0.05, help="seconds per generate call")
    parser.add_argument("--flush-every", type=int, default=32, help="the engine's batch size")
    parser.add_argument("--flush-interval", type=float, default=0.05, help="seconds to wait for a batch")
    parser.add_argument("--enqueue-jobs", type=int, default=10_000)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="sa-bench-"))
    script = write_script(base / "script.json", args.delay)
    env = {
        **os.environ,
        **WORKER_SETTINGS,
        "SA_ENGINE__MAX_BATCH_SIZE": str(args.flush_every),  # the engine's batch (rows at once)
        "SA_WORKERS__BATCH_WAIT_S": str(args.flush_interval),
        "SA_ENGINE__NAME": "scripted",
        "SA_ENGINE__MODEL": str(script),
    }
    pg = start_postgres(base)
    try:
        root = make_codebase(base / "code", args.jobs)
        report = {
            "config": vars(args),
            "distributed": distributed(pg, env, base, root),
            "embedded": embedded(pg, script, root, args.flush_every, args.flush_interval),
            "enqueue": enqueue_rate(pg, base, make_codebase(base / "big", args.enqueue_jobs)),
        }
    finally:
        pg.stop()
        shutil.rmtree(base, ignore_errors=True)
    for name in ("distributed", "embedded", "enqueue"):
        print(f"{name:12} " + "  ".join(f"{k}={v}" for k, v in report[name].items()))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
