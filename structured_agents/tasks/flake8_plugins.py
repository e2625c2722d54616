"""The rule codes a codebase's flake8 can report: flake8's own and those of the plugins the
codebase installs beside it.

flake8 reports pycodestyle's ``E`` and ``W``, pyflakes' ``F`` and mccabe's ``C90`` by itself,
and a plugin's codes only where the plugin is installed. hyperlink 21.0.0 selects every letter
from ``A`` to ``Z``, but its tox environment for flake8 installs flake8-bugbear and pep8-naming
and no other plugin: its flake8 reports ``B`` and ``N`` and nothing of ``A``, ``D``, ``S``...

Where the codebase says how flake8 is installed (:func:`installed_plugins`: a requirement on
``flake8`` or on a plugin in its ``tox.ini``, ``setup.cfg``, ``setup.py``, ``pyproject.toml``,
requirements files, pre-commit configuration, CI workflows, ``Makefile`` or ``noxfile.py``),
the plugins named in those files are the ones it has. Where it does not, nothing is known.

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
from pathlib import Path

__all__ = ["CORE_PREFIXES", "installed_plugins", "plugin_prefixes", "reported_prefixes"]

CORE_PREFIXES = ("E", "W", "F", "C90")
"""What flake8 reports with no plugin: pycodestyle, pyflakes and mccabe."""

_THROUGH = {"pydocstyle": "flake8-docstrings", "isort": "flake8-isort", "eradicate": "flake8-eradicate"}
"""Ruff linters whose codes reach flake8 through a plugin of another name."""
_PLUGINS_BY_NAME = frozenset({"pep8-naming", "pandas-vet", "tryceratops", "pydoclint"})
"""Flake8 plugins ruff names as their distributions, not starting ``flake8-``."""
_DECLARATIONS = (
    "tox.ini",
    "setup.cfg",
    "setup.py",
    "pyproject.toml",
    "*requirements*.txt",
    "*requirements*.in",
    "requirements/*.txt",
    "requirements/*.in",
    ".pre-commit-config.yaml",
    ".github/workflows/*.y*ml",
    "Makefile",
    "noxfile.py",
    "Pipfile",
)
"""Where a codebase says what it installs for its lint run."""
_COMMENT = re.compile(r"(^|\s)#.*$", re.M)
_COMMAND = re.compile(r"^\s*(commands\s*=|run:|-\s*run:)", re.I)
_FLAKE8 = re.compile(r"(?<![\w.\-\[])flake8(?=\s*(?:[=<>~!;,\"'\]\[]|$))", re.I)
"""flake8 named as a requirement (``flake8==3.8.4``, ``"flake8>=6"``, a ``deps`` line of its
own, pre-commit's ``repo: https://github.com/pycqa/flake8``), not a ``[flake8]`` section or
a command running it (``flake8 src``)."""


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


def _declared_text(root: Path) -> str:
    """The codebase's declaration files, without comments or command lines."""
    texts = []
    for pattern in _DECLARATIONS:
        for path in sorted(root.glob(pattern)):
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            lines = (line for line in _COMMENT.sub("", text).splitlines() if not _COMMAND.match(line))
            texts.append("\n".join(lines))
    return "\n".join(texts)


def installed_plugins(root: Path) -> frozenset[str] | None:
    """The flake8 plugins ruff implements that the codebase at ``root`` installs (see the module
    docstring); None when it does not say how it installs flake8."""
    text = _declared_text(root)
    named = frozenset(
        name
        for name in plugin_prefixes()
        if re.search(rf"(?<![\w.\-]){re.escape(name)}(?![\w\-])", text, re.I)
    )
    if not named and not _FLAKE8.search(text):
        return None
    return named


def reported_prefixes(root: Path) -> tuple[str, ...] | None:
    """The code prefixes the codebase's flake8 can report (:data:`CORE_PREFIXES` and its
    plugins'); None when that is not known."""
    plugins = installed_plugins(root)
    if plugins is None:
        return None
    prefixes = plugin_prefixes()
    return (*CORE_PREFIXES, *sorted(prefixes[name] for name in plugins))
