"""Entry point of ``sa``: one Typer app, sub-commands from their own modules."""

from __future__ import annotations

import sys

import typer
from typer import rich_utils

from structured_agents.cli.distributed import register as register_distributed
from structured_agents.cli.evaluate import evaluate
from structured_agents.cli.harness import harness
from structured_agents.cli.pym import pym_app
from structured_agents.cli.registry import registry_app
from structured_agents.cli.report import register as register_report
from structured_agents.cli.run import register as register_run
from structured_agents.cli.serve import serve

PIPED_WIDTH = 120
"""Columns help is laid out in when it goes to a pipe or a file (Rich's 80 squeezed the tables of
``sa eval --help``); a terminal's own width, or ``TERMINAL_WIDTH``, wins."""
if rich_utils.MAX_WIDTH is None and not sys.stdout.isatty():
    rich_utils.MAX_WIDTH = PIPED_WIDTH

app = typer.Typer(
    name="sa",
    help="structured-agents: grammar-constrained tool-calling agents over whole codebases.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)


@app.callback()
def _root() -> None:
    """structured-agents command line."""


app.command("serve")(serve)
app.add_typer(pym_app, name="pym")
app.add_typer(registry_app, name="registry")
register_distributed(app)
register_run(app)
register_report(app)
app.command("harness")(harness)
app.command("eval")(evaluate)
