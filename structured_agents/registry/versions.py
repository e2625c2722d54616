"""Semantic versions and the constraints that select them.

Versions are strict SemVer 2.0 (``MAJOR.MINOR.PATCH[-prerelease][+build]``), ordered by SemVer
precedence (build metadata ignored). Constraints are one or more comparator clauses joined by
commas (or spaces), all of which must hold:

=================  =======================================================================
``1.2.3``          exactly 1.2.3 (``=1.2.3`` and ``==1.2.3`` too)
``1.2`` / ``1``    any 1.2.x / any 1.x.x (a partial version is a range, as in npm)
``^1.2.3``         compatible: >=1.2.3 <2.0.0 (``^0.2.3``: <0.3.0; ``^0.0.3``: <0.0.4)
``~1.2.3``         patch-level: >=1.2.3 <1.3.0 (``~1``: <2.0.0)
``>=1.0,<2``       comparisons: ``>``, ``>=``, ``<``, ``<=``, ``!=`` (partials padded with 0)
``*`` / ``latest`` any version
=================  =======================================================================

As in npm, a pre-release (``2.0.0-rc.1``) satisfies a constraint only when a clause names a
pre-release of the same ``MAJOR.MINOR.PATCH``, so ``^1.2`` never picks ``2.0.0-rc.1``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import total_ordering

from structured_agents.registry.errors import VersionError

__all__ = ["Version", "VersionConstraint"]

_NUM = r"0|[1-9]\d*"
_IDENT = r"[0-9A-Za-z-]+"
_VERSION = re.compile(
    rf"^({_NUM})\.({_NUM})\.({_NUM})(?:-({_IDENT}(?:\.{_IDENT})*))?(?:\+{_IDENT}(?:\.{_IDENT})*)?$"
)
_PARTIAL = re.compile(
    rf"^v?({_NUM})(?:\.({_NUM}|[xX*]))?(?:\.({_NUM}|[xX*]))?(?:-({_IDENT}(?:\.{_IDENT})*))?$"
)
_CLAUSE = re.compile(r"^(\^|~|>=|<=|>|<|==|=|!=)?\s*(.+)$")


@total_ordering
@dataclass(frozen=True, slots=True)
class Version:
    """A SemVer version; ``str()`` gives it back without build metadata."""

    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Version:
        """Parse a full SemVer string; VersionError names the text otherwise."""
        match = _VERSION.match(text.strip())
        if match is None:
            raise VersionError(f"{text!r} is not a semantic version (MAJOR.MINOR.PATCH[-pre])")
        pre = tuple(match.group(4).split(".")) if match.group(4) else ()
        return cls(int(match.group(1)), int(match.group(2)), int(match.group(3)), pre)

    @property
    def core(self) -> tuple[int, int, int]:
        """``(major, minor, patch)``."""
        return (self.major, self.minor, self.patch)

    def _key(self) -> tuple[tuple[int, int, int], int, tuple[tuple[int, int | str], ...]]:
        # a release sorts after its pre-releases; numeric identifiers sort before alphanumeric ones
        ids = tuple((0, int(p)) if p.isdigit() else (1, p) for p in self.prerelease)
        return (self.core, 0 if self.prerelease else 1, ids)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() < other._key()

    def __str__(self) -> str:
        base = f"{self.major}.{self.minor}.{self.patch}"
        return f"{base}-{'.'.join(self.prerelease)}" if self.prerelease else base


@dataclass(frozen=True, slots=True)
class _Clause:
    op: str
    version: Version

    def holds(self, v: Version) -> bool:
        ops = {
            "=": v == self.version,
            "!=": v != self.version,
            ">": v > self.version,
            ">=": v >= self.version,
            "<": v < self.version,
            "<=": v <= self.version,
        }
        return ops[self.op]


@dataclass(frozen=True, slots=True)
class VersionConstraint:
    """A parsed constraint; :meth:`allows` tests a version, :meth:`best` picks the highest allowed."""

    text: str
    clauses: tuple[_Clause, ...]
    exact: Version | None
    """The version when the constraint is a single exact version (``1.2.3``, ``=1.2.3``)."""

    @classmethod
    def parse(cls, text: str) -> VersionConstraint:
        """Parse a constraint (see the module docstring); VersionError names the bad clause."""
        stripped = text.strip()
        if stripped in ("", "*", "latest", "x"):
            return cls(text, (), None)
        clauses: list[_Clause] = []
        parts = [p for p in re.split(r"\s*,\s*|\s+(?=[\^~<>=!\d])", stripped) if p]
        for part in parts:
            clauses.extend(_expand(part, text))
        exact = clauses[0].version if len(clauses) == 1 and clauses[0].op == "=" else None
        return cls(text, tuple(clauses), exact)

    def allows(self, version: Version) -> bool:
        """True when ``version`` satisfies every clause (pre-releases: see the module docstring)."""
        if version.prerelease and not any(
            c.version.prerelease and c.version.core == version.core for c in self.clauses
        ):
            return False
        return all(clause.holds(version) for clause in self.clauses)

    def best(self, versions: Iterable[Version]) -> Version | None:
        """The highest allowed version, or None."""
        return max((v for v in versions if self.allows(v)), default=None)

    def __str__(self) -> str:
        return self.text


def _expand(part: str, text: str) -> list[_Clause]:
    """One written clause as plain comparisons."""
    match = _CLAUSE.match(part)
    op, rest = (match.group(1) or "", match.group(2)) if match else ("", part)
    partial = _PARTIAL.match(rest.strip())
    if partial is None:
        raise VersionError(f"bad version constraint {text!r}: cannot read {part!r}")
    major = int(partial.group(1))
    minor = None if partial.group(2) in (None, "x", "X", "*") else int(partial.group(2))
    patch = None if minor is None or partial.group(3) in (None, "x", "X", "*") else int(partial.group(3))
    pre = tuple(partial.group(4).split(".")) if partial.group(4) else ()
    if pre and patch is None:
        raise VersionError(f"bad version constraint {text!r}: a pre-release needs a full version in {part!r}")
    low = Version(major, minor or 0, patch or 0, pre)
    if op in ("", "=", "=="):
        if patch is not None:
            return [_Clause("=", low)]
        return _range(low, _bump(major, minor))
    if op == "^":
        if major > 0 or minor is None:
            return _range(low, Version(major + 1, 0, 0))
        if minor > 0 or patch is None:
            return _range(low, Version(0, minor + 1, 0))
        return _range(low, Version(0, 0, patch + 1))
    if op == "~":
        return _range(low, _bump(major, minor))
    if op in (">", "<=") and patch is None:  # >1.2 means >=1.3.0; <=1.2 means <1.3.0
        return [_Clause(">=" if op == ">" else "<", _bump(major, minor))]
    return [_Clause(op, low)]


def _bump(major: int, minor: int | None) -> Version:
    """The first version after the partial ``major[.minor]``."""
    return Version(major + 1, 0, 0) if minor is None else Version(major, minor + 1, 0)


def _range(low: Version, high: Version) -> list[_Clause]:
    return [_Clause(">=", low), _Clause("<", high)]
