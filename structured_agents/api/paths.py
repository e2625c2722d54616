"""What a network caller may point a batch at: roots and bundles inside what the operator allowed.

A codebase root must lie under one of ``SA_API__ROOTS``; a bundle is a name (found in
``SA_API__BUNDLE_DIRS``, then among the shipped bundles, never in the server's working
directory) or a path under one of ``SA_API__BUNDLE_DIRS``; an explicit job's path must stay
inside its root. Paths are resolved (``..``, symlinks) before they are checked, and checked
before anything is read: a path outside is :class:`AccessDeniedError` (403) whether it exists or
not, so the answer tells nothing about the files outside. A path inside that is missing or of
the wrong kind is a :class:`ConfigError` (422). With no roots configured every root is refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from structured_agents.api.errors import AccessDeniedError
from structured_agents.bundles.finder import find_bundle, list_bundles
from structured_agents.errors import ConfigError
from structured_agents.settings import ApiSettings

__all__ = ["Confinement"]


NAME_MAX = 255
"""Longest component of a path, in bytes (Linux's ``NAME_MAX``): a longer one is refused before
the file system is asked (it answers ``OSError: File name too long``)."""


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _check_components(text: str, what: str) -> None:
    if any(len(part.encode("utf-8", "surrogateescape")) > NAME_MAX for part in text.split("/")):
        raise ConfigError(f"{what}: a path component is longer than {NAME_MAX} bytes")


def _confine(text: str, bases: tuple[Path, ...], what: str, setting: str, unset: str) -> Path:
    """``text`` resolved, which must lie under one of ``bases`` (the directories of ``setting``).
    Errors name the field (``what``), never the caller's path."""
    if not bases:
        raise AccessDeniedError(
            f"{unset}: set {setting} to the directories {what}s may lie under (a JSON list)"
        )
    _check_components(text, what)
    path = Path(text)
    if not path.is_absolute():
        raise ConfigError(f"{what}: give an absolute path")
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop (RuntimeError before 3.13)
        raise ConfigError(f"{what}: the path cannot be resolved ({type(exc).__name__})") from None
    if not any(resolved.is_relative_to(base) for base in bases):
        allowed = ", ".join(str(base) for base in bases)
        raise AccessDeniedError(f"{what}: the path is outside the directories {setting} allows ({allowed})")
    return resolved


@dataclass(frozen=True, slots=True)
class Confinement:
    """The directories batches may read, resolved once when the application starts."""

    roots: tuple[Path, ...]
    """Directories codebase roots must lie under."""
    bundle_dirs: tuple[Path, ...]
    """Directories bundles given by path must lie under; searched first for bundles by name."""

    @classmethod
    def from_settings(cls, api: ApiSettings) -> Confinement:
        """The confinement ``SA_API__ROOTS`` and ``SA_API__BUNDLE_DIRS`` describe."""
        return cls(
            tuple(root.resolve() for root in api.roots), tuple(path.resolve() for path in api.bundle_dirs)
        )

    def root(self, text: str) -> Path:
        """The resolved codebase root ``text``, which must be a directory under the allowed roots."""
        resolved = _confine(text, self.roots, "root", "SA_API__ROOTS", "no codebase root is allowed")
        try:
            if not resolved.is_dir():
                raise ConfigError(f"root: {'not a directory' if resolved.exists() else 'no such directory'}")
        except OSError as exc:
            raise ConfigError(f"root: the path cannot be read ({_reason(exc)})") from None
        return resolved

    def bundle(self, ref: str) -> Path:
        """The ``bundle.yaml`` of ``ref``: a bundle name, or a path under the bundle directories."""
        if "/" in ref or "\\" in ref:
            return self._bundle_path(ref)
        bundles = list_bundles(self.bundle_dirs, cwd=False)
        if ref not in bundles:
            known = ", ".join(sorted(bundles)) or "none"
            raise ConfigError(
                f"bundle: no bundle of that name (known bundles: {known}; "
                "or a path under SA_API__BUNDLE_DIRS)"
            )
        found = bundles[ref]
        if found.parent.parent in self.bundle_dirs:  # not a shipped one: a symlink must not lead out
            return self._bundle_path(str(found))
        return found

    def _bundle_path(self, text: str) -> Path:
        unset = "bundles are taken by name only"
        resolved = _confine(text, self.bundle_dirs, "bundle", "SA_API__BUNDLE_DIRS", unset)
        try:
            return find_bundle(resolved)
        except OSError as exc:
            raise ConfigError(f"bundle: the path cannot be read ({_reason(exc)})") from None

    def jobs(self, root: Path, paths: Iterable[str]) -> None:
        """AccessDeniedError naming each job whose target path leads out of ``root``."""
        outside = []
        for number, text in enumerate(paths, 1):
            path = Path(text)
            try:
                _check_components(text, f"job {number}: path")
                escapes = path.is_absolute() or not (root / path).resolve().is_relative_to(root)
            except (OSError, RuntimeError, ValueError, ConfigError):
                escapes = True
            if escapes:
                outside.append(f"job {number}: path")
        if outside:
            shown = "; ".join(outside[:20]) + (f"; and {len(outside) - 20} more" if len(outside) > 20 else "")
            raise AccessDeniedError(f"job paths must stay inside the root: {shown}")
