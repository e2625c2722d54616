"""Embedded runs from the command line: run a bundle over a codebase, look at and apply results.

::

    sa run BUNDLE PATH [--overwrite] [--concurrency N] [--db URL] [--engine NAME]
           [--check CMD [--check-timeout S]]
    sa diff RUN_OR_BATCH [--plain] [--all]      (``latest``: the newest batch)
    sa apply BATCH [--yes]

``sa run`` needs no service: the engine comes from the settings (``SA_ENGINE__*``, by default
the embedded CPU model), the store is the SQLite file in the user data directory unless
``--db`` (or ``SA_DATABASE_URL``) names another. It never changes the codebase: each job's
change is stored as a diff, which ``sa diff`` shows and ``sa apply`` applies (each file's
outcome recorded before the next file is touched; a patch that could not be written stays
proposed; an interrupted apply is reconciled by the next, see ``patches.apply``). Ctrl-C stops
cleanly; the same command resumes. Exit codes: 0 all jobs succeeded, 1 some failed (or some
patches were refused or not written), 2 usage or configuration error, 130 interrupted.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer
from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax

from structured_agents.cli.check_option import CheckOption, CheckTimeoutOption, task_options
from structured_agents.cli.engine_option import EngineOption, settings_with_engine
from structured_agents.cli.refs import existing_database, resolve
from structured_agents.errors import StructuredAgentsError
from structured_agents.status import ResultStatus
from structured_agents.store import BatchRecord, RecordNotFoundError, ResultRecord, SqlStore, Store
from structured_agents.tasks.check import DEFAULT_TIMEOUT_S

if TYPE_CHECKING:
    from structured_agents.patches import FileReport
    from structured_agents.runner.embedded import RunSummary

__all__ = ["DbOption", "apply", "diff", "fail", "open_store", "register", "run"]

console = Console()
DbOption = Annotated[
    str | None, typer.Option("--db", help="Database URL (default: SA_DATABASE_URL, else the embedded file).")
]


def fail(command: str, exc: Exception) -> typer.Exit:
    """Print ``sa COMMAND: error`` and the exit to raise (code 2)."""
    console.print(f"[red]sa {command}:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
    return typer.Exit(2)


def open_store(db: str | None, *, existing: bool = False) -> Store:
    """The store of ``--db``, else of the settings; with ``existing``, a SQLite file that is
    not there is refused instead of created (:func:`~structured_agents.cli.refs.existing_database`)."""
    from structured_agents.settings import load_settings

    url = db or load_settings().database_url
    return SqlStore(existing_database(url) if existing and url else url)


def _default_model(engine: str) -> str:
    """What an engine without ``SA_ENGINE__MODEL`` decodes with, as a report names it."""
    if engine == "transformers":
        from structured_agents.engines.model_store import DEFAULT_MODEL

        return f"{DEFAULT_MODEL} (the shipped default)"
    return f"the {engine} engine's default"


def _db_flag(db: str | None) -> str:
    return f" --db {db}" if db else ""


def run(
    bundle: Annotated[
        str, typer.Argument(help="Bundle name (docstring, docstring_calls, docstring_team, lint) or path.")
    ],
    path: Annotated[Path, typer.Argument(help="Codebase root.", exists=True, file_okay=False)],
    overwrite: Annotated[bool, typer.Option(help="Also redo targets that already have one.")] = False,
    concurrency: Annotated[int, typer.Option(min=1, help="Agents running at once (one batch).")] = 8,
    db: DbOption = None,
    engine: EngineOption = None,
    check: CheckOption = None,
    check_timeout: CheckTimeoutOption = DEFAULT_TIMEOUT_S,
) -> None:
    """Run a bundle over a codebase on this machine; results are stored as diffs."""
    from structured_agents.bundles import load_bundle
    from structured_agents.engines.factory import create_engine
    from structured_agents.lifecycle import prepare_batch
    from structured_agents.runner import EmbeddedRunner, RunProgress

    try:
        settings = settings_with_engine(engine)
        loaded = load_bundle(bundle)
        recorded = {
            "overwrite": overwrite,
            "engine": settings.engine.name,
            "model": settings.engine.model or _default_model(settings.engine.name),
        }
        options = task_options(check, check_timeout)
        prepared = prepare_batch(loaded, path, task_options=options, overwrite=overwrite, extra=recorded)
        if not prepared.jobs:
            task = loaded.manifest.task or loaded.manifest.name
            console.print(f"nothing to do: the {task} task finds no target under {path}", highlight=False)
            loaded.close()
            return
        store = SqlStore(db or settings.database_url)
    except StructuredAgentsError as exc:
        raise fail("run", exc) from exc
    try:
        with store:
            with RunProgress(description=loaded.manifest.name) as progress:
                runner = EmbeddedRunner(
                    loaded,
                    lambda: create_engine(settings.engine),
                    store,
                    concurrency=concurrency,
                    progress=progress,
                )
                summary = asyncio.run(runner.run_prepared(prepared))
            _print_summary(store, summary, db)
    except KeyboardInterrupt:
        console.print("[yellow]interrupted:[/yellow] running jobs went back to the queue.")
        console.print("Run the same command again to resume.")
        raise typer.Exit(130) from None
    except StructuredAgentsError as exc:
        raise fail("run", exc) from exc
    finally:
        loaded.close()
    if summary.failed:
        raise typer.Exit(1)


def _print_summary(store: Store, summary: RunSummary, db: str | None) -> None:
    rate = summary.completion_tokens / summary.elapsed_s if summary.elapsed_s > 0 else 0.0
    console.print(
        f"batch [bold]{summary.batch_id}[/bold]: {summary.succeeded} succeeded, {summary.failed} failed, "
        f"{summary.skipped} of {summary.discovered} skipped (already done) in {summary.elapsed_s:.1f}s "
        f"({rate:.1f} tok/s)",
        highlight=False,
        soft_wrap=True,
    )
    for failed in store.list_runs(summary.batch_id, "failed", limit=10):
        what = escape(f"{failed.target_path}:{failed.qualname}: {failed.error}")
        console.print(f"  [red]failed[/red] {what}", highlight=False)
    if not any(result.diff for result in store.results(summary.batch_id, "proposed")):
        if summary.ran:
            console.print("  nothing to change: no job proposed a change", highlight=False)
    elif summary.ran:
        console.print(
            f"  see the changes:  sa diff {summary.batch_id}{_db_flag(db)}", highlight=False, soft_wrap=True
        )
        console.print(
            f"  apply them:       sa apply {summary.batch_id}{_db_flag(db)}", highlight=False, soft_wrap=True
        )


def _results(store: Store, ref: str, *, writes: bool = False) -> tuple[str, list[ResultRecord]]:
    """The batch id and results of ``ref``: a batch or run id (or its start), or ``latest``."""
    ref = resolve(store, ref, writes=writes)
    try:
        return ref, store.results(store.get_batch(ref).id)
    except RecordNotFoundError:
        run_record = store.get_run(ref)
        return run_record.batch_id, [r for r in store.results(run_record.batch_id) if r.run_id == ref]


def _notes(result: ResultRecord, names: dict[str, str]) -> list[str]:
    """A change's title, summary and review notes, a line each."""
    status = f"{result.status}, needs review" if result.flagged else result.status
    title = f"{result.target_path} · {names.get(result.run_id, '?')} · {status}"
    return [title, *result.summary.splitlines(), *(f"needs review: {flag}" for flag in result.flags)]


