"""Which packages an evaluation runs on (pinned requirement specs, the default sets), and
which of their targets (:func:`spread`, for ``--limit``).

A spec is ``NAME==VERSION`` (the version pinned, so the numbers of two runs compare and the
download can be cached). The default sets are small pure-Python packages from the package
index that document their code (docstring) or whose sdist carries tests that run in seconds
with nothing but pytest and no network (lint).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName, canonicalize_name

from structured_agents.evaluation.errors import EvaluationError

__all__ = ["DEFAULT_PACKAGES", "PackageSpec", "parse_spec", "spread"]

_T = TypeVar("_T")

DEFAULT_PACKAGES: dict[str, tuple[str, ...]] = {
    # google-style and prose docstrings; sphinx fields; prose; prose with sphinx roles
    "docstring": ("humanize==4.9.0", "semver==3.0.2", "inflection==0.5.1", "cachetools==5.3.3"),
    # no ruff configuration of their own (the fixed rule set applies); tests in the sdist
    "lint": ("inflection==0.5.1", "cachetools==5.3.3"),
}
"""The packages ``sa eval TASK`` runs on when none are named, by task."""


@dataclass(frozen=True, slots=True)
class PackageSpec:
    """One pinned package."""

    name: NormalizedName
    """The canonical project name (``pep 503``: lower case, ``-`` for runs of ``-_.``)."""
    version: str
    """The pinned version."""

    def __str__(self) -> str:
        return f"{self.name}=={self.version}"


def parse_spec(text: str) -> PackageSpec:
    """``NAME==VERSION`` as a :class:`PackageSpec`; EvaluationError for anything else."""
    try:
        requirement = Requirement(text)
    except InvalidRequirement as exc:
        raise EvaluationError(f"package {text!r}: not a requirement spec: {exc}") from None
    pins = [spec for spec in requirement.specifier if spec.operator in ("==", "===")]
    if (
        len(pins) != 1
        or len(requirement.specifier) != 1
        or "*" in pins[0].version
        or requirement.extras
        or requirement.url
        or requirement.marker
    ):
        raise EvaluationError(f"package {text!r}: pin one exact version, as NAME==VERSION")
    return PackageSpec(canonicalize_name(requirement.name), pins[0].version)


def spread(items: Sequence[_T], limit: int | None) -> list[_T]:
    """At most ``limit`` of ``items``, evenly spaced over them (all of them for None), so a
    short run samples every part of a package rather than its first file."""
    if limit is None or limit >= len(items):
        return list(items)
    return [items[(index * len(items)) // limit] for index in range(limit)]
