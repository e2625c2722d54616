"""Find a bundle by path or by name.

A reference that is an existing path (a bundle directory or its ``bundle.yaml``) is used as
is. A name (``docstring``) is looked up as ``NAME/bundle.yaml`` in, in order:

1. the directories given by the caller (``search``);
2. ``./bundles`` of the current directory (a repository's own bundles);
3. the ``bundles/`` folder of the structured-agents source tree (editable installs);
4. the bundles packaged with structured-agents (``structured_agents/_bundles`` in the wheel).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from structured_agents.bundles.manifest import BundleError

__all__ = ["MANIFEST_NAME", "bundle_search_path", "find_bundle", "list_bundles"]

MANIFEST_NAME = "bundle.yaml"
_PACKAGE = Path(__file__).resolve().parent.parent


def bundle_search_path(search: Iterable[Path] | None = None, *, cwd: bool = True) -> list[Path]:
    """The directories searched for bundles by name, in order (existing ones only); ``cwd=False``
    leaves out ``./bundles`` (only the caller's directories and the shipped bundles)."""
    own = [Path.cwd() / "bundles"] if cwd else []
    candidates = [*(search or ()), *own, _PACKAGE.parent / "bundles", _PACKAGE / "_bundles"]
    seen: list[Path] = []
    for candidate in candidates:
        resolved = candidate.resolve()
        if resolved.is_dir() and resolved not in seen:
            seen.append(resolved)
    return seen


def list_bundles(search: Iterable[Path] | None = None, *, cwd: bool = True) -> dict[str, Path]:
    """Every bundle found by name: name -> ``bundle.yaml`` (earlier directories win)."""
    found: dict[str, Path] = {}
    for directory in bundle_search_path(search, cwd=cwd):
        for manifest in sorted(directory.glob(f"*/{MANIFEST_NAME}")):
            found.setdefault(manifest.parent.name, manifest)
    return found


def find_bundle(ref: str | Path, search: Iterable[Path] | None = None) -> Path:
    """The ``bundle.yaml`` of ``ref`` (a path or a name); BundleError listing what exists."""
    path = Path(ref)
    if path.is_file():
        return path.resolve()
    if path.is_dir():
        manifest = path / MANIFEST_NAME
        if not manifest.is_file():
            raise BundleError(f"{path}: not a bundle (no {MANIFEST_NAME} in it)")
        return manifest.resolve()
    name = str(ref)
    if "/" not in name and "\\" not in name and not name.endswith((".yaml", ".yml")):
        bundles = list_bundles(search)
        if name in bundles:
            return bundles[name]
        known = ", ".join(sorted(bundles)) or "none"
        raise BundleError(f"no bundle named {name!r} (known bundles: {known}; or give a path)")
    raise BundleError(f"{path}: no such bundle (a bundle directory or its {MANIFEST_NAME})")