def _print_plain(root: Path, shown: list[ResultRecord], names: dict[str, str]) -> None:
    """The changes as plain unified diffs, each led by ``#`` lines (:func:`_notes`, which patch
    and git apply skip). A file's proposed changes go out as one diff while the file is as they
    read it, so ``git apply`` takes them (it refuses a second diff of a file it has patched);
    otherwise each change is its own diff, which ``patch`` still applies."""
    from structured_agents.patches import combined_diff

    by_file: dict[str, list[ResultRecord]] = {}
    for result in shown:
        by_file.setdefault(result.target_path, []).append(result)
    for path, group in by_file.items():
        together = None
        if len(group) > 1 and all(result.status == "proposed" for result in group):
            together = combined_diff(root, path, list(group))
        parts = [(group, together)] if together is not None else [([r], r.diff) for r in group]
        for results, text in parts:
            notes = [line for result in results for line in _notes(result, names)]
            typer.echo("".join(f"# {line}\n" for line in notes) + text, nl=False)


def _print_rich(shown: list[ResultRecord], names: dict[str, str]) -> None:
    """The changes for a terminal: a rule with each one's title, its notes, its diff coloured."""
    for result in shown:
        console.rule(f"[bold]{escape(_notes(result, names)[0])}[/bold]", align="left")
        if result.summary:
            console.print(result.summary, style="dim", markup=False, highlight=False, soft_wrap=True)
        for flag in result.flags:
            console.print(
                f"needs review: {flag}", style="yellow", markup=False, highlight=False, soft_wrap=True
            )
        console.print(Syntax(result.diff, "diff", theme="ansi_dark", background_color="default"))


