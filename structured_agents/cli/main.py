"""Entry point of ``sa``: one Typer app, sub-commands from their own modules."""

from __future__ import annotations

import typer

from structured_agents.cli.distributed import register as register_distributed
from structured_agents.cli.evaluate import evaluate
from structured_agents.cli.harness import harness
from structured_agents.cli.pym import pym_app
from structured_agents.cli.registry import registry_app
from structured_agents.cli.report import register as register_report
from structured_agents.cli.run import register as register_run
from structured_agents.cli.serve import serve

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
