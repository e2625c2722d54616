"""The ``lint`` task: go on where ruff's safe fixes stop, one job per file with ruff findings.

Ruff runs with the codebase's lowest supported Python as its target, and under the codebase's
rules: its ruff configuration, else its flake8 one translated
(:func:`~structured_agents.tasks.lint_settings.lint_settings`). Discovery applies ruff's safe fixes
(``ruff check --fix``, through stdin: nothing is written) to each file with findings; what
they leave are the job's *fixes*: ruff's unsafe ones, and for a finding ruff has no fix for,
the candidates of :mod:`~structured_agents.tasks.lint_rewrites` (``except Exception:`` for a
bare ``except``...; with a check, explicit imports for star imports), each laid out as ruff
format would where it writes a long line or the code around it is formatted already
(:mod:`~structured_agents.tasks.lint_layout`). A finding with neither is left as it is, and
the summary says so. A file that says a tool generates it (:func:`is_generated`), one that is
another project's copy (:func:`is_vendored`, :func:`in_vendored_package`), one that does not
parse, and one where neither ruff's safe fixes nor any fix or candidate could change a thing
get no job (the last is logged: a run of the model could only confirm it).

With a check command (the batch's ``check`` option), evidence decides every fix, not the
model: the outcome tries each fix in the file (not only the few a job would offer), kept when
the verdict's evidence holds (:func:`~structured_agents.tasks.lint_verdict.judge`: it
compiles, breaks no supported Python, leaves fewer findings, the check passes), and the job
offers the agent nothing to decide. Without one, only a fix with which the file compiles to
the same bytecode (:func:`~structured_agents.tasks.same_code.same_code`: a one-line block put
on its own line, nested ``if`` statements joined, an ``if``/``else`` assignment written as a
conditional expression) is known to keep what the code does: such
fixes are proposed without a decision. For every other fix the agent accepts or rejects it
(:func:`~structured_agents.tasks.lint_fixes.candidates`, one a turn, in order, each turn's
grammar admitting only the next one: :func:`~structured_agents.tasks.lint_fixes.lint_tool_view`),
and the verdict checks the accepted ones. Once a proposal holds, the fixes that keep its code
and appear only once others are made (the inner pair of three nested ``if`` statements) are
proposed on it, pass by pass (:func:`~structured_agents.tasks.lint_passes.more_of_the_same`).

The job's inputs: ``path``, ``source`` (the text after ruff's safe fixes, which every line
number and offset refers to), ``findings`` (the fixes offered) and ``fix_ids``. A file whose
findings ruff's safe fixes remove entirely, or that offers nothing, is a job too: its result
is ruff's fixes (and, with a check, the fixes evidence keeps). A job whose file nothing ends up
changing succeeds without a change (its summary says what was left), so the next run skips it.

The summary reports the counts, e.g. ``ruff 12 -> 5 (ruff --fix alone: 7); agent: 4 proposed,
3 kept, 1 failed the check (E712 line 40: ...); left: E501, PLR2004; no fix offered:
E501, PLR2004``, on a second line the target assumed, and on a third whose rules ruff checked
when they are flake8's.
"""

from __future__ import annotations

import ast
import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from structured_agents import syntax
from structured_agents.jobs.errors import DiscoveryError
from structured_agents.jobs.ids import job_id
from structured_agents.jobs.source import SourceFile, read_source
from structured_agents.jobs.spec import JobSpec
from structured_agents.jobs.walk import iter_source_files
from structured_agents.kernel.result import RunResult
from structured_agents.patches import file_change
from structured_agents.tasks.base import read_target, submission
from structured_agents.tasks.check import CHECK_OPTION, CHECK_TIMEOUT_OPTION, CheckCommand
from structured_agents.tasks.errors import TaskError
from structured_agents.tasks.lint_fixes import (
    Change,
    candidates,
    decisions,
    fix_change,
    fix_edits,
    fixes,
    lint_tool_view,
)
from structured_agents.tasks.lint_layout import laid_out
from structured_agents.tasks.lint_passes import more_of_the_same
from structured_agents.tasks.lint_rewrites import with_candidates
from structured_agents.tasks.lint_settings import LintSettings, lint_settings
from structured_agents.tasks.lint_verdict import judge
from structured_agents.tasks.protocol import Guidance, Outcome
from structured_agents.tasks.ruff import codes_of, fixable_diagnostics, ruff_findings, ruff_safe_fixes
from structured_agents.tasks.ruff_config import blocking_configs
from structured_agents.tasks.same_code import same_code

