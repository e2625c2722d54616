"""The ruff configuration at a codebase's root, as ruff finds it: which file, and its settings.

Ruff reads the first of ``.ruff.toml``, ``ruff.toml`` and a ``pyproject.toml`` with a
``[tool.ruff]`` table in a folder; a configuration's ``extend`` names another one it builds on
(its own settings win, the ``lint`` table merged key by key). Only the root's configuration
is read: a nested one that governs a subfolder is not.
"""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from structured_agents.jobs.source import read_regular

__all__ = [
    "RUFF_CONFIG_NAMES",
    "blocking_configs",
    "read_toml",
    "ruff_config_file",
    "ruff_settings",
    "selects_rules",
]

RUFF_CONFIG_NAMES = (".ruff.toml", "ruff.toml", "pyproject.toml")
"""The files ruff reads in a folder, first found first."""
_MAX_EXTENDS = 8


def read_toml(path: Path) -> dict[str, Any] | None:
    """The TOML file at ``path``, or None when it cannot be read or parsed, or is no regular
    file. A symbolic link is followed, as ruff follows it to its configuration."""
    try:
        return tomllib.loads(read_regular(path, follow=True).decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None


def _settings_of(path: Path) -> dict[str, Any] | None:
    """The ruff settings of ``path``: the file itself, or a ``pyproject.toml``'s ``[tool.ruff]``."""
    data = read_toml(path)
    if data is None:
        return None
    if path.name != "pyproject.toml":
        return data
    tool = data.get("tool")
    ruff = tool.get("ruff") if isinstance(tool, dict) else None
    return ruff if isinstance(ruff, dict) else None


def blocking_configs(root: Path, files: Iterable[str]) -> list[str]:
    """The files under ``root`` named as ruff's configuration (:data:`RUFF_CONFIG_NAMES`), in the
    root or a folder holding one of ``files`` (relative to it), that are there but are no regular
    file (a link is followed, as ruff follows it): ruff, reading one that is a named pipe, waits
    for ever."""
    folders = {PurePosixPath()}
    for path in files:
        folders.update(PurePosixPath(path).parents)
    found = []
    for folder in sorted(folders):
        for name in RUFF_CONFIG_NAMES:
            try:
                mode = os.stat(root / folder / name).st_mode
            except OSError:  # none there (or a dangling link, which ruff reports itself)
                continue
            if not stat.S_ISREG(mode):
                found.append((folder / name).as_posix())
    return found


def ruff_config_file(root: Path) -> Path | None:
    """The configuration ruff reads for files at ``root``, or None."""
    for name in RUFF_CONFIG_NAMES:
        path = root / name
        if path.is_file() and _settings_of(path) is not None:
            return path
    return None


def ruff_settings(root: Path) -> dict[str, Any]:
    """The root configuration's settings with those it ``extend``\\s beneath them (empty when
    there is none, or it cannot be read)."""
    path = ruff_config_file(root)
    chain: list[dict[str, Any]] = []
    seen: set[Path] = set()
    while path is not None and path not in seen and len(chain) < _MAX_EXTENDS:
        seen.add(path)
        settings = _settings_of(path)
        if settings is None:
            break
        chain.append(settings)
        extend = settings.get("extend")
        path = (path.parent / extend).expanduser().resolve() if isinstance(extend, str) else None
    merged: dict[str, Any] = {}
    for settings in reversed(chain):
        lint = {**(merged.get("lint") or {}), **(settings.get("lint") or {})}
        merged.update(settings)
        if lint:
            merged["lint"] = lint
    merged.pop("extend", None)
    return merged


def selects_rules(settings: dict[str, Any]) -> bool:
    """Whether ``settings`` choose their rules (``select``), rather than ruff's defaults."""
    lint = settings.get("lint")
    return "select" in settings or (isinstance(lint, dict) and "select" in lint)