def diff(
    ref: Annotated[
        str, typer.Argument(metavar="RUN_OR_BATCH", help="Batch or run id (or its start), or 'latest'.")
    ],
    plain: Annotated[
        bool, typer.Option(help="Print the raw unified diffs (for git apply, patch, less, pipes).")
    ] = False,
    all_results: Annotated[
        bool, typer.Option("--all", help="Also show applied, stale and rejected ones.")
    ] = False,
    db: DbOption = None,
) -> None:
    """Show the changes a batch (or one run) proposes."""
    try:
        with open_store(db, existing=True) as store:
            batch_id, results = _results(store, ref)
            names = {r.id: r.qualname for r in store.list_runs(batch_id)}
            root = Path(store.get_batch(batch_id).root_path)
    except StructuredAgentsError as exc:
        raise fail("diff", exc) from exc
    shown = [r for r in results if all_results or r.status == "proposed"]
    if plain or not console.is_terminal:  # whole lines, for patch, git apply, a pager or a file
        _print_plain(root, shown, names)
    else:
        _print_rich(shown, names)
    if not plain:  # the count: on the terminal, or beside the patch when it goes to a pipe or file
        hidden = len(results) - len(shown)
        note = f" ({hidden} not proposed: --all shows them)" if hidden else ""
        flagged = sum(r.flagged for r in shown)
        review = f", {flagged} of them flagged for review" if flagged else ""
        out = console if console.is_terminal else Console(stderr=True)
        out.print(
            f"{len(shown)} change(s) in batch {batch_id}{review}{note}", highlight=False, soft_wrap=True
        )


def _list_changes(results: list[ResultRecord], names: dict[str, str]) -> None:
    """What an apply will write, a line per file: its changes' targets."""
    by_file: dict[str, list[str]] = {}
    for result in results:
        by_file.setdefault(result.target_path, []).append(names.get(result.run_id, "?"))
    for path, targets in sorted(by_file.items()):
        console.print(f"  {escape(path)}: {escape(', '.join(targets))}", highlight=False, soft_wrap=True)


def apply(
    batch: Annotated[
        str,
        typer.Argument(
            metavar="RUN_OR_BATCH",
            help="Batch or run id (or its start), or 'latest' (the codebase you are in).",
        ),
    ],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    include_flagged: Annotated[
        bool,
        typer.Option(
            "--include-flagged", help="Also apply the changes flagged for review (sa diff shows why)."
        ),
    ] = False,
    branch: Annotated[
        str | None,
        typer.Option(
            help="Commit the changes to this new git branch instead (from HEAD; the working tree, "
            "the index and the current branch are left as they are)."
        ),
    ] = None,
    db: DbOption = None,
) -> None:
    """Apply a batch's proposed changes to its codebase (refusing files changed since); the
    changes flagged for review are left proposed unless --include-flagged."""
    from structured_agents.patches import apply_patches

    try:
        with open_store(db, existing=True) as store:
            batch_id, results = _results(store, batch, writes=True)
            pending = [r for r in results if r.status == "proposed" and r.diff]  # not a no-change job's
            proposed = [r for r in pending if include_flagged or not r.flagged]
            left = len(pending) - len(proposed)
            record = store.get_batch(batch_id)
            root = Path(record.root_path)
            names = {r.id: r.qualname for r in store.list_runs(batch_id)}
            if branch is not None:
                chosen = {r.run_id for r in proposed}
                flagged = [r for r in pending if r.run_id not in chosen]
                _to_branch(root, branch, record, proposed, flagged, names)
                return
            if left:
                console.print(
                    f"{left} change(s) flagged for review left proposed (`sa diff {batch_id}` shows "
                    "why; --include-flagged applies them too)",
                    highlight=False,
                    soft_wrap=True,
                )
            if not proposed:
                console.print(
                    f"batch {batch_id} has no proposed change to apply", highlight=False, soft_wrap=True
                )
                return
            files = len({r.target_path for r in proposed})
            if not yes:
                _list_changes(proposed, names)
                if not typer.confirm(f"Apply {len(proposed)} change(s) to {files} file(s) under {root}?"):
                    console.print("nothing applied", highlight=False)
                    raise typer.Exit(1)
            report = apply_patches(root, proposed, record=lambda file: _record(store, file, names))
    except StructuredAgentsError as exc:
        raise fail("apply", exc) from exc
    applied, failed = len(report.run_ids("applied")), len(report.run_ids("failed"))
    console.print(f"{applied} of {len(proposed)} change(s) applied", highlight=False, soft_wrap=True)
    if failed:
        console.print(
            f"{failed} could not be written and are still proposed: fix the cause and run "
            f"`sa apply {batch_id}{_db_flag(db)}` again",
            highlight=False,
            soft_wrap=True,
        )
    if applied < len(proposed):
        raise typer.Exit(1)


