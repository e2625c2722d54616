"""Distributed runs from the command line: enqueue, watch, inspect, cancel, start workers.

::

    sa enqueue BUNDLE PATH          PATH: a codebase (the bundle's task discovers the jobs) or a
                                    JSON Lines file of jobs; prints the batch id
          [--check CMD]             lint: a command the proposals must still pass (run by the
                                    workers that finish runs, on a copy of the codebase)
    sa status BATCH [--watch]       runs of the batch by status (live with --watch)
    sa runs [--batch B] [--status S]
    sa show RUN                     a run, its turns, tool calls and result
    sa events RUN                   a run's events, in order
    sa cancel BATCH
    sa worker gpu|cpu               gpu: solo pool on llm; cpu: prefork on tools and control

Database and broker come from ``SA_DATABASE_URL`` and ``SA_REDIS_URL``. Celery and the
workers are imported only by the commands that need them.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from structured_agents.cli.check_option import CheckOption, CheckTimeoutOption, task_options
from structured_agents.cli.refs import resolve
from structured_agents.cli.run import DbOption, open_store
from structured_agents.errors import StructuredAgentsError
from structured_agents.settings import load_settings
from structured_agents.status import RUN_STATUSES, RunStatus
from structured_agents.store import BatchCounts, SqlStore, Store
from structured_agents.tasks.check import DEFAULT_TIMEOUT_S

__all__ = ["register"]

console = Console()
BEAT_SCHEDULE = Path("celerybeat-schedule")


def _store() -> Store:
    return SqlStore(load_settings().database_url)


def _fail(command: str, exc: StructuredAgentsError) -> typer.Exit:
    typer.echo(f"sa {command}: {exc}", err=True)
    return typer.Exit(2)


def enqueue(
    bundle: Annotated[Path, typer.Argument(help="Bundle directory (or its bundle.yaml).")],
    path: Annotated[Path, typer.Argument(help="Codebase root, or a .jsonl file of jobs.")],
    root: Annotated[Path | None, typer.Option(help="Codebase of a jobs file (default: its dir).")] = None,
    check: CheckOption = None,
    check_timeout: CheckTimeoutOption = DEFAULT_TIMEOUT_S,
) -> None:
    """Queue a batch of jobs for the workers; prints the batch id."""
    from structured_agents.jobs import read_jobs_file
    from structured_agents.workers.celery_app import app
    from structured_agents.workers.enqueue import enqueue as enqueue_jobs

    try:
        options = task_options(check, check_timeout)
        with _store() as store:
            if path.is_file():
                jobs = read_jobs_file(path)
                done = enqueue_jobs(store, app, bundle, root or path.parent, jobs, task_options=options)
            else:
                done = enqueue_jobs(store, app, bundle, path, task_options=options)
    except StructuredAgentsError as exc:
        raise _fail("enqueue", exc) from exc
    typer.echo(done.batch_id)
    typer.echo(f"{done.queued} jobs queued, {done.skipped} skipped", err=True)


def _counts_table(counts: BatchCounts) -> Table:
    table = Table(title=f"batch {counts.batch_id}")
    for status in (*RUN_STATUSES, "total"):
        table.add_column(status, justify="right")
    table.add_row(*(str(counts[s]) for s in RUN_STATUSES), str(counts.total))
    return table


def _ended(counts: BatchCounts) -> int:
    return counts["succeeded"] + counts["failed"] + counts["cancelled"]


def _watch_view(counts: BatchCounts, ended_before: int, elapsed_s: float) -> Group:
    """The counts table over a bar of ended runs, with the pace since watching began and an ETA.

    ``ended_before``: runs that had ended when watching began; ``elapsed_s``: seconds since.
    """
    ended = _ended(counts)
    bar = ProgressBar(total=max(counts.total, 1), completed=ended, width=40)
    note = Text()
    note.append(f"{counts['failed']} failed", style="red" if counts["failed"] else "dim")
    note.append(f" · {counts['running']} running", style="dim")
    pace = (ended - ended_before) / elapsed_s if elapsed_s > 0 else 0.0
    if pace > 0:
        note.append(f" · {pace * 60:.1f} runs/min", style="cyan")
        if not counts.done:
            note.append(f" · about {(counts.total - ended) / pace:.0f}s left", style="dim")
    line = Table.grid(padding=(0, 1))
    line.add_row(bar, Text(f"{ended}/{counts.total} ended", style="bold"), note)
    return Group(_counts_table(counts), line)


def status(
    batch: Annotated[str, typer.Argument(help="Batch id (or its start), or 'latest'.")],
    watch: Annotated[
        bool, typer.Option(help="Refresh, with a progress bar, until no run is queued or running.")
    ] = False,
    interval: Annotated[float, typer.Option(help="Seconds between refreshes with --watch.")] = 1.0,
    db: DbOption = None,
) -> None:
    """Runs of a batch by status."""
    try:
        with open_store(db, existing=True) as store:
            batch = resolve(store, batch, runs=False)
            counts = store.batch_counts(batch)
            if not watch:
                console.print(_counts_table(counts))
                return
            started, ended_before = time.monotonic(), _ended(counts)
            with Live(_watch_view(counts, ended_before, 0.0), console=console) as live:
                while not counts.done:
                    time.sleep(interval)
                    counts = store.batch_counts(batch)
                    live.update(_watch_view(counts, ended_before, time.monotonic() - started))
    except StructuredAgentsError as exc:
        raise _fail("status", exc) from exc


def runs(
    batch: Annotated[
        str | None,
        typer.Argument(
            help="Batch id, its start, or 'latest' (default: the newest batch; --batch works too)."
        ),
    ] = None,
    batch_option: Annotated[str | None, typer.Option("--batch", help="Batch id, as the argument.")] = None,
    run_status: Annotated[str | None, typer.Option("--status", help="Only runs of this status.")] = None,
    limit: Annotated[int, typer.Option(help="Most runs listed.")] = 50,
    offset: Annotated[int, typer.Option(help="Runs skipped first.")] = 0,
    db: DbOption = None,
) -> None:
    """Runs of a batch, oldest first."""
    if run_status is not None and run_status not in RUN_STATUSES:
        raise typer.BadParameter(f"--status must be one of {', '.join(RUN_STATUSES)}")
    if batch is not None and batch_option is not None and batch != batch_option:
        raise typer.BadParameter("give the batch once: as the argument or as --batch")
    batch = batch or batch_option
    try:
        with open_store(db, existing=True) as store:
            batch_id = (
                resolve(store, batch, runs=False)
                if batch
                else next((b.id for b in store.list_batches(limit=1)), None)
            )
            if batch_id is None:
                typer.echo("no batches", err=True)
                return
            chosen: RunStatus | None = next((s for s in RUN_STATUSES if s == run_status), None)
            records = store.list_runs(batch_id, chosen, limit=limit, offset=offset)
    except StructuredAgentsError as exc:
        raise _fail("runs", exc) from exc
    table = Table(title=f"runs of batch {batch_id}")
    for column in ("run", "status", "attempts", "target", "error"):
        table.add_column(column)
    for run in records:
        target = f"{run.target_path}::{run.qualname}"
        error = escape((run.error or "")[:80])
        table.add_row(run.id[:16], run.status, str(run.attempts), escape(target), error)
    console.print(table)


def show(run_id: Annotated[str, typer.Argument(help="Run id (or its start).")], db: DbOption = None) -> None:
    """A run, its turns, its tool calls and its result."""
    try:
        with open_store(db, existing=True) as store:
            run = store.get_run(resolve(store, run_id))
            run_id = run.id
            turns, calls = store.turns(run_id), store.tool_calls(run_id)
            result = next((r for r in store.results(run.batch_id) if r.run_id == run_id), None)
    except StructuredAgentsError as exc:
        raise _fail("show", exc) from exc
    console.print(f"[bold]run {run.id}[/bold] {run.status} (attempts {run.attempts}) batch {run.batch_id}")
    console.print(f"target {escape(run.target_path)}::{escape(run.qualname)}")
    if run.error:
        console.print(f"error: {escape(run.error)}")
    for turn in turns:
        timing = f"batch of {turn.batch_size}, {turn.latency_s:.3f}s"
        console.print(f"turn {turn.turn}: {timing}: {escape(repr(turn.raw_text))}")
    for call in calls:
        flag = " (error)" if call.is_error else ""
        arguments, output = escape(json.dumps(call.arguments)), escape(repr(call.output[:200]))
        console.print(f"  {escape(call.name)}({arguments}) -> {output}{flag}")
    if result is not None:
        review = ", needs review" if result.flagged else ""
        console.print(f"result ({result.status}{review}):\n{escape(result.diff or result.summary)}")
        for flag in result.flags:
            console.print(f"needs review: {escape(flag)}")


def events(
    run_id: Annotated[str, typer.Argument(help="Run id (or its start).")],
    after: Annotated[int, typer.Option(help="Only events after this event id.")] = 0,
    limit: Annotated[int | None, typer.Option(help="Most events listed.")] = None,
    db: DbOption = None,
) -> None:
    """A run's events in order, one JSON object per line."""
    try:
        with open_store(db, existing=True) as store:
            records = store.events(store.get_run(resolve(store, run_id)).id, after_id=after, limit=limit)
    except StructuredAgentsError as exc:
        raise _fail("events", exc) from exc
    for record in records:
        typer.echo(json.dumps({"id": record.id, **record.to_dict()}, default=str))


