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


def _confine(text: str, bases: tuple[Path, ...], what: str, ref: str, setting: str, unset: str) -> Path:
    """``text`` resolved, which must lie under one of ``bases`` (the directories of ``setting``)."""
    if not bases:
        raise AccessDeniedError(
            f"{unset}: set {setting} to the directories {what}s may lie under (a JSON list)"
        )
    path = Path(text)
    if not path.is_absolute():
        raise ConfigError(f"{what} {ref!r}: give an absolute path")
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop (RuntimeError before 3.13)
        raise ConfigError(f"{what} {ref!r} cannot be resolved: {type(exc).__name__}") from None
    if not any(resolved.is_relative_to(base) for base in bases):
        allowed = ", ".join(str(base) for base in bases)
        raise AccessDeniedError(f"{what} {ref!r} is outside the directories {setting} allows ({allowed})")
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
        resolved = _confine(text, self.roots, "root", text, "SA_API__ROOTS", "no codebase root is allowed")
        if not resolved.is_dir():
            raise ConfigError(
                f"root {text!r}: {'not a directory' if resolved.exists() else 'no such directory'}"
            )
        return resolved

    def bundle(self, ref: str) -> Path:
        """The ``bundle.yaml`` of ``ref``: a bundle name, or a path under the bundle directories."""
        if "/" in ref or "\\" in ref:
            return self._bundle_path(ref, ref)
        bundles = list_bundles(self.bundle_dirs, cwd=False)
        if ref not in bundles:
            known = ", ".join(sorted(bundles)) or "none"
            raise ConfigError(
                f"no bundle named {ref!r} (known bundles: {known}; or a path under SA_API__BUNDLE_DIRS)"
            )
        found = bundles[ref]
        if found.parent.parent in self.bundle_dirs:  # not a shipped one: a symlink must not lead out
            return self._bundle_path(str(found), ref)
        return found

    def _bundle_path(self, text: str, ref: str) -> Path:
        unset = "bundles are taken by name only"
        return find_bundle(_confine(text, self.bundle_dirs, "bundle", ref, "SA_API__BUNDLE_DIRS", unset))

    def jobs(self, root: Path, paths: Iterable[str]) -> None:
        """AccessDeniedError naming each job whose target path leads out of ``root``."""
        outside = []
        for number, text in enumerate(paths, 1):
            path = Path(text)
            try:
                escapes = path.is_absolute() or not (root / path).resolve().is_relative_to(root)
            except (OSError, RuntimeError, ValueError):
                escapes = True
            if escapes:
                outside.append(f"job {number}: path {text[:200]!r}")
        if outside:
            shown = "; ".join(outside[:20]) + (f"; and {len(outside) - 20} more" if len(outside) > 20 else "")
            raise AccessDeniedError(f"job paths must stay inside the root: {shown}")
