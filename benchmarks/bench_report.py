"""Report benchmark: how long ``sa report`` takes to build the page of a 10,000-run batch.

Run (prints a table, then the JSON)::

    .venv/bin/python benchmarks/bench_report.py [--runs 10000] [--other-runs 2000]
        [--dialect sqlite|postgresql|both] [--repeat 3] [--out report-bench.html]

Each store (a SQLite file; a throwaway PostgreSQL server from ``tests/services.py``) is filled
with a synthetic batch of the shapes a real one has: ``--runs`` runs by 16 agent loops (about
half an hour for 10,000), 1 to 4 turns each with batch sizes of 1 to 16, calls of four tools (a
few percent of them errors), 5 % of runs failed with one of six reasons, a proposed diff per succeeded run,
and the observer events of every run (about 11 per run); plus ``--other-runs`` runs of another
batch, which the report must leave out. Rows are bulk-inserted through the store's engine (the
benchmark's loader; the report reads only through the store); PostgreSQL is then analyzed, as
autovacuum does soon after tables grow.

What is timed, per dialect, as medians of ``--repeat`` (wall seconds, and CPU seconds of this
process and its children, which a loaded machine inflates less): ``list runs``
(``Store.list_runs`` of the whole batch, the baseline the ratios are against), the report's
stages (``load`` the records through the store, ``figures``, ``charts`` with matplotlib, ``page``
with Jinja2), ``build_report`` as a whole, and ``sa report BATCH -o FILE`` as a user runs it in a
new process (interpreter start and imports included). The goal: under 10 s for 10,000 runs.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SA = Path(sys.executable).with_name("sa")
sys.path.insert(0, str(HERE.parent / "tests"))  # services.py

from services import create_database, start_postgres  # noqa: E402
from sqlalchemy import insert  # noqa: E402

from structured_agents.report import build_report, compute_figures, draw_charts, load_report_data  # noqa: E402
from structured_agents.report.page import render_page  # noqa: E402
from structured_agents.store import SqlStore  # noqa: E402
from structured_agents.store.models import (  # noqa: E402
    BatchRow,
    EventRow,
    ResultRow,
    RunRow,
    ToolCallRow,
    TurnRow,
)

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
TOOLS = {"read_type_hints": 0.02, "list_files": 0.01, "read_file": 0.05, "submit_result": 0.08}
"""Tool name: error rate."""
REASONS = [
    "the agent did not submit a result (the run ended by max_turns)",
    "EngineError: generate failed: CUDA out of memory",
    "ToolExecutionError: read_file: no such file",
    "PymLimitError: submit_result ran out of time (2.0 s)",
    "KernelError: the model called no tool",
    "StoreError: record turn failed: OperationalError: database is locked",
]
CHUNK = 2000


def _chunks(rows: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    for start in range(0, len(rows), CHUNK):
        yield rows[start : start + CHUNK]


def _diff(path: str, name: str, line: int) -> str:
    return (
        f"--- a/{path}\n+++ b/{path}\n@@ -{line},3 +{line},4 @@\n def {name}(value):\n"
        f'+    """Return {name} of the value."""\n     result = value * 2\n     return result\n'
    )


def synthetic_batch(batch_id: str, runs: int, seed: int) -> dict[str, list[dict[str, Any]]]:
    """Rows of a batch of ``runs`` runs (batches, runs, turns, tool_calls, results, events)."""
    rng = random.Random(seed)
    rows: dict[str, list[dict[str, Any]]] = {
        k: [] for k in ("runs", "turns", "tool_calls", "results", "events")
    }
    rows["batches"] = [
        {
            "id": batch_id,
            "bundle_name": "docstring",
            "bundle_version": "1.0",
            "root_path": "/src/big",
            "status": "finished",
            "created_at": T0,
            "options": {
                "bundle": "/bundles/docstring",
                "engine": "vllm",
                "model": "Qwen/Qwen3-8B",
                "overwrite": False,
            },
        }
    ]
    loops = [T0 + timedelta(seconds=rng.uniform(0, 2)) for _ in range(16)]
    for n in range(runs):
        loop = n % 16
        run_id, started = f"{batch_id}-{n:06d}", loops[loop]
        failed = rng.random() < 0.05
        clock, turns = started, min(4, 1 + int(rng.expovariate(1.2)))
        events: list[dict[str, Any]] = [
            {
                "type": "kernel_start",
                "turn": 0,
                "ts": clock,
                "payload": {"plugin": "qwen", "tools": list(TOOLS), "max_turns": 4, "initial_messages": 2},
            }
        ]
        for turn in range(1, turns + 1):
            size, latency = rng.randint(1, 16), rng.uniform(0.3, 2.5)
            tokens = rng.randint(20, 200)
            events.append(
                {"type": "model_request", "turn": turn, "ts": clock, "payload": {"grammar": "ebnf"}}
            )
            clock += timedelta(seconds=latency)
            rows["turns"].append(
                {
                    "run_id": run_id,
                    "turn": turn,
                    "prompt_tokens": rng.randint(600, 2400),
                    "completion_tokens": tokens,
                    "latency_s": latency,
                    "batch_size": size,
                    "finish_reason": "stop",
                    "raw_text": "x" * tokens * 4,
                    "created_at": clock,
                }
            )
            events.append(
                {
                    "type": "model_response",
                    "turn": turn,
                    "ts": clock,
                    "payload": {
                        "latency_s": latency,
                        "batch_size": size,
                        "finish_reason": "stop",
                        "text": "x" * tokens * 4,
                        "usage": {
                            "prompt_tokens": 1000,
                            "completion_tokens": tokens,
                            "total_tokens": 1000 + tokens,
                        },
                    },
                }
            )
            names = ["submit_result"] if turn == turns else rng.sample(list(TOOLS)[:3], rng.randint(1, 2))
            for k, name in enumerate(names):
                error, duration = rng.random() < TOOLS[name], rng.uniform(0.005, 0.3)
                rows["tool_calls"].append(
                    {
                        "run_id": run_id,
                        "turn": turn,
                        "call_id": f"{run_id}:{turn}:{k}",
                        "name": name,
                        "arguments": {"path": "a.py"},
                        "output": "ok" * 20,
                        "is_error": error,
                        "duration_s": duration,
                        "created_at": clock,
                    }
                )
                events.append({"type": "tool_call", "turn": turn, "ts": clock, "payload": {"name": name}})
                clock += timedelta(seconds=duration)
                events.append(
                    {"type": "tool_result", "turn": turn, "ts": clock, "payload": {"is_error": error}}
                )
            events.append({"type": "turn_complete", "turn": turn, "ts": clock, "payload": {}})
        events.append({"type": "kernel_end", "turn": turns, "ts": clock, "payload": {}})
        rows["events"] += [{"run_id": run_id, **event} for event in events]
        rows["runs"].append(
            {
                "id": run_id,
                "batch_id": batch_id,
                "kind": "docstring",
                "target_path": f"pkg/mod{n % 400}.py",
                "qualname": f"func_{n}",
                "source_hash": "0" * 64,
                "status": "failed" if failed else "succeeded",
                "attempts": 1,
                "error": rng.choice(REASONS) if failed else None,
                "created_at": T0,
                "started_at": started,
                "finished_at": clock,
                "inputs": {},
            }
        )
        if not failed:
            rows["results"].append(
                {
                    "run_id": run_id,
                    "target_path": f"pkg/mod{n % 400}.py",
                    "original_hash": "0" * 64,
                    "diff": _diff(f"pkg/mod{n % 400}.py", f"func_{n}", n),
                    "status": "proposed",
                    "summary": "",
                    "created_at": clock,
                    "updated_at": clock,
                }
            )
        loops[loop] = clock + timedelta(seconds=rng.uniform(0.05, 0.4))
    return rows


def fill(store: SqlStore, batch_id: str, runs: int, seed: int) -> None:
    """Bulk-insert a synthetic batch into ``store``."""
    rows = synthetic_batch(batch_id, runs, seed)
    tables = [
        ("batches", BatchRow),
        ("runs", RunRow),
        ("turns", TurnRow),
        ("tool_calls", ToolCallRow),
        ("results", ResultRow),
        ("events", EventRow),
    ]
    with store.engine.begin() as connection:
        for name, table in tables:
            for chunk in _chunks(rows[name]):
                connection.execute(insert(table), chunk)


def _cpu() -> float:
    """CPU seconds of this process and of its children that ended (``sa report``)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


