"""The lint evaluation of one package: ruff's findings and the package's tests as released,
after ``ruff check --fix`` alone, and after the lint bundle's patches.

Three scratch copies of the project: as released, fixed by ruff alone, fixed by the agent
(through the embedded runner, patches applied). Ruff runs with the package's own
configuration when it has one: its ruff configuration, else its flake8 one as the lint task
translates it (:func:`~structured_agents.tasks.lint_settings.lint_settings`); otherwise with
:data:`FIXED_RULES`, written as a ``ruff.toml`` into every copy before anything runs, so
discovery, the agent's checks and the counts here all use it. The files evaluated are the
library's files with findings that the lint task takes (not a generated file, nor another
project's copy such as xmltodict 0.13.0's ``ez_setup.py``, which ruff alone would otherwise fix
and the agent leave: :func:`~structured_agents.tasks.lint.lintable_source`; ``limit`` keeps
that many, spread over the package); the tests run on the whole project.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from structured_agents.bundles import Bundle
from structured_agents.engines import BatchingEngine
from structured_agents.evaluation.agent import run_agent
from structured_agents.evaluation.dependencies import install_dependencies
from structured_agents.evaluation.errors import EvaluationError
from structured_agents.evaluation.layout import has_ruff_config, indents_with_tabs, package_files
from structured_agents.evaluation.package_tests import (
    TESTS_TIMEOUT_S,
    check_command,
    run_package_tests,
)
from structured_agents.evaluation.packages import spread
from structured_agents.evaluation.results import LintJobResult, LintPackageResult
from structured_agents.tasks.check import CheckCommand
from structured_agents.tasks.flake8_config import flake8_rules
from structured_agents.tasks.lint import lintable_source
from structured_agents.tasks.lint_settings import lint_settings
from structured_agents.tasks.pytarget import PythonTarget, find_interpreter
from structured_agents.tasks.ruff import ruff_findings
from structured_agents.tasks.ruff_config import ruff_config_file, ruff_settings, selects_rules

__all__ = [
    "FIXED_RULES",
    "RUFF_DEFAULT_RULES",
    "evaluate_lint",
    "pin_default_rules",
    "ruff_fix",
    "ruff_version",
]

FIXED_RULES = ("E", "F", "W", "I", "B", "UP", "SIM")
"""Ruff's rules for a package that configures none: pycodestyle, pyflakes, isort, bugbear,
pyupgrade and simplify, without the style rules of :func:`_style_choices`."""


STRICT_RULES = ("E", "F", "W", "B", "UP", "SIM", "PL", "RUF")
"""``sa eval lint --strict``: pycodestyle, pyflakes, bugbear, pyupgrade, simplify, pylint and
ruff's own, over the package's config (its line length, also where flake8 or black sets it,
target and per-file ignores hold), without the style rules of :func:`_style_choices`."""
RUFF_DEFAULT_RULES = ("E4", "E7", "E9", "F")
"""The selection a package's ruff config builds on when it selects no rules itself (ruff's
long-standing default); newer ruff versions select many more by default, which would count
findings under rules the package never chose."""


def _style_choices(root: Path) -> list[str]:
    """The rules :data:`FIXED_RULES` and :data:`STRICT_RULES` leave out for the package at
    ``root``, because they count a style the project chose: E501 (its line length) and, where
    it indents with tabs, W191 (pathspec's 943 findings, none of them a fault)."""
    return ["E501", *(["W191"] if indents_with_tabs(root) else [])]


def _write_fixed_config(root: Path) -> None:
    rules = json.dumps(list(FIXED_RULES))
    ignore = json.dumps(_style_choices(root))
    text = f"# sa eval: the package configures no ruff rules\n[lint]\nselect = {rules}\nignore = {ignore}\n"
    (root / "ruff.toml").write_text(text, encoding="utf-8")


def _pin(
    root: Path, why: str, select: Sequence[str], ignore: Sequence[str], line_length: int | None = None
) -> None:
    """Write a ``.ruff.toml`` with this rule selection over the package's own config, which it
    extends (ruff reads a ``.ruff.toml`` first), and ``line_length`` when given."""
    config = ruff_config_file(root)
    if config is not None and config.name == ".ruff.toml":  # make room for the pin
        config = config.rename(root / "ruff-package.toml")
    text = f"# sa eval: {why}\n"
    text += f'extend = "{config.name}"\n' if config is not None else ""
    text += f"line-length = {line_length}\n" if line_length is not None else ""
    text += f"\n[lint]\nselect = {json.dumps(list(select))}\nignore = {json.dumps(list(ignore))}\n"
    (root / ".ruff.toml").write_text(text, encoding="utf-8")


def pin_default_rules(root: Path) -> bool:
    """Pin :data:`RUFF_DEFAULT_RULES` under the package's own config when it selects none;
    whether it did. A ``select`` resets the rules of the configs beneath it, so the pin
    restates their ``extend-select`` and ``ignore``."""
    settings = ruff_settings(root)
    if ruff_config_file(root) is None or selects_rules(settings):
        return False
    lint = {**settings, **(settings.get("lint") or {})}  # rule settings at the top level too (old style)
    select = [*RUFF_DEFAULT_RULES, *(lint.get("extend-select") or ())]
    ignore = [*(lint.get("ignore") or ()), *(lint.get("extend-ignore") or ())]
    _pin(root, "the package selects no rules", select, ignore)
    return True


def _target_breaks(target: PythonTarget, released: Path, stage: Path, files: list[str]) -> tuple[str, ...]:
    """``path: what`` for each of ``files`` whose text at ``stage`` uses what the lowest
    supported Python lacks and the released text did not (:meth:`.PythonTarget.breaks`)."""
    broken = []
    for path in files:
        before = (released / path).read_text(encoding="utf-8", errors="replace")
        after = (stage / path).read_text(encoding="utf-8", errors="replace")
        what = target.breaks(released, path, before, after) if after != before else None
        if what is not None:
            broken.append(f"{path}: {what}")
    return tuple(broken)


def _ruff(root: Path, *arguments: str) -> str:
    command = [sys.executable, "-m", "ruff", *arguments]
    try:
        done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise EvaluationError(f"cannot run ruff: {exc}") from exc
    if done.returncode != 0:
        raise EvaluationError(f"ruff {' '.join(arguments[:2])} failed in {root}: {done.stderr.strip()[:300]}")
    return done.stdout


def ruff_version() -> str:
    """``ruff 0.x.y``: the ruff the evaluation runs."""
    return _ruff(Path.cwd(), "--version").strip()


def ruff_fix(root: Path, files: list[str]) -> None:
    """``ruff check --fix`` (its safe fixes) on ``files`` under ``root``, in place, with the
    codebase's lowest Python as the target and its rules (as the lint task gives them)."""
    if files:
        codebase = lint_settings(root).ruff_options()
        options = ("--fix", "--no-unsafe-fixes", "--exit-zero", "--no-cache", "--force-exclude", "--quiet")
        _ruff(root, "check", *codebase, *options, "--", *files)


def _count(root: Path, files: list[str]) -> int:
    found = ruff_findings(root, files, *lint_settings(root).ruff_options())
    return sum(len(findings) for findings in found.values())


async def evaluate_lint(
    label: str,
    project: Path,
    work: Path,
    bundle: Bundle,
    engine: BatchingEngine,
    *,
    limit: int | None,
    concurrency: int,
    check_tests: bool = False,
    strict: bool = False,
    from_dir: Path | None = None,
) -> LintPackageResult:
    """Evaluate the lint bundle on the unpacked ``project`` in the scratch folder ``work``;
    with ``check_tests``, the package's tests are the lint task's check command (when they all
    pass as released), so a change that breaks them is dropped; ``strict``: under
    :data:`STRICT_RULES` rather than the package's own selection. The package's requirements
    this interpreter lacks are installed for its tests into ``work/dependencies``
    (:func:`~structured_agents.evaluation.dependencies.install_dependencies`; from ``from_dir``
    only, when it is given)."""
    released = work / "released"
    shutil.copytree(project, released)
    config = "own" if has_ruff_config(released) else "flake8" if flake8_rules(released) else "fixed"
    if strict:  # the package's line length holds (flake8's or black's, which no extend carries)
        _pin(released, "--strict", STRICT_RULES, _style_choices(released), lint_settings(released).width)
        config = "strict"
    elif config == "fixed":
        _write_fixed_config(released)
    elif pin_default_rules(released):
        config = "own+defaults"
    settings = lint_settings(released)
    target = settings.target
    findings = ruff_findings(released, package_files(released), *settings.ruff_options())
    files = spread(sorted(path for path in findings if lintable_source(released, path) is not None), limit)
    by_ruff, by_agent = work / "ruff", work / "agent"
    shutil.copytree(released, by_ruff)
    shutil.copytree(released, by_agent)
    ruff_fix(by_ruff, files)
    dependencies = install_dependencies(released, work / "dependencies", from_dir)
    tests_before = run_package_tests(released, dependencies=dependencies)
    usable = tests_before.usable
    check = None
    if check_tests and usable and tests_before.failed == 0:
        check = CheckCommand(check_command(released, tests_before), TESTS_TIMEOUT_S)
    options = check.to_options() if check is not None else None
    chosen = set(files)
    jobs = [job for job in bundle.discover_jobs(by_agent, options=options) if job.path in chosen]
    run = await run_agent(
        bundle,
        engine,
        by_agent,
        jobs,
        store_path=work / "store.db",
        concurrency=concurrency,
        task_options=options,
    )
    return LintPackageResult(
        package=label,
        ruff_config=config,
        candidates=len(findings),
        files=tuple(files),
        before=sum(len(findings[path]) for path in files),
        ruff_only=_count(by_ruff, files),
        agent=_count(by_agent, files),
        same_as_ruff=sum((by_ruff / path).read_bytes() == (by_agent / path).read_bytes() for path in files),
        jobs=tuple(
            LintJobResult(
                job.run.target_path,
                job.run.status,
                job.failure,
                job.run.error,
                job.duration_s,
                job.result_summary,
            )
            for job in run.jobs
        ),
        tests_before=tests_before,
        tests_ruff=run_package_tests(by_ruff, tests_before) if usable else None,
        tests_agent=run_package_tests(by_agent, tests_before) if usable else None,
        wall_s=run.wall_s,
        check=check.command if check is not None else "",
        target=target.describe(),
        interpreter=_interpreter_name(target),
        breaks_ruff=_target_breaks(target, released, by_ruff, files),
        breaks_agent=_target_breaks(target, released, by_agent, files),
    )


def _interpreter_name(target: PythonTarget) -> str:
    found = find_interpreter(target.lowest) if target.lowest is not None else None
    return Path(found).name if found is not None else ""
