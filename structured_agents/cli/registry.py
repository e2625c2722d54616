"""``sa registry``: check and migrate v2 tool registry files.

``sa registry migrate IN OUT`` reads a v1 (or v2) registry, checks it and writes it as v2 (JSON
or YAML by ``OUT``'s extension), printing what changed. ``sa registry check FILE`` checks a
file and prints each tool with its backend and route (``--agent`` only the tools that agent's
dependencies allow). Both exit 1 with the error (file, line, JSON path) on a bad file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from structured_agents.errors import StructuredAgentsError

__all__ = ["registry_app"]

registry_app = typer.Typer(help="Check and migrate tool registry (v2) files.", no_args_is_help=True)


@registry_app.command("migrate")
def migrate(
    source: Annotated[Path, typer.Argument(help="The registry to migrate (v1 or v2, JSON or YAML).")],
    target: Annotated[Path, typer.Argument(help="Where to write the v2 registry (.json, .yaml or .yml).")],
) -> None:
    """Migrate a registry file to schemaVersion 2.0 and print the report of what changed."""
    from structured_agents.registry import migrate_file

    try:
        report = migrate_file(source, target)
    except StructuredAgentsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(str(report))
    typer.echo(f"wrote {target}")


@registry_app.command("check")
def check(
    path: Annotated[Path, typer.Argument(help="The registry file (JSON or YAML).")],
    agent: Annotated[
        str | None, typer.Option(help="Show only the tools this agent's dependencies allow.")
    ] = None,
) -> None:
    """Check a registry file and list its tools."""
    from structured_agents.registry import Registry
    from structured_agents.tools.resolve import resolve_all

    try:
        registry = Registry.from_file(path)
        view = registry.scoped_for(agent) if agent is not None else registry
        schemas = resolve_all(view, view.list_tools())
    except StructuredAgentsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    if registry.migration.migrated:
        typer.echo(str(registry.migration))
    for schema in schemas:
        where = f" -> {schema.server}" if schema.server else ""
        typer.echo(f"{schema.name}  [{schema.backend}{where}]  {schema.description}")
    typer.echo(f"{len(schemas)} tools ok")