class Stages:
    """Wall and CPU seconds of named stages, several samples each."""

    def __init__(self) -> None:
        self.samples: dict[str, list[tuple[float, float]]] = {}

    @contextmanager
    def time(self, name: str) -> Iterator[None]:
        """Time the block as one sample of ``name``."""
        wall, cpu = time.perf_counter(), _cpu()
        yield
        sample = (time.perf_counter() - wall, _cpu() - cpu)
        self.samples.setdefault(name, []).append(sample)

    def medians(self) -> dict[str, dict[str, float]]:
        """``{stage: {"wall_s": median, "cpu_s": median}}``."""
        return {
            name: {
                "wall_s": statistics.median(wall for wall, _ in samples),
                "cpu_s": statistics.median(cpu for _, cpu in samples),
            }
            for name, samples in self.samples.items()
        }


def measure(store: SqlStore, url: str, batch_id: str, repeat: int, out: Path) -> dict[str, dict[str, float]]:
    """Median seconds of each stage over ``repeat`` builds, and of ``sa report`` as a user runs it."""
    stages = Stages()
    for _ in range(repeat):
        with stages.time("list runs"):
            store.list_runs(batch_id)
        with stages.time("load"):
            data = load_report_data(store, batch_id)
        with stages.time("figures"):
            figures = compute_figures(data)
        with stages.time("charts"):
            charts = draw_charts(figures)
        with stages.time("page"):
            render_page(data, figures, charts, quality=None, generated_at=datetime.now(UTC))
        with stages.time("build_report"):
            build_report(store, batch_id)
        with stages.time("sa report"):  # a new process: interpreter, imports, queries, charts, file
            command = [str(SA), "report", batch_id, "--db", url, "-o", str(out)]
            subprocess.run(command, check=True, capture_output=True)
    return stages.medians()


