"""What an evaluation found: per target, per package and for the whole run, with the rates
the table shows and a JSON-ready form (``to_dict``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from statistics import fmean
from typing import Any

from structured_agents.evaluation.failures import count_reasons
from structured_agents.evaluation.package_tests import TestsOutcome
from structured_agents.evaluation.params import ParameterCheck

__all__ = [
    "DocstringPackageResult",
    "DocstringTargetResult",
    "EvalReport",
    "LintJobResult",
    "LintPackageResult",
    "PackageResult",
    "UnevaluatedPackage",
]


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


@dataclass(frozen=True, slots=True)
class DocstringTargetResult:
    """One target that had a docstring, and what the agent wrote in its place."""

    path: str
    qualname: str
    kind: str
    """``function``, ``method`` or ``class``."""
    original: str
    """The docstring its author wrote."""
    written: str | None
    """The docstring in the file after the patches were applied; None: the target got none."""
    failure: str | None
    """Why it got none (grouped reason); None when it got one."""
    error: str | None
    """The run's own error message, when it failed."""
    copy_refusals: int
    """Submissions refused as copies of the bundle's examples or tool descriptions."""
    duration_s: float | None
    """Seconds the job ran."""
    rouge_l: float | None
    """ROUGE-L F1 of the written first line against the original's."""
    leaked: tuple[str, ...]
    """Words of the written docstring found in the bundle's text but not in the target's file."""
    parameters: ParameterCheck | None
    """The written docstring's parameter entries against the real parameters."""
    original_parameters: ParameterCheck
    """The same for the original docstring, for comparison."""
    flags: tuple[str, ...] = ()
    """What the docstring verifier still found wrong (the change was stored flagged for
    review, and ``sa apply`` would leave it); empty: a clean proposal."""
    cut_off: int = 0
    """Model turns of its job that ended on the token limit."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class DocstringPackageResult:
    """The docstring evaluation of one package."""

    package: str
    files: int
    """Library files of the package."""
    candidates: int
    """Targets that had a docstring (``targets`` holds those ``--limit`` kept)."""
    targets: tuple[DocstringTargetResult, ...]
    wall_s: float
    """Wall time of the agent run and the patch application."""
    task: str = field(default="docstring", init=False)

    @property
    def job_count(self) -> int:
        """Targets the agent ran on."""
        return len(self.targets)

    @property
    def written(self) -> list[DocstringTargetResult]:
        """The targets that got a docstring."""
        return [t for t in self.targets if t.written is not None]

    @property
    def documented_rate(self) -> float | None:
        """Share of the targets that got a docstring."""
        return _rate(len(self.written), len(self.targets))

    @property
    def failures(self) -> dict[str, int]:
        """Targets without a docstring, by reason."""
        return count_reasons(t.failure for t in self.targets)

    @property
    def refused_targets(self) -> int:
        """Targets with at least one submission refused as a copy."""
        return sum(t.copy_refusals > 0 for t in self.targets)

    @property
    def rouge_l(self) -> float | None:
        """Mean ROUGE-L of the written first lines."""
        scores = [t.rouge_l for t in self.written if t.rouge_l is not None]
        return fmean(scores) if scores else None

    @property
    def clean(self) -> list[DocstringTargetResult]:
        """The written docstrings with no flag: what ``sa apply`` applies by default."""
        return [t for t in self.written if not t.flags]

    @property
    def clean_rate(self) -> float | None:
        """Share of the targets that got a clean docstring (``sa apply``'s coverage)."""
        return _rate(len(self.clean), len(self.targets))

    @property
    def flagged_rate(self) -> float | None:
        """Share of the written docstrings flagged for review."""
        return _rate(len(self.written) - len(self.clean), len(self.written))

    @property
    def flag_reasons(self) -> dict[str, int]:
        """Flags by their code (``return-claim``, ``unknown-words``...), most frequent first."""
        counts: dict[str, int] = {}
        for target in self.written:
            for flag in target.flags:
                code = flag.split(":", 1)[0]
                counts[code] = counts.get(code, 0) + 1
        return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))

    @property
    def cut_off_turns(self) -> int:
        """Model turns that ended on the token limit."""
        return sum(t.cut_off for t in self.targets)

    @property
    def leaked_rate(self) -> float | None:
        """Share of the written docstrings with a leaked word."""
        return _rate(sum(bool(t.leaked) for t in self.written), len(self.written))

    def _parameter_rate(self, numerator: str, denominator: str, *, original: bool = False) -> float | None:
        checks = [t.original_parameters if original else t.parameters for t in self.written]
        present = [c for c in checks if c is not None]
        return _rate(
            sum(getattr(c, numerator) for c in present), sum(getattr(c, denominator) for c in present)
        )

    @property
    def entries_real_rate(self) -> float | None:
        """Of the parameter entries written, the share naming a real parameter."""
        return self._parameter_rate("entries_real", "entries")

    @property
    def real_documented_rate(self) -> float | None:
        """Of the real parameters of the documented targets, the share the written docstrings describe."""
        return self._parameter_rate("real_documented", "real")

    @property
    def original_real_documented_rate(self) -> float | None:
        """The same share for the original docstrings of the same targets."""
        return self._parameter_rate("real_documented", "real", original=True)

    @property
    def seconds_per_job(self) -> float | None:
        """Wall time per target."""
        return self.wall_s / len(self.targets) if self.targets else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the counts, the rates and every target."""
        return {
            "task": self.task,
            "package": self.package,
            "files": self.files,
            "candidates": self.candidates,
            "targets": len(self.targets),
            "documented": len(self.written),
            "documented_rate": self.documented_rate,
            "failures": self.failures,
            "refused_targets": self.refused_targets,
            "rouge_l": self.rouge_l,
            "leaked_rate": self.leaked_rate,
            "clean_rate": self.clean_rate,
            "flagged_rate": self.flagged_rate,
            "flag_reasons": self.flag_reasons,
            "cut_off_turns": self.cut_off_turns,
            "entries_real_rate": self.entries_real_rate,
            "real_documented_rate": self.real_documented_rate,
            "original_real_documented_rate": self.original_real_documented_rate,
            "wall_s": self.wall_s,
            "seconds_per_job": self.seconds_per_job,
            "results": [t.to_dict() for t in self.targets],
        }


@dataclass(frozen=True, slots=True)
class LintJobResult:
    """One file's lint job."""

    path: str
    status: str
    """The run's status (``succeeded``, ``failed``)."""
    failure: str | None
    """Why it produced no applied change (grouped reason)."""
    error: str | None
    """The run's own error message."""
    duration_s: float | None
    summary: str = ""
    """Its result's summary: findings before and after, and the agent's changes proposed,
    kept and failed (``ruff 12 -> 5 (ruff --fix alone: 7); agent: 4 proposed, 3 kept, ...``)."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class LintPackageResult:
    """The lint evaluation of one package: ruff's findings and the package's tests, before,
    after ``ruff check --fix`` alone and after the agent."""

    package: str
    ruff_config: str
    """``own`` (the package configures ruff), ``own+defaults`` (it does, but selects no rules:
    ruff's long-standing defaults are pinned beneath it), ``flake8`` (it configures flake8, not
    ruff: the lint task's translation), ``strict`` or ``fixed`` (the evaluation's rule set)."""
    candidates: int
    """Library files with findings (``files`` holds those ``--limit`` kept)."""
    files: tuple[str, ...]
    before: int
    """Findings in ``files`` as released."""
    ruff_only: int
    """Findings left after ``ruff check --fix``."""
    agent: int
    """Findings left after the agent's patches."""
    same_as_ruff: int
    """Files whose text after the agent is byte for byte what ``ruff check --fix`` makes."""
    jobs: tuple[LintJobResult, ...]
    tests_before: TestsOutcome
    tests_ruff: TestsOutcome | None
    """None when the tests are not usable as released (then they are not run again)."""
    tests_agent: TestsOutcome | None
    wall_s: float
    check: str = ""
    """The check command the agent's changes had to pass (``--check-tests``), or empty."""
    target: str = ""
    """The Python assumed (:meth:`.PythonTarget.describe`)."""
    interpreter: str = ""
    """The lowest supported Python's interpreter the results were compiled with, or empty
    when none is on the machine (then ruff's checks alone tell)."""
    breaks_ruff: tuple[str, ...] = ()
    """Files ``ruff check --fix`` alone made use what the lowest supported Python lacks."""
    breaks_agent: tuple[str, ...] = ()
    """Files the agent's patches made use what it lacks."""
    task: str = field(default="lint", init=False)

    @property
    def failures(self) -> dict[str, int]:
        """Jobs without an applied change, by reason."""
        return count_reasons(job.failure for job in self.jobs)

    @property
    def job_count(self) -> int:
        """Files the agent ran on."""
        return len(self.jobs)

    @property
    def seconds_per_job(self) -> float | None:
        """Wall time per job."""
        return self.wall_s / len(self.jobs) if self.jobs else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "task": self.task,
            "package": self.package,
            "ruff_config": self.ruff_config,
            "candidates": self.candidates,
            "files": list(self.files),
            "findings": {"before": self.before, "ruff_only": self.ruff_only, "agent": self.agent},
            "same_as_ruff": self.same_as_ruff,
            "failures": self.failures,
            "tests": {
                "before": self.tests_before.to_dict(),
                "ruff_only": self.tests_ruff.to_dict() if self.tests_ruff else None,
                "agent": self.tests_agent.to_dict() if self.tests_agent else None,
            },
            "check": self.check,
            "target": self.target,
            "interpreter": self.interpreter,
            "breaks": {"ruff_only": list(self.breaks_ruff), "agent": list(self.breaks_agent)},
            "wall_s": self.wall_s,
            "seconds_per_job": self.seconds_per_job,
            "jobs": [job.to_dict() for job in self.jobs],
        }


