"""One evaluation: fetch the packages, build the engine once, evaluate each package in its own
scratch folder, and gather the report.

::

    report = asyncio.run(evaluate(EvalSetup("docstring", specs, "docstring"), engine_factory))

Every archive is fetched before the engine is built, so a missing package fails in seconds,
not after a model load. A package that fails after that (its archive will not unpack, ruff
refuses its configuration) is reported as a :class:`~.results.UnevaluatedPackage` and the others are
still evaluated. The engine is wrapped in one
:class:`~structured_agents.engines.BatchingEngine` that every package's runner shares (the
runner leaves a batching engine open), and closed at the end.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from structured_agents.bundles import Bundle, load_bundle
from structured_agents.engines import BatchingEngine
from structured_agents.errors import StructuredAgentsError
from structured_agents.evaluation.docstring_eval import Strip, evaluate_docstrings
from structured_agents.evaluation.errors import EvaluationError
from structured_agents.evaluation.fetch import fetch_package
from structured_agents.evaluation.lint_eval import evaluate_lint, ruff_version
from structured_agents.evaluation.packages import PackageSpec
from structured_agents.evaluation.results import EvalReport, PackageResult, UnevaluatedPackage
from structured_agents.evaluation.unpack import unpack
from structured_agents.evaluation.words import bundle_vocabulary
from structured_agents.kernel.engine import Engine

__all__ = ["TASKS", "EvalSetup", "evaluate"]

TASKS = ("docstring", "lint")
"""The tasks ``sa eval`` measures."""

_BATCH_WAIT_S = 0.2
"""How long the shared batching engine waits for more requests (as ``sa run``'s runner)."""


@dataclass(frozen=True, slots=True)
class EvalSetup:
    """What to evaluate, and how."""

    task: str
    """``docstring`` or ``lint``."""
    packages: tuple[PackageSpec, ...]
    bundle: str | Path
    """The bundle (a name or a path); its task must be ``task``."""
    engine_label: str = ""
    """How the report names the engine."""
    from_dir: Path | None = None
    """A folder of archives to take the packages from, instead of the cache or pip."""
    limit: int | None = None
    """Targets (docstring) or files (lint) per package; None: all."""
    concurrency: int = 8
    work_dir: Path | None = None
    """Where the scratch copies go (kept); None: a temporary folder, removed after."""
    check_tests: bool = False
    """Lint: the package's own tests are the check the agent's changes must pass."""
    strict: bool = False
    """Lint: count and fix under :data:`~.lint_eval.STRICT_RULES`, not the package's selection."""
    strip: Strip = "all"
    """Docstring: strip every definition's docstring (``all``), or the targets' only
    (``targets``: the rest of the codebase stays documented, as a partly documented one is)."""


async def _package(
    setup: EvalSetup,
    bundle: Bundle,
    engine: BatchingEngine,
    vocabulary: frozenset[str],
    spec: PackageSpec,
    project: Path,
    work: Path,
) -> PackageResult:
    label = str(spec)
    if setup.task == "docstring":
        return await evaluate_docstrings(
            label,
            project,
            work,
            bundle,
            engine,
            vocabulary,
            limit=setup.limit,
            concurrency=setup.concurrency,
            strip=setup.strip,
        )
    return await evaluate_lint(
        label,
        project,
        work,
        bundle,
        engine,
        limit=setup.limit,
        concurrency=setup.concurrency,
        check_tests=setup.check_tests,
        strict=setup.strict,
        from_dir=setup.from_dir,
    )


async def _evaluate_in(
    setup: EvalSetup,
    engine_factory: Callable[[], Engine],
    work: Path,
    report_package: Callable[[PackageResult | UnevaluatedPackage], None],
) -> EvalReport:
    started = time.monotonic()
    if setup.task not in TASKS:
        raise EvaluationError(f"task must be one of {', '.join(TASKS)}, got {setup.task!r}")
    archives = [(spec, fetch_package(spec, from_dir=setup.from_dir)) for spec in setup.packages]
    bundle = load_bundle(setup.bundle)
    try:
        if bundle.manifest.task != setup.task:
            raise EvaluationError(
                f"bundle {bundle.manifest.name!r} ({bundle.path}) does task "
                f"{bundle.manifest.task!r}, not {setup.task!r}"
            )
        await bundle.connect()
        vocabulary = bundle_vocabulary(bundle) if setup.task == "docstring" else frozenset()
        loading = time.monotonic()
        engine = BatchingEngine(engine_factory(), max_batch_size=setup.concurrency, max_wait_s=_BATCH_WAIT_S)
        load_s = time.monotonic() - loading
        results: list[PackageResult] = []
        errors: list[UnevaluatedPackage] = []
        try:
            for spec, archive in archives:
                package_work = work / f"{spec.name}-{spec.version}"
                try:
                    project = unpack(archive, package_work / "unpacked")
                    result = await _package(setup, bundle, engine, vocabulary, spec, project, package_work)
                except StructuredAgentsError as exc:
                    error = UnevaluatedPackage(str(spec), str(exc))
                    report_package(error)
                    errors.append(error)
                    continue
                report_package(result)
                results.append(result)
        finally:
            engine.close()
    finally:
        await bundle.aclose()
    return EvalReport(
        task=setup.task,
        bundle=f"{bundle.manifest.name} {bundle.manifest.version}",
        bundle_path=str(bundle.path),
        engine=setup.engine_label,
        tool_version=ruff_version() if setup.task == "lint" else "",
        limit=setup.limit,
        concurrency=setup.concurrency,
        engine_load_s=load_s,
        packages=tuple(results),
        wall_s=time.monotonic() - started,
        strip=setup.strip,
        errors=tuple(errors),
    )


async def evaluate(
    setup: EvalSetup,
    engine_factory: Callable[[], Engine],
    report_package: Callable[[PackageResult | UnevaluatedPackage], None] = lambda _result: None,
) -> EvalReport:
    """Run the evaluation ``setup`` describes with the engine ``engine_factory`` builds;
    ``report_package`` hears of each package as it is done, or as it fails."""
    if setup.work_dir is not None:
        setup.work_dir.mkdir(parents=True, exist_ok=True)
        if any(setup.work_dir.iterdir()):
            raise EvaluationError(f"--work-dir {setup.work_dir} is not empty")
        # Absolute: the checks run in the scratch copies, where a relative path means nothing.
        return await _evaluate_in(setup, engine_factory, setup.work_dir.resolve(), report_package)
    with tempfile.TemporaryDirectory(prefix="sa-eval-") as temp:
        return await _evaluate_in(setup, engine_factory, Path(temp), report_package)