def fill_store(store: SqlStore, runs: int, other_runs: int) -> None:
    """The reported batch and another one; then fresh planner statistics on PostgreSQL."""
    fill(store, "big", runs, 1)
    fill(store, "other", other_runs, 2)
    if store.dialect == "postgresql":
        # Autovacuum analyzes tables that grow within a minute or so; right after a bulk insert
        # they have no statistics, and PostgreSQL then joins events to runs by a nested loop over
        # the events.type index (about 40 s here) instead of in well under a second.
        with store.engine.connect() as connection:
            connection.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("ANALYZE")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000, help="runs of the reported batch")
    parser.add_argument("--other-runs", type=int, default=2_000, help="runs of another batch in the store")
    parser.add_argument("--dialect", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--repeat", type=int, default=3, help="builds timed per dialect (median)")
    parser.add_argument("--out", type=Path, default=Path("report-bench.html"), help="where the page goes")
    args = parser.parse_args()
    dialects = ["sqlite", "postgresql"] if args.dialect == "both" else [args.dialect]
    results: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="sa-bench-report-") as tmp:
        server = start_postgres(Path(tmp)) if "postgresql" in dialects else None
        try:
            for dialect in dialects:
                url = (
                    f"sqlite:///{tmp}/sa.db"
                    if dialect == "sqlite" or server is None
                    else create_database(server)
                )
                with SqlStore(url) as store:
                    fill_store(store, args.runs, args.other_runs)
                    results[dialect] = measure(store, url, "big", args.repeat, args.out)
        finally:
            if server is not None:
                server.stop()
    print(f"{args.runs} runs in the reported batch, {args.other_runs} in another; medians of {args.repeat}")
    print(f"{'stage':<14}" + "".join(f"{d + ' wall s':>20}{'cpu s':>8}{'x list':>8}" for d in dialects))
    for stage in results[dialects[0]]:
        cells = "".join(
            f"{results[d][stage]['wall_s']:>20.3f}{results[d][stage]['cpu_s']:>8.3f}"
            f"{results[d][stage]['wall_s'] / results[d]['list runs']['wall_s']:>8.1f}"
            for d in dialects
        )
        print(f"{stage:<14}{cells}")
    print(json.dumps({"runs": args.runs, "other_runs": args.other_runs, "repeat": args.repeat, **results}))


if __name__ == "__main__":
    main()
