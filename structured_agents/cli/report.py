"""``sa report``: one batch as a self-contained HTML page (charts, failures, tools, changes).

::

    sa report BATCH|latest [-o FILE] [--quality FILE] [--db URL]

The page (``structured_agents.report``) fetches nothing, so it can be mailed or archived;
``-o -`` writes it to standard output. ``--quality`` adds the figures an evaluation wrote
(see ``report.quality`` for the file's shape). Exit codes: 0 written, 2 unknown batch, bad
quality file or database error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from structured_agents.cli.refs import resolve
from structured_agents.cli.run import DbOption, fail, open_store
from structured_agents.errors import StructuredAgentsError

__all__ = ["register", "report"]


def report(
    batch: Annotated[str, typer.Argument(help="Batch id (or its start), or 'latest'.")],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="HTML file to write ('-': standard output). Default: report-BATCH.html."
        ),
    ] = None,
    quality: Annotated[
        Path | None, typer.Option(help="JSON file of quality figures an evaluation wrote for the batch.")
    ] = None,
    db: DbOption = None,
) -> None:
    """Write a batch's HTML report: throughput, batch sizes, latency, tools, failures, changes."""
    from structured_agents.report import build_report, load_quality

    try:
        with open_store(db, existing=True) as store:
            batch_id = resolve(store, batch, runs=False)
            figures = None if quality is None else load_quality(quality, batch_id=batch_id)
            html = build_report(store, batch_id, quality=figures)
    except StructuredAgentsError as exc:
        raise fail("report", exc) from exc
    if output == Path("-"):
        typer.echo(html, nl=False)
        return
    target = output or Path(f"report-{batch_id}.html")
    try:
        target.write_text(html, encoding="utf-8")
    except OSError as exc:
        raise fail("report", exc) from exc
    typer.echo(f"report of batch {batch_id} written to {target}", err=True)


def register(app: typer.Typer) -> None:
    """Add ``report`` to the ``sa`` app."""
    app.command("report")(report)
