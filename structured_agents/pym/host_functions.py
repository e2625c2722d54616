"""The built-in host functions ``.pym`` scripts may declare as ``@external``.

==============================================  =========================================
declaration in the script                       returns
==============================================  =========================================
``read_file(path: str) -> str``                 the file's text (UTF-8, at most 4 MiB)
``list_files(pattern: str = "*") -> list[str]`` workspace-relative files matching a glob,
                                                or the files in a directory, sorted
``file_exists(path: str) -> bool``              whether a file or directory exists
``run_ruff(path: str) -> list[dict]``           ``ruff check`` diagnostics of a file/dir:
                                                code, message, path, line, column,
                                                end_line, end_column, fixable
``write_file(path: str, content: str) -> int``  characters written (not granted by default)
==============================================  =========================================

:data:`DEFAULT_GRANTS` leaves ``write_file`` out: a tool's result is a proposal the host
applies, not a write the tool makes. Every path is resolved inside the workspace.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import shutil
import stat
import sys
from pathlib import Path
from typing import Any

from structured_agents.pym.errors import PymExternalError
from structured_agents.pym.externals import ExternalContext, ExternalRegistry, resolve_path

__all__ = ["DEFAULT_GRANTS", "MAX_LIST_ENTRIES", "MAX_READ_BYTES", "default_externals"]

DEFAULT_GRANTS = frozenset({"read_file", "list_files", "file_exists", "run_ruff"})
MAX_READ_BYTES = 4 * 1024 * 1024
MAX_LIST_ENTRIES = 10_000


def _not_regular(path: str, mode: int) -> PymExternalError:
    if stat.S_ISDIR(mode):
        return PymExternalError(f"is a directory: {path!r}", exc_type="IsADirectoryError")
    return PymExternalError(f"not a regular file: {path!r}", exc_type="OSError")


def _open_regular(target: Path, path: str, flags: int, verb: str) -> tuple[int, os.stat_result]:
    """A descriptor of ``target`` opened with ``flags``, never blocking and never through a
    symlink, and its status; refused unless it is a regular file (checked on the descriptor,
    so nothing can swap the file between the check and the use)."""
    try:
        fd = os.open(target, flags | os.O_NONBLOCK | os.O_NOFOLLOW, 0o644)
    except FileNotFoundError:
        raise PymExternalError(f"no such file: {path!r}", exc_type="FileNotFoundError") from None
    except OSError as exc:
        raise PymExternalError(f"cannot {verb} {path!r}: {exc.strerror}", exc_type="OSError") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise _not_regular(path, info.st_mode)
    return fd, info


def _read_regular(target: Path, path: str) -> str:
    """The text of ``target`` when it is a regular file: opened without blocking (a named pipe
    would wait for a writer forever) and checked on the open descriptor, then read whole."""
    fd, info = _open_regular(target, path, os.O_RDONLY, "read")
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > MAX_READ_BYTES:
            raise PymExternalError(f"{path!r} is larger than {MAX_READ_BYTES} bytes", exc_type="ValueError")
        return handle.read(MAX_READ_BYTES + 1).decode("utf-8", errors="replace")


async def read_file(ctx: ExternalContext, path: str) -> str:
    """Read a text file of the workspace (a regular file only; off the event loop, so the run's
    deadline holds whatever the file is)."""
    target = resolve_path(ctx.workspace, path)
    return await asyncio.to_thread(_read_regular, target, path)


def _list(root: Path, pattern: str) -> list[str]:
    if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
        raise PymExternalError(
            f"pattern {pattern!r} must stay inside the workspace", exc_type="PermissionError"
        )
    base = resolve_path(root, pattern) if not any(c in pattern for c in "*?[") else None
    candidates = base.iterdir() if base is not None and base.is_dir() else root.glob(pattern)
    out: list[str] = []
    for candidate in candidates:
        resolved = candidate.resolve()
        if resolved.is_file() and resolved.is_relative_to(root):
            out.append(candidate.relative_to(root).as_posix())
            if len(out) > MAX_LIST_ENTRIES:
                message = f"more than {MAX_LIST_ENTRIES} files match {pattern!r}; narrow the pattern"
                raise PymExternalError(message, exc_type="ValueError")
    return sorted(out)


async def list_files(ctx: ExternalContext, pattern: str = "*") -> list[str]:
    """List workspace files matching a glob pattern, or the files in a directory."""
    root = resolve_path(ctx.workspace, ".")
    if not isinstance(pattern, str):
        raise PymExternalError("pattern must be a str", exc_type="TypeError")
    return await asyncio.to_thread(_list, root, pattern)


async def file_exists(ctx: ExternalContext, path: str) -> bool:
    """Whether a path of the workspace exists."""
    return resolve_path(ctx.workspace, path).exists()


def _ruff_command() -> list[str]:
    if importlib.util.find_spec("ruff") is not None:
        return [sys.executable, "-m", "ruff"]
    found = shutil.which("ruff")
    if found is None:
        raise PymExternalError("ruff is not installed on the host", exc_type="RuntimeError")
    return [found]


def _ruff_item(item: dict[str, Any], root: Path) -> dict[str, Any]:
    filename = Path(item.get("filename") or "")
    rel = filename.relative_to(root).as_posix() if filename.is_relative_to(root) else filename.name
    location, end = item.get("location") or {}, item.get("end_location") or {}
    return {
        "code": item.get("code"),
        "message": item.get("message"),
        "path": rel,
        "line": location.get("row"),
        "column": location.get("column"),
        "end_line": end.get("row"),
        "end_column": end.get("column"),
        "fixable": item.get("fix") is not None,
    }


def _python_files(root: Path, target: Path) -> list[str]:
    """The Python files ``ruff`` may read for ``target``: itself, or the ``.py``/``.pyi`` files
    under it, each a regular file whose real path is inside ``root`` (a symlink that leads out
    of the workspace is left out, where ruff's own walk would follow it)."""
    if target.is_file():
        return [str(target)]
    found = []
    for candidate in sorted(target.rglob("*")):
        if candidate.suffix not in (".py", ".pyi"):
            continue
        resolved = candidate.resolve()
        if resolved.is_relative_to(root) and resolved.is_file():
            found.append(str(candidate))
            if len(found) > MAX_LIST_ENTRIES:
                raise PymExternalError(
                    f"more than {MAX_LIST_ENTRIES} Python files under the path; narrow it",
                    exc_type="ValueError",
                )
    return found


async def run_ruff(ctx: ExternalContext, path: str) -> list[dict[str, Any]]:
    """Run ``ruff check`` on a workspace file or directory; its diagnostics, without fixing.
    Ruff is given the files themselves (:func:`_python_files`), never a directory to walk, with
    ``--force-exclude`` so its configured excludes still apply."""
    target = resolve_path(ctx.workspace, path)
    root = resolve_path(ctx.workspace, ".")
    if not target.exists():
        raise PymExternalError(f"no such file: {path!r}", exc_type="FileNotFoundError")
    if not (target.is_file() or target.is_dir()):
        raise _not_regular(path, target.stat().st_mode)
    files = await asyncio.to_thread(_python_files, root, target)
    if not files:
        return []
    args = ["check", "--output-format", "json", "--no-cache", "--exit-zero", "--no-fix", "--force-exclude"]
    args += files
    process = await asyncio.create_subprocess_exec(
        *_ruff_command(), *args, cwd=root, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        stdout, stderr = await process.communicate()
    finally:
        if process.returncode is None:  # cancelled by the run's deadline
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
    if process.returncode != 0:
        message = f"ruff failed ({process.returncode}): {stderr.decode(errors='replace').strip()[:500]}"
        raise PymExternalError(message, exc_type="RuntimeError")
    return [_ruff_item(item, root) for item in json.loads(stdout or b"[]")]


def _write_regular(target: Path, path: str, content: str) -> int:
    """Write ``content`` to ``target``, a regular file or a new one (never a pipe or a device:
    opened without blocking and checked on the open descriptor)."""
    data = content.encode("utf-8")
    fd, _ = _open_regular(target, path, os.O_WRONLY | os.O_CREAT, "write")
    with os.fdopen(fd, "wb") as handle:
        handle.truncate(0)
        handle.write(data)
    return len(content)


async def write_file(ctx: ExternalContext, path: str, content: str) -> int:
    """Write a text file of the workspace (its directory must exist; a regular file only)."""
    target = resolve_path(ctx.workspace, path)
    if not isinstance(content, str):
        raise PymExternalError("content must be a str", exc_type="TypeError")
    if not target.parent.is_dir():
        raise PymExternalError(f"no such directory for {path!r}", exc_type="FileNotFoundError")
    return await asyncio.to_thread(_write_regular, target, path, content)


def default_externals() -> ExternalRegistry:
    """A registry of every built-in host function (grant them with :data:`DEFAULT_GRANTS`)."""
    registry = ExternalRegistry()
    for func in (read_file, list_files, file_exists, run_ruff, write_file):
        registry.register(func)
    return registry
