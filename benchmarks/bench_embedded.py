"""Embedded-mode benchmark: jobs per minute with batching on (concurrency 8) and off (1).

Run (prints a table, then the JSON)::

    python benchmarks/bench_embedded.py [--jobs N] [--threads T] [--bundle docstring]
    python benchmarks/bench_embedded.py --loops 32 [--jobs N] [--copies 2]

``--loops L`` measures instead how full the engine's batch stays with ``L`` concurrent agent
loops (the sample project copied ``--copies`` times so there are enough jobs), fed two ways
with the same engine (``max_batch_size`` = L): ``continuous``, the engine's own
``submit`` (requests join the batch between decode steps), and ``flush``, the engine hidden
behind an adapter that only has ``generate``, so the ``BatchingEngine`` collects requests and
blocks on one ``generate`` per batch (the behaviour before continuous batching). Reported per
mode: the engine's mean rows per decode step (``DecodeStats.mean_batch``), wall time, jobs per
minute and generated tokens per second.

Both modes run the same bundle over the same copy of ``tests/fixtures/sample_project`` with
the same engine object (the default shipped model on CPU), in this one process, each with a
fresh database so no job is skipped. ``--jobs`` keeps the first N docstring targets (all 19
by default). A one-job warm-up run first loads everything that is loaded once (grammar
compilation, the sandbox, the first forward pass).

Reported per mode: wall time, jobs per minute, generated tokens per second, mean batch size,
how many jobs succeeded (and why the others failed); then
``speedup = jobs/min batched / jobs/min unbatched``. The machine may be shared: compare
numbers only from the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from structured_agents.bundles import load_bundle
from structured_agents.kernel.engine import Completion, Engine, GenerationRequest
from structured_agents.runner import EmbeddedRunner
from structured_agents.store import SqlStore

SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "sample_project"


class GenerateOnly:
    """An engine with only ``generate``: a ``BatchingEngine`` feeds it in flushes."""

    def __init__(self, inner: Engine) -> None:
        self.inner = inner

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        return self.inner.generate(requests)


def run_mode(
    bundle_name: str, engine: Engine, concurrency: int, jobs: int | None, work: Path, copies: int = 1
) -> dict[str, Any]:
    """One embedded run over fresh copies of the sample project; its measurements."""
    root = work / f"project-{concurrency}-{time.monotonic_ns()}"
    for copy in range(copies):
        shutil.copytree(SAMPLE, root / f"copy{copy}" if copies > 1 else root)
    bundle = load_bundle(bundle_name)
    try:
        found = bundle.discover_jobs(root)[:jobs]
        with SqlStore(f"sqlite:///{root}.db") as store:
            runner = EmbeddedRunner(bundle, engine, store, concurrency=concurrency)
            summary = asyncio.run(runner.run(root, found))
            failures = [f"{r.qualname}: {r.error}" for r in store.list_runs(summary.batch_id, "failed")]
    finally:
        bundle.close()
    sizes = summary.batch_sizes
    return {
        "concurrency": concurrency,
        "jobs": summary.ran,
        "succeeded": summary.succeeded,
        "wall_s": round(summary.elapsed_s, 2),
        "jobs_per_min": round(60 * summary.ran / summary.elapsed_s, 2),
        "tokens_per_s": round(summary.completion_tokens / summary.elapsed_s, 2),
        "mean_batch": round(sum(sizes) / len(sizes), 2) if sizes else 0.0,
        "batches": len(sizes),
        "failures": failures,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=None, help="first N jobs only (default: all)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--bundle", default="docstring", help="bundle to run (default: docstring)")
    parser.add_argument("--loops", type=int, default=None, help="compare feeding modes at L loops")
    parser.add_argument("--copies", type=int, default=2, help="copies of the sample project (--loops)")
    args = parser.parse_args()
    if args.loops is not None:
        compare_feeding(args)
        return

    from structured_agents.engines.transformers_engine import TransformersEngine

    started = time.perf_counter()
    engine = TransformersEngine(device="cpu", max_batch_size=8, num_threads=args.threads)
    load_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as work:
        run_mode(args.bundle, engine, 1, 1, Path(work))  # warm-up
        batched = run_mode(args.bundle, engine, 8, args.jobs, Path(work))
        unbatched = run_mode(args.bundle, engine, 1, args.jobs, Path(work))
    speedup = batched["jobs_per_min"] / unbatched["jobs_per_min"] if unbatched["jobs_per_min"] else 0.0
    print(f"model load {load_s:.1f}s, dtype {engine.dtype}, bundle {args.bundle}")
    print(f"{'mode':<12}{'jobs':>6}{'ok':>5}{'wall s':>9}{'jobs/min':>10}{'tok/s':>8}{'batch':>7}")
    for name, row in (("batched", batched), ("unbatched", unbatched)):
        print(
            f"{name:<12}{row['jobs']:>6}{row['succeeded']:>5}{row['wall_s']:>9}{row['jobs_per_min']:>10}"
            f"{row['tokens_per_s']:>8}{row['mean_batch']:>7}"
        )
    for name, row in (("batched", batched), ("unbatched", unbatched)):
        for failure in row["failures"]:
            print(f"{name} failed: {failure}")
    print(f"speedup (jobs/min, batched / unbatched): {speedup:.2f}x")
    print(
        json.dumps(
            {"load_s": round(load_s, 2), "batched": batched, "unbatched": unbatched, "speedup": speedup}
        )
    )


def compare_feeding(args: argparse.Namespace) -> None:
    """``--loops``: the engine's mean batch fed continuously against fed in flushes."""
    from structured_agents.engines.transformers_engine import TransformersEngine

    engine = TransformersEngine(device="cpu", max_batch_size=args.loops, num_threads=args.threads)
    rows: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as work:
        run_mode(args.bundle, engine, 1, 1, Path(work))  # warm-up
        for mode, fed in (("continuous", engine), ("flush", GenerateOnly(engine))):
            before = engine.stats.copy()
            rows[mode] = run_mode(args.bundle, fed, args.loops, args.jobs, Path(work), args.copies)
            rows[mode]["engine_mean_batch"] = round(engine.stats.since(before).mean_batch, 2)
    print(f"{args.loops} loops, dtype {engine.dtype}, bundle {args.bundle}")
    print(f"{'mode':<12}{'jobs':>6}{'ok':>5}{'wall s':>9}{'jobs/min':>10}{'tok/s':>8}{'rows/step':>11}")
    for name, row in rows.items():
        print(
            f"{name:<12}{row['jobs']:>6}{row['succeeded']:>5}{row['wall_s']:>9}{row['jobs_per_min']:>10}"
            f"{row['tokens_per_s']:>8}{row['engine_mean_batch']:>11}"
        )
    print(json.dumps({"loops": args.loops, **rows}))


if __name__ == "__main__":
    main()
