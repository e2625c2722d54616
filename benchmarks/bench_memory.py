"""Memory under load: the workers' and the API's resident memory, and PostgreSQL connections, over a batch.

Run (prints a line per sample every ``--report-every`` seconds, then the JSON)::

    .venv/bin/python benchmarks/bench_memory.py [--runs 10000] [--warmup 1000] [--series FILE]

What runs, all real processes started here: PostgreSQL (``tests/services.py``), redis-server,
one GPU worker (solo pool, its engine batching up to ``--max-batch`` turns) and one CPU worker (prefork,
``--concurrency`` processes, with the beat) as ``sa worker`` subprocesses, and the API service
under uvicorn (``structured_agents.api.app:create_app``) with a bearer token. The batch is the
shipped ``docstring_calls`` bundle (tool calls) over a generated codebase of ``--runs`` undocumented
functions; the GPU worker's engine is the scripted engine of the distributed tests, whose one
turn submits the docstring's parts (``submit_result(description=...)``), so every run renders
the bundle's prompt, decodes, runs the ``.pym`` tool in the sandbox and stores a patch.

Every ``--interval`` seconds, as a dashboard would, this process asks the API for the batch's
counts (``GET /batches/{id}``) and a page of its runs (``GET /runs``), then samples:

* the resident memory (``VmRSS`` of ``/proc/PID/status``, Linux) of every process of the
  workers (their pool children and the sandbox's processes included) and of the API;
* PostgreSQL's connections to the batch's database (``pg_stat_activity``), and each process's
  own connections (its TCP sockets to the server's port, from ``/proc``).

Reported: each process's RSS when ``--warmup`` runs are done and at the end, the growth between
them (end and peak), and the peak connections against the bound the pools allow (SQLAlchemy's
``pool_size + max_overflow`` per process that holds a store, times those processes). Done
when (issue 15): worker and API growth under 10 % after warm-up, connections within the bound.

The machine is shared (2 cores): the numbers are of one run; the growth is a ratio within it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"
sys.path[:0] = [str(TESTS)]  # cluster.py, cluster_fixtures.py, services.py

from cluster import WORKER_SETTINGS, RedisServer, WorkerProcess, free_port, wait_for  # noqa: E402
from cluster_fixtures import write_script  # noqa: E402
from codebase import make_codebase  # noqa: E402
from services import PostgresServer, create_database, start_postgres  # noqa: E402

from structured_agents.settings import Settings  # noqa: E402
from structured_agents.store import SqlStore  # noqa: E402
from structured_agents.workers.celery_app import make_app  # noqa: E402
from structured_agents.workers.enqueue import enqueue  # noqa: E402

TOKEN = "bench-memory-token-0123456789"
GROWTH_LIMIT = 0.10


def rss_kib(pid: int) -> int | None:
    """Resident memory of ``pid`` in KiB (``VmRSS``), None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    line = next((line for line in text.splitlines() if line.startswith("VmRSS:")), None)
    return int(line.split()[1]) if line else None


def descendants(root: int) -> list[int]:
    """``root`` and every process below it (pool children, the sandbox's processes)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])  # the name in parentheses may hold spaces
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return sorted(found)


def command_name(pid: int) -> str:
    """A short name of the process: its command line's first words."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    words = [Path(argv[0].decode()).name, *(arg.decode() for arg in argv[1:3] if arg)]
    return " ".join(words)