__all__ = [
    "LINT_KIND",
    "MODULE_QUALNAME",
    "LintTask",
    "agent_changes",
    "discover_lint_jobs",
    "in_vendored_package",
    "is_generated",
    "is_vendored",
    "laid_out_fixes",
    "lint_inputs",
    "lintable_source",
]

LINT_KIND = "lint"
MODULE_QUALNAME = "<module>"
"""The qualified name of whole-file jobs."""
_SAMPLE_SOURCE = "def ready(flag):\n    if flag == True:\n        return 1\n"
_SAMPLE_DIAGNOSTIC = {
    "code": "E712",
    "message": "Avoid equality comparisons to `True`; use `flag:` for truth checks",
    "location": {"row": 2, "column": 8},
    "end_location": {"row": 2, "column": 21},
    "fix": {
        "applicability": "unsafe",
        "message": "Replace with `flag`",
        "edits": [
            {"content": "flag", "location": {"row": 2, "column": 8}, "end_location": {"row": 2, "column": 21}}
        ],
    },
}


def lint_inputs(path: str, fixed: str, offered: list[dict[str, Any]]) -> dict[str, Any]:
    """A lint job's inputs for ``path``, whose text after ruff's safe fixes is ``fixed``, with the
    fixes ``offered`` the agent (the findings with a fix of ruff's or a candidate:
    :func:`~structured_agents.tasks.lint_rewrites.with_candidates`; none when a check command
    decides them)."""
    found = candidates(fixed, offered)
    return {"path": path, "source": fixed, "findings": found, "fix_ids": [finding["id"] for finding in found]}


logger = logging.getLogger(__name__)

_GENERATED = re.compile(
    r"^#.*(@generated|do not edit|auto(matically)?[- ]generated|generated (by|from|with))", re.IGNORECASE
)
_GENERATED_LINES = 5


def is_generated(text: str) -> bool:
    """Whether the file says in a comment of its first lines that a tool writes it (``# This
    file is automatically generated by ...``, ``@generated``, ``DO NOT EDIT``): a hand edit would
    be lost on the next run of that tool."""
    return any(_GENERATED.match(line.strip()) for line in text.splitlines()[:_GENERATED_LINES])


_VENDORED_NAMES = frozenset({"ez_setup.py", "distribute_setup.py", "versioneer.py"})
"""Scripts projects copy in from another project, whose copies are meant to match it."""
_ELSEWHERE = re.compile(
    r"\b(vendored|copied|taken verbatim) from\b|\bback-?port(ed|s)?\b|\bactivestate\.com/recipes\b",
    re.IGNORECASE,
)
"""What a module's docstring or opening comments say when it is another project's code: copied,
a backport of the standard library's, a published recipe."""
_VENDOR_FOLDERS = frozenset({"_vendor", "vendor", "_vendored", "vendored", "third_party", "_third_party"})
"""Folders projects keep other projects' copies in (pip's and tablib's ``_vendor``)."""


def _opening(text: str, tree: ast.Module) -> str:
    """The comments a module's text opens with, before its first statement, and its docstring."""
    first = tree.body[0].lineno if tree.body else len(text.splitlines()) + 1
    comments = [line for line in text.splitlines()[: first - 1] if line.lstrip().startswith("#")]
    return "\n".join([*comments, ast.get_docstring(tree) or ""])


def is_vendored(path: str, text: str, tree: ast.Module) -> bool:
    """Whether the file ``path`` (``text``, parsed as ``tree``) is another project's copy: a
    bootstrap script projects copy in (xmltodict 0.13.0's ``ez_setup.py``, "Maintained at
    https://github.com/pypa/setuptools/tree/bootstrap"; ``versioneer.py``), or one whose module
    docstring or opening comments say it is vendored or copied from elsewhere, a backport or a
    published recipe (glob2 0.7's ``compat.py``: "Back-port functools.lru_cache to Python 2",
    from an ActiveState recipe, whose cache two fixes a reviewer rejected would have broken; not
    merely "maintained at" a URL, which a project's own modules say too), or one in a folder
    named for such copies
    (:data:`_VENDOR_FOLDERS`: tablib 3.6.1's ``_vendor/dbfpy``, which says so nowhere else). A
    strict reviewer sent back a rename in ``ez_setup.py``: the copy should not drift from its
    upstream for a lint finding."""
    where = PurePosixPath(path)
    if where.name in _VENDORED_NAMES or _VENDOR_FOLDERS.intersection(where.parts[:-1]):
        return True
    return _ELSEWHERE.search(_opening(text, tree)) is not None


