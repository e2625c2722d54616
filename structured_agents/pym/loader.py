"""Load ``.pym`` files: check them (through the disk cache) and build the code the sandbox runs.

How a script maps onto Monty: the checker finds the declarations, and the loader blanks their
lines out of the source (the ``from grail import`` line, every ``x: T = Input(...)`` statement
and every ``@external async def``), keeping every other line where it was, so the sandbox's
line and column numbers are the user's file's. Inputs then reach the sandbox as variables
(Monty's ``inputs=``) and externals as host functions that the undefined names resolve to.
"""

from __future__ import annotations

import threading
from pathlib import Path

from structured_agents.pym.cache import PymCache, content_hash
from structured_agents.pym.checker import CheckResult, check_source
from structured_agents.pym.errors import Diagnostic, PymCheckError, PymParseError
from structured_agents.pym.model import ExternalDecl, InputSpec, PymScript
from structured_agents.types import JsonDict

__all__ = ["ScriptLoader", "load_source", "runnable_code"]


def _normalise(source: str) -> str:
    return source.replace("\r\n", "\n").replace("\r", "\n")


def runnable_code(source: str, removed: list[tuple[int, int]]) -> str:
    """The source with the lines of ``removed`` (1-based inclusive spans) emptied."""
    lines = _normalise(source).split("\n")
    for start, stop in removed:
        for index in range(start - 1, stop):
            lines[index] = ""
    return "\n".join(lines)


def _entry(source: str, result: CheckResult) -> JsonDict:
    """The cache entry of a check: diagnostics without path, plus what the runner needs."""
    return {
        "diagnostics": [[d.code, d.message, d.line, d.column] for d in result.diagnostics],
        "docstring": result.docstring,
        "inputs": [spec.to_json() for spec in result.inputs],
        "externals": [decl.to_json() for decl in result.externals],
        "code": "" if result.diagnostics else runnable_code(source, result.removed),
    }


def _checked(source: str, cache: PymCache | None) -> tuple[str, JsonDict]:
    key = content_hash(source)
    entry = cache.get(key) if cache is not None else None
    if entry is None:
        entry = _entry(source, check_source(_normalise(source)))
        if cache is not None:
            cache.put(key, entry)
    return key, entry


def _diagnostics(entry: JsonDict, path: str) -> list[Diagnostic]:
    return [Diagnostic(code, message, path, line, col) for code, message, line, col in entry["diagnostics"]]


def load_source(source: str, path: Path, *, cache: PymCache | None = None) -> PymScript:
    """Check ``source`` (the content of ``path``) and return the script; PymCheckError if rejected."""
    key, entry = _checked(source, cache)
    diagnostics = _diagnostics(entry, str(path))
    if diagnostics:
        parse_only = all(d.code == "PYM001" for d in diagnostics)
        raise (PymParseError if parse_only else PymCheckError)(diagnostics)
    return PymScript(
        path=path,
        source_hash=key,
        description=entry["docstring"] or f"Grail tool {path.stem}",
        inputs=tuple(InputSpec.from_json(i) for i in entry["inputs"]),
        externals=tuple(ExternalDecl.from_json(e) for e in entry["externals"]),
        code=entry["code"],
    )


class ScriptLoader:
    """Loads scripts, remembering each file's script until its size or mtime changes."""

    def __init__(self, cache: PymCache | None = None) -> None:
        self.cache = cache
        self._memo: dict[Path, tuple[tuple[int, int], PymScript]] = {}
        self._lock = threading.Lock()

    def load(self, path: Path) -> PymScript:
        """The checked script at ``path``; PymCheckError if rejected, OSError if unreadable."""
        stat = path.stat()
        stamp = (stat.st_mtime_ns, stat.st_size)
        with self._lock:
            memo = self._memo.get(path)
        if memo is not None and memo[0] == stamp:
            return memo[1]
        script = load_source(path.read_text(encoding="utf-8"), path, cache=self.cache)
        with self._lock:
            self._memo[path] = (stamp, script)
        return script
