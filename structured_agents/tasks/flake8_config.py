"""A codebase's flake8 configuration, as the ruff options that check the same rules.

Many projects configure flake8 (a ``[flake8]`` section in ``setup.cfg``, ``tox.ini`` or
``.flake8``; flake8 reads the first of them that has one) and not ruff. Run with ruff's own
defaults, the lint task would fix what such a project never checks (and miss what it does).
So where a codebase has no ruff configuration, its flake8 settings are translated
(:func:`flake8_rules`):

- ``select`` (flake8's default: ``E, F, W, C90`` and the codes of the plugins the codebase
  installs, where it says which) and ``extend-select`` -> ``--select``;
- ``ignore`` (flake8's default list when unset) and ``extend-ignore`` -> ``--ignore``;
- ``per-file-ignores`` -> ``--per-file-ignores``; ``exclude``/``extend-exclude`` ->
  ``--extend-exclude``;
- ``max-line-length`` (flake8's default: 79) -> ``--line-length``; ``max-complexity`` -> the
  mccabe setting (unset, flake8 checks no complexity: ``C901`` is ignored).

The line length the project holds its code to (:attr:`Flake8Rules.width`) is ``max-line-length``
where ``E501`` is checked, and a tenth more where bugbear's ``B950`` is (the pairing black's
documentation recommends: ``max-line-length = 80`` with ``B950`` allows black's 88).

Ruff implements most of flake8's and its plugins' codes under the same names. A code ruff does
not know (a plugin of flake8's it lacks, such as ``B950``) is left out, and said so
(:meth:`Flake8Rules.describe`). Where the codebase says which plugins it installs beside flake8
(:mod:`~structured_agents.tasks.flake8_plugins`), a selected code no installed plugin reports is
left out too, and said so: hyperlink 21.0.0 selects ``A`` to ``Z`` and installs bugbear and
pep8-naming, so its ``C`` is mccabe's ``C90`` and its ``D``, ``S``, ``U``... are nothing.
"""

from __future__ import annotations

import configparser
import functools
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from structured_agents.jobs.source import read_regular
from structured_agents.tasks.declared_tools import declared_text
from structured_agents.tasks.flake8_plugins import plugin_codes

__all__ = ["DEFAULT_IGNORE", "DEFAULT_SELECT", "FLAKE8_FILES", "Flake8Rules", "flake8_rules"]

FLAKE8_FILES = ("setup.cfg", "tox.ini", ".flake8")
"""The files flake8 reads its configuration from, first found first."""
DEFAULT_SELECT = ("E", "F", "W", "C90")
"""flake8's rules when ``select`` is unset."""
DEFAULT_IGNORE = ("E121", "E123", "E126", "E226", "E24", "E704", "W503", "W504")
"""flake8's ignored rules when ``ignore`` is unset."""
DEFAULT_LINE_LENGTH = 79
_SELECTOR = re.compile(r"[A-Z]{1,4}[0-9]{0,4}")


@dataclass(frozen=True, slots=True)
class Flake8Rules:
    """What a codebase's flake8 configuration checks, in terms ruff knows."""

    source: str
    """The file read: ``setup.cfg``."""
    select: tuple[str, ...]
    ignore: tuple[str, ...]
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...]
    exclude: tuple[str, ...]
    line_length: int
    width: int | None
    """The longest line the configuration lets through (see the module docstring); None when
    it checks no line length."""
    max_complexity: int | None
    unknown: tuple[str, ...]
    """Selected codes that ruff does not know, left out (an ignored one is left out silently)."""
    unplugged: tuple[str, ...] = ()
    """Selected codes that no plugin the codebase installs reports, left out."""

    def ruff_options(self) -> tuple[str, ...]:
        """The options that give ruff these rules."""
        ignore = [*self.ignore, *(() if self.max_complexity is not None else ("C901",))]
        options = ["--select", ",".join(self.select), "--line-length", str(self.line_length)]
        if ignore:
            options += ["--ignore", ",".join(ignore)]
        for pattern, codes in self.per_file_ignores:
            options += ["--per-file-ignores", f"{pattern}:{','.join(codes)}"]
        for pattern in self.exclude:
            options += ["--extend-exclude", pattern]
        if self.max_complexity is not None:
            options += ["--config", f"lint.mccabe.max-complexity = {self.max_complexity}"]
        return tuple(options)

    def describe(self) -> str:
        """``flake8's in setup.cfg: select E, F, W; ignore E203, E731; line length 79``."""
        text = f"flake8's in {self.source}: select {', '.join(self.select) or 'nothing'}"
        if self.ignore:
            text += f"; ignore {', '.join(self.ignore)}"
        if self.per_file_ignores:
            text += f"; per-file ignores for {len(self.per_file_ignores)} patterns"
        text += f"; line length {self.line_length}"
        if self.unknown:
            text += f"; not in ruff: {', '.join(self.unknown)}"
        if self.unplugged:
            text += f"; no plugin installed for: {', '.join(self.unplugged)}"
        return text


