"""The rule codes a codebase's flake8 can report: flake8's own and those of the plugins the
codebase installs beside it.

flake8 reports pycodestyle's ``E`` and ``W``, pyflakes' ``F`` and mccabe's ``C90`` by itself,
and a plugin's codes only where the plugin is installed. hyperlink 21.0.0 selects every letter
from ``A`` to ``Z``, but its tox environment for flake8 installs flake8-bugbear and pep8-naming
and no other plugin: its flake8 reports ``B`` and ``N`` and nothing of ``A``, ``D``, ``S``...

Where the codebase says how flake8 is installed (:func:`installed_plugins`: a requirement on
``flake8`` or on a plugin, as :mod:`~structured_agents.tasks.declared_tools` reads them), the
plugins named there are the ones it has. Where it does not, nothing is known.

A plugin is known by its distribution's name and the ruff linter that implements its codes
(:func:`plugin_prefixes`): ruff names most linters after the flake8 plugin they port
(``flake8-bugbear``: ``B``); ``pydocstyle``'s codes reach flake8 through
``flake8-docstrings``, isort's through ``flake8-isort``, eradicate's through
``flake8-eradicate``. Linters that are no flake8 plugin (pyupgrade, Pylint, refurb, ruff's
own) have none.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from dataclasses import dataclass

from structured_agents.tasks.declared_tools import declares_in

__all__ = ["CORE_PREFIXES", "PluginCodes", "installed_plugins", "plugin_codes", "plugin_prefixes"]

CORE_PREFIXES = ("E", "W", "F", "C90")
"""What flake8 reports with no plugin: pycodestyle, pyflakes and mccabe."""

_THROUGH = {"pydocstyle": "flake8-docstrings", "isort": "flake8-isort", "eradicate": "flake8-eradicate"}
"""Ruff linters whose codes reach flake8 through a plugin of another name."""
_DEFAULT_SELECTION = {"flake8-bugbear": "B0"}
"""Plugins that report part of their codes unless more are selected: bugbear's ``B9`` warnings
are opinionated, off by default."""
_PLUGINS_BY_NAME = frozenset({"pep8-naming", "pandas-vet", "tryceratops", "pydoclint"})
"""Flake8 plugins ruff names as their distributions, not starting ``flake8-``."""


@functools.cache
def plugin_prefixes() -> dict[str, str]:
    """Each flake8 plugin the running ruff implements, by its distribution's name, with the
    prefix of its codes (``{"flake8-bugbear": "B", "flake8-docstrings": "D", ...}``)."""
    command = [sys.executable, "-m", "ruff", "linter", "--output-format", "json"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        linters = json.loads(done.stdout or "[]")
    except (OSError, ValueError):
        return {}
    plugins: dict[str, str] = {}
    for linter in linters:
        name, prefix = str(linter.get("name", "")).lower(), str(linter.get("prefix", ""))
        distribution = _THROUGH.get(name, name)
        if prefix and (distribution.startswith("flake8-") or distribution in _PLUGINS_BY_NAME):
            plugins[distribution] = prefix
    return plugins


def installed_plugins(declared: str) -> frozenset[str] | None:
    """The flake8 plugins ruff implements that a codebase installs, from what it says it installs
    (``declared``: :func:`~structured_agents.tasks.declared_tools.declared_text`); None when it
    does not say how it installs flake8."""
    named = frozenset(
        name
        for name in plugin_prefixes()
        if re.search(rf"(?<![\w.\-]){re.escape(name)}(?![\w\-])", declared, re.I)
    )
    if not named and not declares_in(declared, "flake8"):
        return None
    return named


@dataclass(frozen=True, slots=True)
class PluginCodes:
    """What a codebase's flake8 reports, as ruff code prefixes."""

    reported: tuple[str, ...]
    """Every prefix it can report: :data:`CORE_PREFIXES` and its plugins'."""
    default: tuple[str, ...]
    """What it reports where ``select`` is unset: flake8 adds its plugins' codes to its own
    default selection, bugbear's without its opinionated ``B9`` warnings."""


def plugin_codes(declared: str) -> PluginCodes | None:
    """What a codebase's flake8 reports with the plugins it installs (``declared``: as
    :func:`installed_plugins` reads it); None when it does not say how it installs flake8."""
    plugins = installed_plugins(declared)
    if plugins is None:
        return None
    prefixes = plugin_prefixes()
    return PluginCodes(
        reported=(*CORE_PREFIXES, *sorted(prefixes[name] for name in plugins)),
        default=(*CORE_PREFIXES, *sorted(_DEFAULT_SELECTION.get(name, prefixes[name]) for name in plugins)),
    )
