"""``sa pym``: check and run ``.pym`` tool scripts from the command line.

``sa pym check PATH...``
    Checks files and folders (recursively); prints ``file:line:col: CODE message`` per problem
    and exits 1 when there is any. Externals are checked against the default grants plus
    ``--grant``.

``sa pym run FILE --inputs JSON``
    Runs one script and prints its result as JSON. No external is granted unless named with
    ``--grant``; paths resolve inside ``--workspace`` (default: the current folder). What the
    script prints goes to stderr; a failure prints ``ErrorType: message`` to stderr, exit 1.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer

from structured_agents.errors import StructuredAgentsError
from structured_agents.pym.cache import PymCache
from structured_agents.pym.errors import Diagnostic, PymCheckError
from structured_agents.pym.externals import check_grants
from structured_agents.pym.host_functions import DEFAULT_GRANTS, default_externals
from structured_agents.pym.limits import PRESETS, PymLimits
from structured_agents.pym.loader import load_source
from structured_agents.pym.runner import PymResult, PymRunner

__all__ = ["pym_app"]

pym_app = typer.Typer(name="pym", help="Check and run .pym tool scripts.", no_args_is_help=True)

GrantOption = Annotated[list[str] | None, typer.Option("--grant", help="Grant a host function (repeatable).")]


def _files(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for path in paths:
        out.extend(sorted(path.rglob("*.pym")) if path.is_dir() else [path])
    return out


def _problems(path: Path, cache: PymCache, grants: frozenset[str]) -> list[Diagnostic]:
    try:
        script = load_source(path.read_text(encoding="utf-8"), path, cache=cache)
    except PymCheckError as exc:
        return list(exc.diagnostics)
    except (OSError, UnicodeDecodeError) as exc:
        return [Diagnostic("PYM000", f"cannot read: {exc}", str(path), 0, 0)]
    return check_grants(script, default_externals(), grants)


@pym_app.command("check")
def check(
    paths: Annotated[list[Path], typer.Argument(help=".pym files or folders.")],
    grant: GrantOption = None,
) -> None:
    """Check .pym scripts; one line per problem, exit 1 if any."""
    cache = PymCache()
    grants = DEFAULT_GRANTS | set(grant or [])
    files = _files(paths)
    problems = [d for path in files for d in _problems(path, cache, grants)]
    for diagnostic in problems:
        typer.echo(str(diagnostic))
    typer.echo(f"{len(files)} file(s) checked, {len(problems)} problem(s)", err=True)
    if problems or not files:
        raise typer.Exit(1)


async def _run(
    path: Path, inputs: dict[str, object], limits: PymLimits, workspace: Path, grants: list[str]
) -> PymResult:
    script = load_source(path.read_text(encoding="utf-8"), path, cache=PymCache())
    with PymRunner(max_workers=1) as runner:
        return await runner.run(script, inputs, workspace=workspace, limits=limits, grants=grants)


@pym_app.command("run")
def run(
    file: Annotated[Path, typer.Argument(help="The .pym script.")],
    inputs: Annotated[str, typer.Option("--inputs", help="Arguments as a JSON object.")] = "{}",
    limits: Annotated[str, typer.Option("--limits", help=f"One of {', '.join(PRESETS)}.")] = "default",
    workspace: Annotated[
        Path | None, typer.Option("--workspace", help="Folder externals may access (default: cwd).")
    ] = None,
    grant: GrantOption = None,
) -> None:
    """Run one .pym script and print its result as JSON."""
    try:
        arguments = json.loads(inputs)
    except ValueError as exc:
        raise typer.BadParameter(f"not JSON: {exc}", param_hint="--inputs") from None
    if not isinstance(arguments, dict):
        raise typer.BadParameter("must be a JSON object", param_hint="--inputs")
    if limits not in PRESETS:
        raise typer.BadParameter(f"choose one of {', '.join(PRESETS)}", param_hint="--limits")
    try:
        result = asyncio.run(_run(file, arguments, PRESETS[limits], workspace or Path.cwd(), grant or []))
    except (StructuredAgentsError, OSError, UnicodeDecodeError) as exc:
        separator = "\n" if isinstance(exc, PymCheckError) else " "
        typer.echo(f"{type(exc).__name__}:{separator}{exc}", err=True)
        raise typer.Exit(1) from None
    if result.stdout:
        typer.echo(result.stdout, err=True, nl=False)
    typer.echo(result.output)