def _to_branch(
    root: Path,
    name: str,
    batch: BatchRecord,
    chosen: list[ResultRecord],
    flagged: list[ResultRecord],
    names: dict[str, str],
) -> None:
    """``sa apply --branch``: the chosen changes as one commit on a new branch (see
    :mod:`structured_agents.patches.branch`); what was left flagged is listed in its message."""
    from structured_agents.patches.branch import commit_to_branch

    if not chosen:
        console.print(f"batch {batch.id} has no proposed change to commit", highlight=False, soft_wrap=True)
        return
    files = len({r.target_path for r in chosen})
    lines = [
        f"{batch.bundle_name} {batch.bundle_version}: {len(chosen)} change(s) to {files} file(s)",
        "",
        f"Batch {batch.id} of structured-agents over {batch.root_path}.",
    ]
    if flagged:
        lines += ["", f"Left out, flagged for review ({len(flagged)}; sa diff {batch.id} shows them):"]
        lines += [
            f"- {r.target_path} {names.get(r.run_id, '?')}: {'; '.join(r.flags)[:200]}" for r in flagged
        ]
    report = commit_to_branch(root, name, chosen, "\n".join(lines) + "\n")
    console.print(
        f"branch {report.branch} ({report.commit[:12]}): {len(report.applied)} change(s) to "
        f"{report.files} file(s); the working tree and the current branch are unchanged",
        highlight=False,
        soft_wrap=True,
    )
    for outcome in report.left:
        console.print(
            f"    {outcome.status}: {outcome.run_id[:12]} {escape(outcome.detail)}", highlight=False
        )
    if flagged:
        console.print(
            f"{len(flagged)} change(s) flagged for review left out", highlight=False, soft_wrap=True
        )


def _record(store: Store, file: FileReport, names: dict[str, str]) -> None:
    """Store one file's outcome, then print it, each change not applied by its target (``names``:
    run id to qualified name); applied ones last (see ``patches.apply``)."""
    by_status: dict[str, list[str]] = {}
    for run_id, status in file.result_statuses().items():
        by_status.setdefault(status, []).append(run_id)
    for status in ("stale", "rejected", "applied"):
        if by_status.get(status):
            store.set_result_status(by_status[status], cast(ResultStatus, status))
    if file.written:
        mark = "[green]written[/green]"
    elif file.run_ids("applied"):
        mark = "[green]already applied[/green]"
    else:
        mark = "[red]unchanged[/red]"
    console.print(f"{mark} {escape(file.path)}", highlight=False, soft_wrap=True)
    for outcome in file.outcomes:
        if outcome.status != "applied":
            detail = escape(outcome.detail)
            target = escape(names.get(outcome.run_id, outcome.run_id[:12]))
            console.print(
                f"    {outcome.status}: {target} ({outcome.run_id[:12]}): {detail}", highlight=False
            )


def register(app: typer.Typer) -> None:
    """Add ``run``, ``diff`` and ``apply`` to the ``sa`` app."""
    for command in (run, diff, apply):
        app.command(command.__name__)(command)