PackageResult = DocstringPackageResult | LintPackageResult


@dataclass(frozen=True, slots=True)
class UnevaluatedPackage:
    """A package the evaluation could not finish (its archive would not unpack, ruff refused its
    configuration...): the others are still evaluated, and ``sa eval`` exits 2 at the end."""

    package: str
    error: str
    """What went wrong, as the error said it."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"package": self.package, "error": self.error}


@dataclass(frozen=True, slots=True)
class EvalReport:
    """One ``sa eval``: the setting and every package's result."""

    task: str
    bundle: str
    """The bundle's name and version (``docstring 1.0``)."""
    bundle_path: str
    engine: str
    """The engine's name, and its model when one is set."""
    tool_version: str
    """What the numbers also depend on: the ruff version for lint, empty otherwise."""
    limit: int | None
    concurrency: int
    engine_load_s: float
    """Seconds it took to build the engine (a model load)."""
    packages: tuple[PackageResult, ...]
    wall_s: float
    """Wall time of the whole evaluation."""
    strip: str = "all"
    """Docstring: whose docstrings were stripped, ``all`` definitions' or the ``targets``' only."""
    errors: tuple[UnevaluatedPackage, ...] = ()
    """The packages that could not be evaluated, and why."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "task": self.task,
            "partial": False,
            "bundle": self.bundle,
            "bundle_path": self.bundle_path,
            "engine": self.engine,
            "tool_version": self.tool_version,
            "limit": self.limit,
            "concurrency": self.concurrency,
            **({"strip": self.strip} if self.task == "docstring" else {}),
            "engine_load_s": self.engine_load_s,
            "wall_s": self.wall_s,
            "packages": [package.to_dict() for package in self.packages],
            "errors": [error.to_dict() for error in self.errors],
        }