def _own_version(init: Path) -> str | None:
    """The string a package's ``__init__.py`` assigns to ``__version__`` at its top level."""
    source = read_source(init)
    try:
        tree = syntax.parse(source.text, init.name) if source is not None else None
    except (SyntaxError, ValueError):
        return None
    for statement in tree.body if tree is not None else ():
        if (
            isinstance(statement, ast.Assign)
            and any(
                isinstance(target, ast.Name) and target.id == "__version__" for target in statement.targets
            )
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
        ):
            return statement.value.value
    return None


def in_vendored_package(root: Path, path: str) -> bool:
    """Whether the file ``path`` under ``root`` lies in a package that stands inside another and
    declares a ``__version__`` of its own, other than the enclosing package's: another project
    copied in whole (pycparser 2.21's ``pycparser/ply``, PLY 3.9, with no word of it in any
    docstring). A namespace package's own ``__init__.py`` declares no version, so a project's
    packages under it are not mistaken for one."""
    outer: str | None = None
    folder = root
    for part in PurePosixPath(path).parts[:-1]:
        folder = folder / part
        init = folder / "__init__.py"
        if not init.is_file():
            outer = None
            continue
        version = _own_version(init)
        if outer is not None and version is not None and version != outer:
            return True
        outer = version or outer
    return False


def lintable_source(root: Path, path: str) -> SourceFile | None:
    """The file ``path`` under ``root`` when the task lints it; None (logged) for one it leaves:
    unreadable, generated (:func:`is_generated`), not parsing, or another project's copy
    (:func:`is_vendored`, :func:`in_vendored_package`)."""
    source = read_source(root / path)
    if source is None or is_generated(source.text):
        return None
    try:
        tree = syntax.parse(source.text, path)
    except (SyntaxError, ValueError) as exc:
        logger.warning("skipping %s: does not parse: %s", path, exc)
        return None
    if is_vendored(path, source.text, tree) or in_vendored_package(root, path):
        logger.info("skipping %s: a copy of another project's file", path)
        return None
    return source


def discover_lint_jobs(root: Path, options: Mapping[str, Any] | None = None) -> list[JobSpec]:
    """One job per file with findings, for a batch with ``options`` (see the module docstring)."""
    with_fixes = CheckCommand.from_options(options or {}) is None
    files = [path.as_posix() for path in iter_source_files(root)]
    blocking = blocking_configs(root, files)
    if blocking:
        raise DiscoveryError(f"{blocking[0]}: not a regular file, where ruff reads its configuration")
    settings = lint_settings(root)
    ruff_options, lowest = settings.ruff_options(), settings.target.lowest
    jobs = []
    for path in sorted(ruff_findings(root, files, *ruff_options)):
        source = lintable_source(root, path)
        if source is None:
            continue
        file_ruff = settings.file_options(root, path, source.text)
        fixed = ruff_safe_fixes(root, path, source.text, *file_ruff)
        diagnostics = fixable_diagnostics(
            root, path, fixed, *file_ruff, offered=settings.lengthening(root, path, source.text)
        )
        offered = with_candidates(fixed, diagnostics, path, None if with_fixes else root, lowest)[0]
        if fixed == source.text and not offered:
            codes = sorted({str(item.get("code")) for item in diagnostics})
            logger.info(
                "nothing to fix in %s: no fix ruff or this task offers for %s", path, ", ".join(codes)
            )
            continue
        jobs.append(
            JobSpec(
                job_id=job_id(LINT_KIND, path, MODULE_QUALNAME, source.text),
                kind=LINT_KIND,
                path=path,
                qualname=MODULE_QUALNAME,
                source_hash=source.hash,
                inputs=lint_inputs(
                    path,
                    fixed,
                    laid_out_fixes(root, path, source.text, fixed, _to_decide(fixed, offered), settings)
                    if with_fixes
                    else [],
                ),
            )
        )
    return jobs


def laid_out_fixes(
    root: Path,
    path: str,
    original: str,
    fixed: str,
    offered: Sequence[Mapping[str, Any]],
    settings: LintSettings,
) -> list[dict[str, Any]]:
    """The fixes ``offered`` (findings on ``fixed``, ``original`` after ruff's safe fixes, with a
    fix: :func:`~structured_agents.tasks.lint_rewrites.with_candidates`), each laid out as ruff
    format would where the code around it is formatted already
    (:func:`~structured_agents.tasks.lint_layout.laid_out`). Only where the laid-out form is
    used: the fixes a job offers its agent, or those a check decides."""
    return [laid_out(root, path, fixed, original, item, settings) for item in offered]


