"""``sa eval``: measure a bundle on real packages from the package index.

::

    sa eval docstring [NAME==VERSION ...] [--limit N] [--engine NAME] [--json FILE]
    sa eval lint [NAME==VERSION ...] [--from-dir DIR] [--work-dir DIR] [--check-tests] [--strict]

Without packages, the task's default set (``evaluation.DEFAULT_PACKAGES``) is used. Archives
are downloaded once (``pip download``) and cached; ``--from-dir`` takes them from a folder of
sdists or wheels instead, with no network. Prints a table per task (fits 100 columns), one line
per package as it finishes, and with ``--json`` every target's result (``-``: standard output,
the table then going to standard error; a file is also written after each package, marked
``"partial": true`` until the end). A package that cannot be evaluated (its archive will not
unpack, ruff refuses its configuration) is listed with its error, under ``"errors"`` in the
JSON, and the others are still evaluated. Exit codes: 0 done, 2 usage, configuration or
package error (a package's error: after the others ran and the report was written).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from structured_agents.cli.engine_option import EngineOption, settings_with_engine
from structured_agents.errors import StructuredAgentsError

if TYPE_CHECKING:
    from structured_agents.evaluation import PackageResult, UnevaluatedPackage
    from structured_agents.settings import EngineSettings

__all__ = ["evaluate"]


class EvalTask(StrEnum):
    """The tasks ``sa eval`` measures."""

    docstring = "docstring"
    lint = "lint"


class StripChoice(StrEnum):
    """Whose docstrings ``sa eval docstring`` strips."""

    all = "all"
    targets = "targets"


def _engine_label(settings: EngineSettings) -> str:
    where = f" {settings.base_url}" if settings.name == "openai" else ""
    return f"{settings.name}{where} ({settings.model or 'default model'})"


def _write_json(json_out: str, data: dict[str, Any]) -> None:
    text = json.dumps(data, indent=2) + "\n"
    if json_out == "-":
        sys.stdout.write(text)
    else:
        Path(json_out).write_text(text, encoding="utf-8")


def _progress(
    console: Console, task: str, json_out: str | None
) -> Callable[[PackageResult | UnevaluatedPackage], None]:
    """Print a line per package as it is done or fails; with a ``--json`` file, rewrite it each
    time (``"partial": true``) so an interrupted evaluation keeps what it measured."""
    from structured_agents.evaluation import UnevaluatedPackage

    done: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []

    def report(result: PackageResult | UnevaluatedPackage) -> None:
        if isinstance(result, UnevaluatedPackage):
            console.print(
                f"  [red]{escape(result.package)}: not evaluated:[/red] {escape(result.error)}",
                highlight=False,
                soft_wrap=True,
            )
            errors.append(result.to_dict())
        else:
            failed = sum(result.failures.values())
            console.print(
                f"  {escape(result.package)}: {result.job_count} job(s), {failed} without a change, "
                f"{result.wall_s:.0f} s",
                highlight=False,
            )
            done.append(result.to_dict())
        if json_out is not None and json_out != "-":
            _write_json(json_out, {"task": task, "partial": True, "packages": done, "errors": errors})

    return report


def evaluate(
    task: Annotated[EvalTask, typer.Argument(help="What to measure: docstring or lint.")],
    packages: Annotated[
        list[str] | None,
        typer.Argument(metavar="[NAME==VERSION]...", help="Pinned packages (default: the task's set)."),
    ] = None,
    bundle: Annotated[
        str | None, typer.Option("--bundle", "-b", help="Bundle name or path (default: the task's).")
    ] = None,
    limit: Annotated[
        int | None, typer.Option(min=1, help="Targets (docstring) or files (lint) per package.")
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Agents running at once.")] = 8,
    engine: EngineOption = None,
    json_out: Annotated[
        str | None, typer.Option("--json", help="Write the results as JSON here ('-': stdout).")
    ] = None,
    from_dir: Annotated[
        Path | None,
        typer.Option(help="Take the archives from this folder (no network).", exists=True, file_okay=False),
    ] = None,
    work_dir: Annotated[
        Path | None, typer.Option(help="Keep the scratch copies here (an empty or new folder).")
    ] = None,
    check_tests: Annotated[
        bool, typer.Option(help="lint: the package's own tests are the check the agent's changes must pass.")
    ] = False,
    strict: Annotated[
        bool,
        typer.Option(
            help="lint: ruff's E, F, W, B, UP, SIM, PL and RUF rules (not E501) over the package's "
            "config, instead of its own selection."
        ),
    ] = False,
    strip: Annotated[
        StripChoice,
        typer.Option(
            help="docstring: strip every definition's docstring, or the targets' only (the rest "
            "stays documented, as in a partly documented codebase)."
        ),
    ] = StripChoice.all,
) -> None:
    """Measure a bundle on real packages: their docstrings stripped and written again, or their
    ruff findings fixed; scored against the originals."""
    from structured_agents.engines.factory import create_engine
    from structured_agents.evaluation import DEFAULT_PACKAGES, EvalSetup, parse_spec, render_report
    from structured_agents.evaluation import evaluate as run_evaluation
    from structured_agents.evaluation.errors import EvaluationError
    from structured_agents.evaluation.tables import WIDTH

    console = Console(stderr=json_out == "-", width=WIDTH)
    try:
        settings = settings_with_engine(engine)
        specs = tuple(parse_spec(text) for text in packages or DEFAULT_PACKAGES[task.value])
        setup = EvalSetup(
            task=task.value,
            packages=specs,
            bundle=bundle or task.value,
            engine_label=_engine_label(settings.engine),
            from_dir=from_dir,
            limit=limit,
            concurrency=concurrency,
            work_dir=work_dir,
            check_tests=check_tests,
            strict=strict,
            strip=strip.value,
        )
        if strip is not StripChoice.all and task is not EvalTask.docstring:
            raise EvaluationError("--strip is an option of sa eval docstring")
        if (strict or check_tests) and task is not EvalTask.lint:
            raise EvaluationError("--strict and --check-tests are options of sa eval lint")
        console.print(f"sa eval {task.value}: {escape(', '.join(map(str, specs)))}", highlight=False)
        report = asyncio.run(
            run_evaluation(
                setup, lambda: create_engine(settings.engine), _progress(console, task.value, json_out)
            )
        )
    except StructuredAgentsError as exc:
        console.print(f"[red]sa eval:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from exc
    console.print(render_report(report))
    if json_out is not None:
        _write_json(json_out, report.to_dict())
    if report.errors:
        raise typer.Exit(2)
