"""What a codebase says it installs for its checks: flake8 and its plugins, black.

The requirements are read from its requirements files, ``setup.cfg``, ``setup.py``,
``pyproject.toml``, ``noxfile.py``, ``Pipfile``, pre-commit configuration, the ``deps`` of its
``tox.ini`` environments (their commands run a tool, they do not install it) and the install
lines of its ``Makefile`` and CI workflows (``pip install flake8 flake8-bugbear``), without
comments (:func:`declared_text`). A tool is declared (:func:`declares_in`) where its name stands
as a requirement: ``flake8==3.8.4``, ``"black>=24"``, a line or word of its own, pre-commit's
``repo: https://github.com/psf/black``; not a ``[flake8]`` section, nor a command running it
(``flake8 src``).
"""

from __future__ import annotations

import configparser
import functools
import re
from pathlib import Path

from structured_agents.jobs.source import read_regular

__all__ = ["declared_text", "declares_in"]

_REQUIREMENTS = (
    "setup.cfg",
    "setup.py",
    "pyproject.toml",
    "*requirements*.txt",
    "*requirements*.in",
    "requirements/*.txt",
    "requirements/*.in",
    ".pre-commit-config.yaml",
    "noxfile.py",
    "Pipfile",
)
"""Files read whole for requirements (comments left out)."""
_INSTALL_LINES = ("Makefile", ".github/workflows/*.y*ml")
"""Files read for the lines that install something."""
_INSTALLS = re.compile(r"\bpip3? install\b|\buv (?:pip install|add)\b|\bpoetry add\b")
_COMMENT = re.compile(r"(^|\s)#.*$", re.M)


def _read(path: Path) -> str:
    try:
        return _COMMENT.sub("", read_regular(path).decode("utf-8", "replace"))
    except OSError:
        return ""


def _tox_deps(root: Path) -> str:
    """The ``deps`` of every environment in ``tox.ini``."""
    parser = configparser.RawConfigParser(strict=False)
    try:
        parser.read_string(read_regular(root / "tox.ini").decode("utf-8"), source="tox.ini")
    except (OSError, configparser.Error, UnicodeDecodeError):
        return ""
    deps = (parser.get(section, "deps", fallback="") for section in parser.sections())
    return _COMMENT.sub("", "\n".join(deps))


def declared_text(root: Path) -> str:
    """What the codebase at ``root`` says it installs (see the module docstring)."""
    texts = [_tox_deps(root)]
    for pattern in _REQUIREMENTS:
        texts += [_read(path) for path in sorted(root.glob(pattern))]
    for pattern in _INSTALL_LINES:
        for path in sorted(root.glob(pattern)):
            # a word a line: ``pip install flake8 pytest`` names flake8 as a requirement
            texts += ["\n".join(line.split()) for line in _read(path).splitlines() if _INSTALLS.search(line)]
    return "\n".join(texts)


@functools.lru_cache(maxsize=64)
def _requirement(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.\-\[]){re.escape(name)}(?=\s*(?:[=<>~!;,\"'\]\[]|$))", re.I | re.M)


def declares_in(text: str, name: str) -> bool:
    """Whether ``text`` (:func:`declared_text`) names the tool ``name`` as a requirement."""
    return _requirement(name).search(text) is not None
