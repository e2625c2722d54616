"""Ruff, as the lint task runs it: findings over a codebase's files, and on a text as if it
were one of them.

Ruff runs as ``python -m ruff`` (the ruff of the running interpreter) in the codebase root, so
the codebase's own configuration applies (rule selection, ``noqa``, and with
``--force-exclude`` its ``exclude`` settings), except what would change what a call does: a
reading call says ``--no-fix`` (a configuration's ``fix = true`` would otherwise have ruff fix
the user's files while it reads them) and :func:`ruff_safe_fixes` ``--no-unsafe-fixes``. A
text is checked through stdin with ``--stdin-filename`` set to the file's real path: nothing
is written anywhere, neither to the user's files nor to a temporary copy.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from structured_agents.jobs.errors import DiscoveryError
from structured_agents.tasks.errors import TaskError

__all__ = [
    "codes_of",
    "fixable_diagnostics",
    "ruff_codes",
    "ruff_diagnostics",
    "ruff_findings",
    "ruff_safe_fixes",
]

FILES_PER_RUN = 200
"""Paths passed to one ruff process (keeps the command line short)."""
TIMEOUT_S = 120.0
"""The longest one ruff process may take (200 files take about a second): ruff waits for ever on
a configuration file that is a named pipe."""


def _finding(raw: dict[str, Any]) -> dict[str, Any]:
    location, end = raw.get("location") or {}, raw.get("end_location") or {}
    return {
        "code": raw.get("code") or "syntax-error",
        "message": str(raw.get("message", "")),
        "line": int(location.get("row", 0)),
        "column": int(location.get("column", 0)),
        "end_line": int(end.get("row", 0)),
        "end_column": int(end.get("column", 0)),
        "fixable": raw.get("fix") is not None,
    }


def ruff_findings(root: Path, files: Sequence[str], *options: str) -> dict[str, list[dict[str, Any]]]:
    """Findings of ruff on ``files`` (relative to ``root``), with ``options`` (such as a
    ``--target-version``), by file, each sorted by position."""
    by_file: dict[str, list[dict[str, Any]]] = {}
    resolved_root = root.resolve()
    for start in range(0, len(files), FILES_PER_RUN):
        chunk = files[start : start + FILES_PER_RUN]
        command = [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--output-format",
            "json",
            "--exit-zero",
            "--no-fix",
        ]
        command += [*options, "--no-cache", "--force-exclude", "--", *chunk]
        try:
            done = subprocess.run(
                command, cwd=root, capture_output=True, text=True, check=False, timeout=TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            raise DiscoveryError(f"ruff did not finish in {TIMEOUT_S:.0f} s in {root}") from None
        except OSError as exc:
            raise DiscoveryError(f"could not run ruff: {exc}") from exc
        if done.returncode != 0:
            raise DiscoveryError(f"ruff failed in {root} (exit {done.returncode}): {done.stderr.strip()}")
        try:
            raw_findings = json.loads(done.stdout or "[]")
        except json.JSONDecodeError as exc:
            raise DiscoveryError(f"ruff printed no JSON in {root}: {done.stdout[:200]!r}") from exc
        for raw in raw_findings:
            path = Path(raw["filename"]).resolve().relative_to(resolved_root).as_posix()
            by_file.setdefault(path, []).append(_finding(raw))
    for findings in by_file.values():
        findings.sort(key=lambda f: (f["line"], f["column"], f["code"]))
    return by_file


def _ruff(root: Path, path: str, text: str, *options: str) -> str:
    """Ruff's standard output for ``text`` read as ``root/path``, with ``options``: bytes both
    ways, since a text-mode pipe reads ``\\r\\n`` as ``\\n`` and a fixed file would lose its
    Windows line endings (lark 1.1.9's every line changed)."""
    command = [sys.executable, "-m", "ruff", "check", *options, "--exit-zero", "--no-cache"]
    command += ["--force-exclude", "--stdin-filename", str(root.resolve() / path), "-"]
    try:
        done = subprocess.run(
            command, cwd=root, input=text.encode("utf-8"), capture_output=True, check=False, timeout=TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        raise TaskError(f"ruff did not finish in {TIMEOUT_S:.0f} s on {path}") from None
    except OSError as exc:
        raise TaskError(f"could not run ruff: {exc}") from exc
    if done.returncode != 0:
        error = done.stderr.decode("utf-8", "replace").strip()[:500]
        raise TaskError(f"ruff failed on {path} (exit {done.returncode}): {error}")
    return done.stdout.decode("utf-8")


def ruff_diagnostics(root: Path, path: str, text: str, *options: str) -> list[dict[str, Any]]:
    """Ruff's findings on ``text`` as if it were ``root/path`` (with ``options``, such as a rule
    selection), as its JSON output gives them (``code``, ``message``, ``location``,
    ``end_location``, and ``fix``: its ``applicability``, ``safe``, ``unsafe`` or
    ``display-only``, its ``message`` and its ``edits``, or None)."""
    out = _ruff(root, path, text, *options, "--no-fix", "--output-format", "json")
    try:
        findings = json.loads(out or "[]")
    except json.JSONDecodeError as exc:
        raise TaskError(f"ruff printed no JSON for {path}: {out[:200]!r}") from exc
    if not isinstance(findings, list):
        raise TaskError(f"ruff printed no list of findings for {path}: {out[:200]!r}")
    return findings


WITHHELD_FOR_WIDTH = frozenset({"SIM102", "SIM117"})
"""Rules whose fix ruff withholds where it guesses the joined statement would not fit the line
length, a guess that also refuses joins that fit: ply 3.11's 76-column ``if t[1] in
self.grammar.Nonterminals and t not in trans:`` at a length of 88."""
_WIDEST = "320"
"""The longest line length ruff accepts."""


def fixable_diagnostics(
    root: Path, path: str, text: str, *options: str, offered: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """:func:`ruff_diagnostics`, where a finding of :data:`WITHHELD_FOR_WIDTH` without a fix
    takes the fix ruff writes at the widest line length, and one of ``offered`` (the rules
    ``options`` leave unfixable with one ``--unfixable`` of them all) the fix ruff writes
    without that option; whether their lines fit the project's is for the verdict to judge,
    as for any fix."""
    diagnostics = ruff_diagnostics(root, path, text, *options)
    diagnostics = _fixed_apart(diagnostics, offered, root, path, text, _fixable(options, offered))
    width = "--line-length"  # the project's, given once only, as ruff requires
    rest = [option for n, option in enumerate(options) if width not in options[max(n - 1, 0) : n + 1]]
    return _fixed_apart(diagnostics, WITHHELD_FOR_WIDTH, root, path, text, [*rest, width, _WIDEST])


def _fixed_apart(
    diagnostics: list[dict[str, Any]],
    codes: frozenset[str],
    root: Path,
    path: str,
    text: str,
    options: Sequence[str],
) -> list[dict[str, Any]]:
    """``diagnostics`` (ruff's on ``text``), each of ``codes`` without a fix given the fix ruff
    writes with ``options`` instead (ruff runs again only where one lacks it)."""
    if not any(item.get("code") in codes and not item.get("fix") for item in diagnostics):
        return diagnostics
    fixes = {
        _key(item): item["fix"]
        for item in ruff_diagnostics(root, path, text, *options)
        if item.get("code") in codes and item.get("fix")
    }
    return [
        {**item, "fix": fixes[_key(item)]}
        if item.get("code") in codes and not item.get("fix") and _key(item) in fixes
        else item
        for item in diagnostics
    ]


def _fixable(options: Sequence[str], rules: frozenset[str]) -> list[str]:
    """``options`` without the ``--unfixable`` that names exactly ``rules``."""
    kept: list[str] = []
    at = 0
    while at < len(options):
        named = options[at + 1].split(",") if options[at] == "--unfixable" and at + 1 < len(options) else ()
        if named and set(named) == rules:
            at += 2
            continue
        kept.append(options[at])
        at += 1
    return kept


def _key(item: Mapping[str, Any]) -> tuple[object, ...]:
    spans = (item.get("location") or {}, item.get("end_location") or {})
    return item.get("code"), *((span.get("row"), span.get("column")) for span in spans)


def ruff_codes(root: Path, path: str, text: str, *options: str) -> list[str]:
    """The codes of ruff's findings on ``text`` as if it were ``root/path`` (with ``options``), sorted."""
    return codes_of(ruff_diagnostics(root, path, text, *options))


def codes_of(findings: Sequence[Mapping[str, Any]]) -> list[str]:
    """The codes of ruff's ``findings`` (``syntax-error`` for one without), sorted."""
    return sorted(str(item.get("code") or "syntax-error") for item in findings)


def ruff_safe_fixes(root: Path, path: str, text: str, *options: str) -> str:
    """``text`` with the fixes ruff itself calls safe applied (``ruff check --fix``, with
    ``options``), as if it were ``root/path``; unchanged where ruff has none (or excludes the file)."""
    return _ruff(root, path, text, *options, "--fix", "--no-unsafe-fixes", "--quiet") or text