def _to_decide(text: str, offered: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The fixes of ``offered`` (findings on ``text`` with a fix) that the agent decides: all but
    those that keep the code (:func:`~structured_agents.tasks.same_code.same_code`)."""
    kept = {change.edits for change in same_code(text, fixes(text, offered))}
    return [finding for finding in offered if fix_edits(text, finding) not in kept]


def agent_changes(inputs: Mapping[str, Any], result: RunResult) -> tuple[list[Change], list[Change]]:
    """The fixes the agent accepted, in line order (the last decision about each counting), and
    the fixes it offered that the agent did not accept."""
    findings = {f["id"]: f for f in inputs.get("findings") or () if isinstance(f, Mapping) and "id" in f}
    try:
        accepted = decisions(result.tool_results)
    except ValueError as exc:
        raise TaskError(str(exc)) from exc
    taken = [fix_change(findings[i]) for i, yes in accepted.items() if yes and i in findings]
    others = [fix_change(finding) for i, finding in findings.items() if not accepted.get(i)]
    return (
        sorted((change for change in taken if change is not None), key=_first_offset),
        [change for change in others if change is not None],
    )


def _first_offset(change: Change) -> int:
    return min(start for start, _, _ in change.edits)


class LintTask:
    """The ``lint`` task (see the module docstring)."""

    name = LINT_KIND
    option_names = frozenset({CHECK_OPTION, CHECK_TIMEOUT_OPTION})

    def discover(
        self, root: Path, *, overwrite: bool = False, options: Mapping[str, Any] | None = None
    ) -> list[JobSpec]:
        """One job per file with findings (``overwrite`` changes nothing: findings are the work)."""
        return discover_lint_jobs(root, options)

    def sample_inputs(self) -> dict[str, Any]:
        """The inputs of a job for a file with one comparison to ``True``."""
        path = "pkg/module.py"
        return lint_inputs(
            path, _SAMPLE_SOURCE, with_candidates(_SAMPLE_SOURCE, [dict(_SAMPLE_DIAGNOSTIC)], path)[0]
        )

    def guidance(self, termination: str, fixed_texts: Sequence[str], shown_texts: Sequence[str]) -> Guidance:
        """Each job's fix ids and lines as its tools' enums (:func:`.lint_fixes.lint_tool_view`)."""
        return Guidance(tool_view=lint_tool_view)

    def outcome(self, job: JobSpec, result: RunResult, root: Path, options: Mapping[str, Any]) -> Outcome:
        """Ruff's safe fixes and the agent's changes that hold (see the module docstring)."""
        submission(result)
        check = CheckCommand.from_options(options)
        original = read_target(job, root)
        settings = lint_settings(root)
        file_ruff = settings.file_options(root, job.path, original)
        by_ruff = ruff_safe_fixes(root, job.path, original, *file_ruff)
        if by_ruff != job.inputs.get("source"):
            raise TaskError(
                f"ruff's safe fixes of {job.path} differ from those discovery saw (another ruff "
                "version or configuration?): discover the jobs again"
            )
        diagnostics = fixable_diagnostics(
            root, job.path, by_ruff, *file_ruff, offered=settings.lengthening(root, job.path, original)
        )
        offered, unfixable = with_candidates(
            by_ruff, diagnostics, job.path, root if check else None, settings.target.lowest
        )
        rejected: list[Change] = []
        if check is None:  # the fixes the job offered, laid out at discovery, and those that keep the code
            (changes, rejected), proposer = agent_changes(job.inputs, result), "agent"
            every = fixes(by_ruff, offered)
            same = same_code(by_ruff, every)
            if same:
                changes = sorted([*changes, *same], key=_first_offset)
                proposer = f"agent, and {len(same)} that keep the code (the same bytecode)"
            shown = {change.label for change in (*changes, *rejected)}
            rejected += [change for change in every if change.label not in shown]
        else:  # evidence decides every fix, not the model
            laid = laid_out_fixes(root, job.path, original, by_ruff, offered, settings)
            changes, proposer = fixes(by_ruff, laid), "fixes tried"
        verdict = judge(root, job.path, original, by_ruff, changes, check, settings, rejected=rejected)
        verdict.unfixable = codes_of(unfixable)
        proposed = len(changes)
        if verdict.problem is None and verdict.kept:
            more = more_of_the_same(
                root, job.path, original, verdict, settings, file_ruff, root if check else None
            )
            if more:
                proposed += more
                proposer += f", then {more} more of the same bytecode once those were made"
        summary = verdict.summary(proposed, proposer)
        if verdict.problem is not None:
            error = f"rejected: {verdict.problem}"
            change = file_change(job.path, original, by_ruff)
            return Outcome(False, change, summary, error=error, result_status="rejected")
        if verdict.text == original:  # done: what is left is said, and the next run skips it
            return Outcome(True, None, f"nothing to change: {summary}")
        return Outcome(True, file_change(job.path, original, verdict.text), summary)