def connections_to(port: int, pids: list[int]) -> dict[int, int]:
    """Established TCP connections to ``port`` on localhost held by each of ``pids``."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "01" and int(fields[2].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    counts: dict[int, int] = {}
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        held = 0
        for fd in fds:
            try:  # an fd may close meanwhile (this process's own listing of /proc/PID/fd does)
                link = os.readlink(fd)
            except OSError:
                continue
            held += link.startswith("socket:[") and link[8:-1] in inodes
        if held:
            counts[pid] = held
    return counts


class Sampler:
    """Samples of every watched process's RSS and of the database's connections."""

    def __init__(self, roots: dict[str, int], pg: PostgresServer, database: str) -> None:
        self.roots = roots
        self.pg = pg
        self.database = database
        self.conn = psycopg.connect(
            f"host=127.0.0.1 port={pg.port} user=test dbname={database}", autocommit=True
        )
        self.samples: list[dict[str, Any]] = []

    def sample(self, elapsed: float, done: int) -> dict[str, Any]:
        """One sample: RSS by process, connections (server's count, and by process)."""
        processes: dict[str, dict[str, Any]] = {}
        for role, root in self.roots.items():
            for pid in descendants(root):
                kib = rss_kib(pid)
                if kib is not None:
                    processes[str(pid)] = {"role": role, "name": command_name(pid), "rss_kib": kib}
        row = self.conn.execute(
            "select count(*) from pg_stat_activity where datname = %s and pid <> pg_backend_pid()",
            (self.database,),
        ).fetchone()
        by_pid = connections_to(self.pg.port, [os.getpid(), *map(int, processes)])
        for pid, entry in processes.items():
            entry["pg_connections"] = by_pid.get(int(pid), 0)
        sample = {"t": round(elapsed, 1), "done": done, "pg_connections": row[0] if row else 0}
        sample["pg_holders"] = sorted(by_pid)  # this process (its store) included
        sample["processes"] = processes
        self.samples.append(sample)
        return sample

    def close(self) -> None:
        """Close the sampler's own connection."""
        self.conn.close()


def start_api(env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``uvicorn --factory structured_agents.api.app:create_app`` on a free port; waits until it answers."""
    port = free_port()
    uvicorn = Path(sys.executable).with_name("uvicorn")
    command = [str(uvicorn), "--factory", "structured_agents.api.app:create_app", "--port", str(port)]
    command += ["--log-level", "warning"]
    process = subprocess.Popen(command, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"the API exited:\n{log.read_text(errors='replace')[-2000:]}")
        try:
            return httpx.get(f"{url}/docs", timeout=2).status_code < 500
        except httpx.HTTPError:
            return False

    wait_for("the API", answers, 60)
    return process, url


def progress(sample: dict[str, Any]) -> str:
    """A progress line: runs done, RSS by role, connections."""
    roles: dict[str, int] = {}
    for entry in sample["processes"].values():
        roles[entry["role"]] = roles.get(entry["role"], 0) + entry["rss_kib"]
    rss = " ".join(f"{role}={kib / 1024:.1f}MiB" for role, kib in sorted(roles.items()))
    return f"t={sample['t']:7.1f}s done={sample['done']:6d} {rss} pg={sample['pg_connections']}"


def growth(first: int, last: int) -> float:
    """``last`` over ``first`` minus one, in percent."""
    return round((last - first) / first * 100, 1)


def summarize(samples: list[dict[str, Any]], warm: dict[str, Any], bound: dict[str, Any]) -> dict[str, Any]:
    """RSS at warm-up and at the end by process and role, growth, and connections against the bound."""
    end = samples[-1]
    after = [sample for sample in samples if sample["t"] >= warm["t"]]
    processes: dict[str, Any] = {}
    for pid, entry in end["processes"].items():
        if pid not in warm["processes"]:
            continue  # started after warm-up (a replaced pool child): no baseline
        first = warm["processes"][pid]["rss_kib"]
        peak = max(s["processes"][pid]["rss_kib"] for s in after if pid in s["processes"])
        processes[pid] = {
            "role": entry["role"],
            "name": entry["name"],
            "warm_mib": round(first / 1024, 1),
            "end_mib": round(entry["rss_kib"] / 1024, 1),
            "peak_mib": round(peak / 1024, 1),
            "growth_pct": growth(first, entry["rss_kib"]),
            "peak_growth_pct": growth(first, peak),
            "max_pg_connections": max(
                s["processes"][pid]["pg_connections"] for s in samples if pid in s["processes"]
            ),
        }
    roles: dict[str, Any] = {}
    for role in {entry["role"] for entry in processes.values()}:
        mine = [entry for entry in processes.values() if entry["role"] == role]
        first, last = sum(e["warm_mib"] for e in mine), sum(e["end_mib"] for e in mine)
        roles[role] = {
            "processes": len(mine),
            "warm_mib": round(first, 1),
            "end_mib": round(last, 1),
            "growth_pct": growth(int(first * 1024), int(last * 1024)),
            "max_process_growth_pct": max(e["growth_pct"] for e in mine),
        }
    holders = {pid for s in samples for pid in s["pg_holders"]}
    peak = max(s["pg_connections"] for s in samples)
    per_process = max(e["pg_connections"] for s in samples for e in s["processes"].values())
    return {
        "roles": roles,
        "processes": processes,
        "pg": {
            **bound,
            "processes_with_connections": len(holders),
            "bound": bound["per_process"] * len(holders),
            "peak_connections": peak,
            "peak_per_process": per_process,
            "within_bound": peak <= bound["per_process"] * len(holders)
            and per_process <= bound["per_process"],
        },
        "growth_under_10_pct": all(e["growth_pct"] < GROWTH_LIMIT * 100 for e in processes.values()),
    }


def measure(args: argparse.Namespace, base: Path, pg: PostgresServer) -> dict[str, Any]:
    """Start the cluster and the API, run the batch while sampling, and summarize."""
    database = "bench_memory"
    url = create_database(pg, database)
    redis_server = RedisServer(base)
    redis_server.start()
    script = write_script(base / "script.json", delay_s=args.delay)
    env = {
        **os.environ,
        **WORKER_SETTINGS,
        "SA_ENGINE__MAX_BATCH_SIZE": str(args.max_batch),
        "SA_WORKERS__BATCH_WAIT_S": str(args.batch_wait),
        "SA_WORKERS__VISIBILITY_TIMEOUT_S": "600",  # the tests' 8 s would redeliver queued turns
        "SA_WORKERS__STALE_AFTER_S": "900",
        "SA_DATABASE_URL": url,
        "SA_REDIS_URL": redis_server.url,
        "SA_ENGINE__NAME": "scripted",
        "SA_ENGINE__MODEL": str(script),
        "SA_API__TOKEN": TOKEN,
        "SA_API__ROOTS": json.dumps([str(base)]),
    }
    gpu = WorkerProcess("gpu", env, base / "gpu.log")
    cpu = WorkerProcess(
        "cpu",
        env,
        base / "cpu.log",
        f"--concurrency={args.concurrency}",
        "--beat",
        f"--schedule={base / 'beat'}",
    )
    api: subprocess.Popen[bytes] | None = None
    root = make_codebase(base / "code", args.runs)
    try:
        with SqlStore(url) as store:
            pool = store.engine.pool
            bound = {"pool_size": pool.size(), "max_overflow": pool._max_overflow}  # type: ignore[attr-defined]
            bound["per_process"] = bound["pool_size"] + bound["max_overflow"]
            gpu.start()
            cpu.start()
            api, api_url = start_api(env, base / "api.log")
            assert gpu.process is not None and cpu.process is not None
            roots = {"gpu_worker": gpu.process.pid, "cpu_worker": cpu.process.pid, "api": api.pid}
            started = time.perf_counter()
            app = make_app(Settings(database_url=url, redis_url=redis_server.url))
            batch_id = enqueue(store, app, "docstring_calls", root).batch_id
            enqueue_s = time.perf_counter() - started
            sampler = Sampler(roots, pg, database)
            try:
                samples, warm = poll(args, api_url, batch_id, sampler, started)
            finally:
                sampler.close()
            elapsed = time.perf_counter() - started
            counts = store.batch_counts(batch_id).by_status
    finally:
        if api is not None:
            api.terminate()
            api.wait(15)
        gpu.kill()
        cpu.kill()
        redis_server.stop()
    if args.series:
        args.series.write_text(json.dumps(samples))
    return {
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "batch": {
            "runs": sum(counts.values()),
            "statuses": dict(counts),
            "finished": samples[-1]["done"],
            "complete": samples[-1]["done"] == args.runs,
            "enqueue_s": round(enqueue_s, 1),
        },
        "seconds": round(elapsed, 1),
        "samples": len(samples),
        "warm_at": {"t": warm["t"], "done": warm["done"]},
        **summarize(samples, warm, bound),
    }


def poll(
    args: argparse.Namespace, api_url: str, batch_id: str, sampler: Sampler, started: float
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Ask the API for the batch's counts and a page of runs every ``--interval`` s, sampling
    after each answer, until the batch is done; returns the samples and the warm-up sample."""
    warm: dict[str, Any] | None = None
    offset = 0
    last_report = 0.0
    with httpx.Client(base_url=api_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as client:
        while True:
            tick = time.perf_counter()
            batch = client.get(f"/batches/{batch_id}").raise_for_status().json()
            page = client.get("/runs", params={"batch_id": batch_id, "limit": 100, "offset": offset})
            offset = (offset + 100) % max(batch["total"], 1)
            page.raise_for_status()
            finished = batch["total"] - batch["counts"].get("queued", 0) - batch["counts"].get("running", 0)
            sample = sampler.sample(tick - started, finished)
            if warm is None and finished >= args.warmup:
                warm = sample
            if tick - last_report >= args.report_every:
                last_report = tick
                print(progress(sample), flush=True)
            if batch["done"] or tick - started > args.timeout:
                return sampler.samples, warm or sampler.samples[0]
            time.sleep(max(0.0, args.interval - (time.perf_counter() - tick)))


def main() -> None:
    """Run the measurement and print it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000, help="jobs in the batch")
    parser.add_argument("--warmup", type=int, default=0, help="runs done before the baseline (0: a tenth)")
    parser.add_argument(
        "--delay", type=float, default=0.01, help="scripted engine: seconds per generate call"
    )
    parser.add_argument("--max-batch", type=int, default=32, help="SA_ENGINE__MAX_BATCH_SIZE")
    parser.add_argument("--batch-wait", type=float, default=0.05, help="SA_WORKERS__BATCH_WAIT_S")
    parser.add_argument("--concurrency", type=int, default=2, help="processes of the CPU worker")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between samples")
    parser.add_argument("--report-every", type=float, default=30.0, help="seconds between progress lines")
    parser.add_argument(
        "--timeout", type=float, default=7200.0, help="seconds after which to report what was measured"
    )
    parser.add_argument("--series", type=Path, help="write every sample to this JSON file")
    args = parser.parse_args()
    args.warmup = args.warmup or max(args.runs // 10, 1)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the services on the way out
    base = Path(tempfile.mkdtemp(prefix="sa-bench-memory-"))
    pg = start_postgres(base)
    try:
        report = measure(args, base, pg)
    finally:
        pg.stop()
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
