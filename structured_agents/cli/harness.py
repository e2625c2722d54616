"""``sa harness``: the tool-call harness from the command line.

::

    sa harness PATH [--bundle docstring --bundle lint] [--prompts 8] [--batch-size 8]
                    [--grammar both|on|off] [--engine NAME] [--json FILE]

Prints one table row per bundle and grammar setting (valid-call rate, parse failures, outputs
without a call, invalid calls, tokens/s, latency percentiles) and writes the same as JSON with
``--json`` (``-`` for standard output, the table then going to standard error). Exit codes: 0
done, 1 a grammar-on case had an output that was not a valid call, 2 usage or configuration
error.
"""

from __future__ import annotations

import asyncio
import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from structured_agents.cli.engine_option import EngineOption, settings_with_engine
from structured_agents.errors import StructuredAgentsError

if TYPE_CHECKING:
    from structured_agents.bundles import Bundle
    from structured_agents.harness import CaseReport
    from structured_agents.kernel.engine import Engine

__all__ = ["harness"]


class GrammarSetting(StrEnum):
    """Which decodes the harness makes."""

    both = "both"
    on = "on"
    off = "off"


_SETTINGS = {GrammarSetting.both: (True, False), GrammarSetting.on: (True,), GrammarSetting.off: (False,)}


def harness(
    path: Annotated[
        Path, typer.Argument(help="Codebase whose jobs give the prompts.", exists=True, file_okay=False)
    ],
    bundle: Annotated[
        list[str] | None,
        typer.Option("--bundle", "-b", help="Bundle name or path (default: docstring, lint)."),
    ] = None,
    prompts: Annotated[int, typer.Option("--prompts", "-n", min=1, help="Jobs per bundle.")] = 8,
    batch_size: Annotated[int, typer.Option(min=1, help="Requests decoded together.")] = 8,
    grammar: Annotated[GrammarSetting, typer.Option(help="Decode with the grammar, without, or both.")] = (
        GrammarSetting.both
    ),
    engine: EngineOption = None,
    json_out: Annotated[
        str | None, typer.Option("--json", help="Write the reports as JSON here ('-': stdout).")
    ] = None,
) -> None:
    """Measure how often each bundle's first model turn is a valid tool call, grammar on and off."""
    from structured_agents.bundles import load_bundle
    from structured_agents.engines.factory import create_engine
    from structured_agents.harness import render_table

    console = Console(stderr=json_out == "-")
    try:
        settings = settings_with_engine(engine)
        bundles = [load_bundle(ref) for ref in bundle or ("docstring", "lint")]
        reports = asyncio.run(
            _measure(
                bundles,
                create_engine(settings.engine),
                path.resolve(),
                prompts,
                _SETTINGS[grammar],
                batch_size,
            )
        )
    except StructuredAgentsError as exc:
        console.print(f"[red]sa harness:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from exc
    console.print(render_table(reports))
    if json_out is not None:
        data = json.dumps(
            {"engine": settings.engine.name, "reports": [r.to_dict() for r in reports]}, indent=2
        )
        if json_out == "-":
            sys.stdout.write(data + "\n")
        else:
            Path(json_out).write_text(data + "\n", encoding="utf-8")
    if any(r.grammar is not None and r.valid_rate < 1 for r in reports):
        raise typer.Exit(1)


async def _measure(
    bundles: list[Bundle],
    engine: Engine,
    root: Path,
    prompts: int,
    grammar: tuple[bool, ...],
    batch_size: int,
) -> list[CaseReport]:
    from structured_agents.harness import run_harness

    try:
        for bundle in bundles:
            await bundle.connect()
        progress = Console(stderr=True)
        return await run_harness(
            bundles,
            engine,
            root,
            prompts=prompts,
            grammar=grammar,
            batch_size=batch_size,
            progress=lambda line: progress.print(line, style="dim", markup=False, highlight=False),
        )
    finally:
        for bundle in bundles:
            await bundle.aclose()