def cancel(
    batch: Annotated[str, typer.Argument(help="Batch id (or its start).")], db: DbOption = None
) -> None:
    """Cancel a batch: queued runs now, running ones at their next step."""
    from structured_agents.lifecycle.batch import cancel_batch

    try:
        with open_store(db, existing=True) as store:
            cancelled = cancel_batch(store, resolve(store, batch, runs=False))
    except StructuredAgentsError as exc:
        raise _fail("cancel", exc) from exc
    typer.echo(f"{cancelled} runs cancelled")


def worker(
    kind: Annotated[Literal["gpu", "cpu"], typer.Argument(help="gpu: llm queue; cpu: tools and control.")],
    concurrency: Annotated[int, typer.Option(help="cpu: worker processes.")] = 2,
    beat: Annotated[bool, typer.Option(help="cpu: also run the beat (sends the sweep).")] = False,
    schedule: Annotated[Path, typer.Option(help="--beat: the beat's schedule file.")] = BEAT_SCHEDULE,
    loglevel: Annotated[str, typer.Option(help="Celery log level.")] = "INFO",
) -> None:
    """Start a Celery worker with the queues and pool of its kind."""
    from structured_agents.workers.celery_app import SETTINGS, app, gpu_prefetch
    from structured_agents.workers.constants import CONTROL_QUEUE, LLM_QUEUE, TOOLS_QUEUE

    argv = ["worker", f"--loglevel={loglevel}", "--without-gossip", "--without-mingle"]
    if kind == "gpu":
        argv += [f"--queues={LLM_QUEUE}", "--pool=solo", "--concurrency=1"]
        argv += [f"--hostname=gpu-{os.getpid()}@%h", f"--prefetch-multiplier={gpu_prefetch(SETTINGS)}"]
    else:
        argv += [f"--queues={TOOLS_QUEUE},{CONTROL_QUEUE}", "--pool=prefork", f"--concurrency={concurrency}"]
        argv += [f"--hostname=cpu-{os.getpid()}@%h", "--prefetch-multiplier=1"]
        if beat:
            argv += ["--beat", f"--schedule={schedule}"]
    app.worker_main(argv)


def register(app: typer.Typer) -> None:
    """Add the distributed commands to the ``sa`` app."""
    for command in (enqueue, status, runs, show, events, cancel, worker):
        app.command(command.__name__)(command)