@functools.cache
def _ruff_codes() -> frozenset[str]:
    """Every rule code the running ruff knows (preview rules included)."""
    command = [sys.executable, "-m", "ruff", "rule", "--all", "--output-format", "json"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        rules = json.loads(done.stdout or "[]")
    except (OSError, ValueError):
        return frozenset()
    return frozenset(str(rule.get("code")) for rule in rules if isinstance(rule, dict))


@functools.cache
def _ruff_selectors() -> frozenset[str]:
    """Every rule code the running ruff knows, and every prefix of one."""
    return frozenset(code[:end] for code in _ruff_codes() for end in range(1, len(code) + 1))


@functools.lru_cache(maxsize=256)
def _ruff_accepts(selector: str) -> bool:
    """Whether ruff takes ``selector`` in ``--select``: not every prefix of a code is a
    selector (``L`` of ``LOG001`` is none; hyperlink 21.0.0 selects ``A`` to ``Z``, and ruff
    refused the whole run)."""
    command = [sys.executable, "-m", "ruff", "check", "--isolated", "--select", selector]
    command += ["--no-cache", "--exit-zero", "--stdin-filename", "selector.py", "-"]
    try:
        done = subprocess.run(command, input="", capture_output=True, text=True, check=False)
    except OSError:
        return False
    return done.returncode == 0


def _known(code: str) -> bool:
    """Whether ruff accepts ``code`` as a rule selector (a code or a prefix of one that ruff
    takes as a selector)."""
    return (
        _SELECTOR.fullmatch(code) is not None
        and code in _ruff_selectors()
        and (code in _ruff_codes() or _ruff_accepts(code))
    )


def _narrowed(select: tuple[str, ...], reported: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``select`` as far as flake8 reports it with the prefixes ``reported``: a code under one
    of them stays, a selector broader than some of them becomes those (``C`` with mccabe alone:
    ``C90``); the rest, left out."""
    kept: list[str] = []
    dropped: list[str] = []
    for code in select:
        if any(code.startswith(prefix) for prefix in reported):
            kept.append(code)
        elif covered := [prefix for prefix in reported if prefix.startswith(code)]:
            kept += covered
        else:
            dropped.append(code)
    return tuple(dict.fromkeys(kept)), tuple(dropped)


def _items(value: str) -> list[str]:
    """flake8's list values: separated by commas or white space, ``#`` starting a comment."""
    lines = (line.split("#", 1)[0] for line in value.splitlines())
    return [item for line in lines for item in re.split(r"[\s,]+", line) if item]


def _per_file(value: str) -> list[tuple[str, list[str]]]:
    """``per-file-ignores``: ``pattern:CODE,CODE pattern2: CODE``, as flake8 reads it."""
    mapping: list[tuple[str, list[str]]] = []
    for item in _items(value):
        pattern, colon, codes = item.partition(":")
        if colon and pattern:
            mapping.append((pattern, []))
        elif not colon:
            codes = pattern
        if mapping and codes:
            mapping[-1][1].append(codes)
    return mapping


def _checks(code: str, select: list[str], ignore: list[str]) -> bool:
    """Whether flake8 reports ``code`` under ``select``/``ignore`` (the longer match wins)."""
    chosen = max((len(s) for s in select if code.startswith(s)), default=-1)
    dropped = max((len(s) for s in ignore if code.startswith(s)), default=-1)
    return chosen > dropped


def _section(root: Path) -> tuple[str, configparser.SectionProxy] | None:
    for name in FLAKE8_FILES:
        parser = configparser.RawConfigParser()
        try:
            parser.read_string(read_regular(root / name).decode("utf-8"), source=name)
        except (OSError, configparser.Error, UnicodeDecodeError):
            continue
        if parser.has_section("flake8"):
            return name, parser["flake8"]
    return None


def _value(section: configparser.SectionProxy, key: str) -> str | None:
    """``key``'s value, spelled with dashes or (as flake8 also reads it) underscores."""
    return section.get(key, section.get(key.replace("-", "_")))


def _number(section: configparser.SectionProxy, key: str) -> int | None:
    value = _value(section, key)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def flake8_rules(root: Path, declared: str | None = None) -> Flake8Rules | None:
    """The flake8 configuration at ``root`` in ruff's terms (see the module docstring); None
    when there is none. ``declared``: what the codebase says it installs
    (:func:`~structured_agents.tasks.declared_tools.declared_text`), read here where not given."""
    found = _section(root)
    if found is None:
        return None
    source, section = found

    def listed(key: str) -> list[str] | None:
        value = _value(section, key)
        return _items(value) if value is not None else None

    def codes(values: list[str]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(code for code in values if _known(code)))

    plugins = plugin_codes(declared_text(root) if declared is None else declared)
    default = plugins.default if plugins is not None else DEFAULT_SELECT
    chosen = [*(listed("select") or default), *(listed("extend-select") or ())]
    given_ignore = listed("ignore")
    ignored = [*(DEFAULT_IGNORE if given_ignore is None else given_ignore), *(listed("extend-ignore") or ())]
    known, ignore = codes(chosen), codes(ignored)
    select, unplugged = _narrowed(known, plugins.reported) if plugins is not None else (known, ())
    per_file = tuple(
        (pattern.removeprefix("./"), kept)
        for pattern, values in _per_file(_value(section, "per-file-ignores") or "")
        if (kept := codes(values))
    )
    exclude = [*(listed("exclude") or ()), *(listed("extend-exclude") or ())]
    length = _number(section, "max-line-length")
    line_length = length if length is not None and length > 0 else DEFAULT_LINE_LENGTH
    width = line_length if _checks("E501", chosen, ignored) else None
    if width is None and _checks("B950", chosen, ignored):
        width = int(line_length * 1.1)
    complexity = _number(section, "max-complexity")
    return Flake8Rules(
        source=source,
        select=select,
        ignore=ignore,
        per_file_ignores=per_file,
        exclude=tuple(dict.fromkeys(pattern.removeprefix("./").rstrip("/") for pattern in exclude)),
        line_length=line_length,
        width=width,
        max_complexity=complexity if complexity is not None and complexity >= 0 else None,
        unknown=tuple(dict.fromkeys(code for code in chosen if code not in known)),
        unplugged=unplugged,
    )
