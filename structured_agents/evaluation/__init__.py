"""``sa eval``: how well a bundle does on real packages nobody here wrote.

::

    report = asyncio.run(evaluate(EvalSetup("docstring", specs, "docstring"), engine_factory))
    console.print(render_report(report))

Packages come from the package index by pinned spec (cached), or from a local folder of
archives. The docstring evaluation strips a package's docstrings, lets the bundle write them
again through the embedded runner, applies the patches and scores them against the originals
(documented share, failures by reason, ROUGE-L of the first line, words leaked from the
bundle's own text, parameter names); the lint evaluation compares ruff's findings and the
package's tests as released, after ``ruff check --fix`` alone and after the agent.
"""

from __future__ import annotations

from structured_agents.evaluation.errors import EvaluationError
from structured_agents.evaluation.evaluate import TASKS, EvalSetup, evaluate
from structured_agents.evaluation.packages import DEFAULT_PACKAGES, PackageSpec, parse_spec
from structured_agents.evaluation.results import (
    DocstringPackageResult,
    DocstringTargetResult,
    EvalReport,
    LintJobResult,
    LintPackageResult,
    PackageResult,
    UnevaluatedPackage,
)
from structured_agents.evaluation.tables import render_report

__all__ = [
    "DEFAULT_PACKAGES",
    "TASKS",
    "DocstringPackageResult",
    "DocstringTargetResult",
    "EvalReport",
    "EvalSetup",
    "EvaluationError",
    "LintJobResult",
    "LintPackageResult",
    "PackageResult",
    "PackageSpec",
    "UnevaluatedPackage",
    "evaluate",
    "parse_spec",
    "render_report",
]
