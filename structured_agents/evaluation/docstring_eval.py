"""The docstring evaluation of one package: strip its docstrings, let the agent write them
again, apply the patches and score what it wrote against what the authors had written.

The scratch copy is the whole project (tests and docs too, as a user's checkout would be),
with every function, method and class docstring removed (module docstrings kept, see
:mod:`.strip`), or with ``strip="targets"`` only the targets' (a partly documented codebase,
whose own docstrings the bundle may show). The targets are the library's definitions
(:func:`.layout.package_files`) that had a docstring; ``limit`` keeps that many, spread over
the package.
"""

from __future__ import annotations

import logging
import shutil
from collections import defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import libcst

from structured_agents.bundles import Bundle
from structured_agents.engines import BatchingEngine
from structured_agents.evaluation.agent import JobRecord, run_agent
from structured_agents.evaluation.layout import package_files
from structured_agents.evaluation.packages import spread
from structured_agents.evaluation.params import check_parameters
from structured_agents.evaluation.results import DocstringPackageResult, DocstringTargetResult
from structured_agents.evaluation.rouge import first_line, rouge_l
from structured_agents.evaluation.strip import strip_docstrings
from structured_agents.evaluation.words import leaked_words
from structured_agents.jobs import iter_source_files, read_source
from structured_agents.tasks.docstring import DocstringTarget, find_docstring_targets

__all__ = ["Strip", "evaluate_docstrings", "strip_tree"]

Strip = Literal["all", "targets"]
"""Whose docstrings an evaluation strips: every definition's, or its targets' only."""

logger = logging.getLogger(__name__)

_Key = tuple[str, str, int]
"""(path, qualname, occurrence): a definition, told apart from same-named ones by its order."""


def _keyed(path: str, targets: list[DocstringTarget]) -> dict[_Key, DocstringTarget]:
    seen: dict[str, int] = defaultdict(int)
    keyed = {}
    for target in targets:
        keyed[(path, target.qualname, seen[target.qualname])] = target
        seen[target.qualname] += 1
    return keyed


def _targets(root: Path, path: str) -> dict[_Key, DocstringTarget]:
    """Every definition of ``root/path``, documented or not (none when it does not parse)."""
    source = read_source(root / path)
    if source is None:
        return {}
    try:
        return _keyed(path, find_docstring_targets(source.text, include_documented=True))
    except (SyntaxError, ValueError):
        return {}


def _text(path: Path) -> str:
    source = read_source(path)
    return source.text if source is not None else ""


def strip_tree(root: Path, only: Mapping[str, Collection[str]] | None = None) -> int:
    """Strip the docstrings of every Python file under ``root`` in place (``only``: of the
    definitions with these qualified names, by file); how many went."""
    removed = 0
    for relative in iter_source_files(root):
        names = only.get(relative.as_posix()) if only is not None else None
        if only is not None and not names:
            continue
        source = read_source(root / relative)
        if source is None:
            continue
        try:
            text, count = strip_docstrings(source.text, names)
        except libcst.ParserSyntaxError as exc:
            logger.warning("not stripped: %s does not parse: %s", relative, exc)
            continue
        if count:
            (root / relative).write_bytes(text.encode("utf-8"))
            removed += count
    return removed


def _job_keys(records: tuple[JobRecord, ...]) -> dict[_Key, JobRecord]:
    """The jobs by the key of their target (same-named definitions in ``def`` line order)."""
    groups: dict[tuple[str, str], list[JobRecord]] = defaultdict(list)
    for record in records:
        groups[(record.run.target_path, record.run.qualname)].append(record)
    keyed = {}
    for (path, qualname), group in groups.items():
        group.sort(key=lambda r: int(r.run.inputs.get("def_line") or 0))
        keyed.update({(path, qualname, index): record for index, record in enumerate(group)})
    return keyed


@dataclass(frozen=True, slots=True)
class _Scoring:
    """What scoring a target needs besides the target itself."""

    vocabulary: frozenset[str]
    originals: dict[str, str]
    """Each library file's text as released."""


def _score(
    key: _Key, target: DocstringTarget, written: str | None, job: JobRecord | None, scoring: _Scoring
) -> DocstringTargetResult:
    original = target.docstring or ""
    failure = None
    if written is None:
        failure = job.failure if job is not None else "no job"
        failure = failure or "no docstring after the patch"
    return DocstringTargetResult(
        path=key[0],
        qualname=target.qualname,
        kind=target.kind,
        original=original,
        written=written,
        failure=failure,
        error=job.run.error if job is not None else None,
        copy_refusals=job.copy_refusals if job is not None else 0,
        duration_s=job.duration_s if job is not None else None,
        rouge_l=rouge_l(first_line(written), first_line(original)) if written is not None else None,
        leaked=tuple(leaked_words(written, scoring.originals[key[0]], scoring.vocabulary)) if written else (),
        parameters=check_parameters(written, target.parameters) if written is not None else None,
        original_parameters=check_parameters(original, target.parameters),
        flags=job.flags if job is not None else (),
        cut_off=job.cut_off if job is not None else 0,
    )


async def evaluate_docstrings(
    label: str,
    project: Path,
    work: Path,
    bundle: Bundle,
    engine: BatchingEngine,
    vocabulary: frozenset[str],
    *,
    limit: int | None,
    concurrency: int,
    strip: Strip = "all",
) -> DocstringPackageResult:
    """Evaluate the docstring bundle on the unpacked ``project`` in the scratch folder ``work``,
    its docstrings stripped as ``strip`` says (module docstring)."""
    files = package_files(project)
    candidates = {
        key: target
        for path in files
        for key, target in _targets(project, path).items()
        if target.docstring is not None
    }
    chosen = spread(list(candidates), limit)
    code = work / "code"
    shutil.copytree(project, code)
    wanted = {(path, qualname) for path, qualname, _ in chosen}
    only: dict[str, set[str]] = defaultdict(set)
    for path, qualname in wanted:
        only[path].add(qualname)
    strip_tree(code, only if strip == "targets" else None)
    jobs = [job for job in bundle.discover_jobs(code) if (job.path, job.qualname) in wanted]
    run = await run_agent(bundle, engine, code, jobs, store_path=work / "store.db", concurrency=concurrency)
    records = _job_keys(run.jobs)
    after: dict[_Key, DocstringTarget] = {}
    for path in sorted({key[0] for key in chosen}):
        after.update(_targets(code, path))
    scoring = _Scoring(vocabulary, {path: _text(project / path) for path in files})
    results = []
    for key in chosen:
        written_target = after.get(key)
        written = written_target.docstring if written_target is not None else None
        results.append(_score(key, candidates[key], written, records.get(key), scoring))
    return DocstringPackageResult(label, len(files), len(candidates), tuple(results), run.wall_s)
