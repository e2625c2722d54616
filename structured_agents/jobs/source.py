"""Reading a codebase's files exactly as they are on disk, and only its regular files.

Text is decoded as UTF-8 with no newline translation, so ``source_hash(text)`` equals the
hash of the file's bytes and a diff against the text applies to the file byte for byte.

Every file the tasks read from a codebase (sources, ``pyproject.toml``, ``setup.py``,
``.gitignore``...) is read by :func:`read_regular`: a named pipe there would block its reader
for ever (a worker, or ``sa serve`` answering a request), a device or a link could feed it
without end or from outside the codebase.
"""

from __future__ import annotations

import errno
import io
import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from structured_agents.jobs.ids import source_hash

__all__ = ["MAX_FILE_BYTES", "SourceFile", "read_regular", "read_source", "split_lines"]

MAX_FILE_BYTES = 4 * 1024 * 1024
"""The largest file read from a codebase; a larger one is not read (a source is skipped, logged)."""

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file's text and the hash of its bytes."""

    text: str
    hash: str


def read_regular(path: Path, limit: int = MAX_FILE_BYTES, *, follow: bool = False) -> bytes:
    """The bytes of the regular file at ``path``; OSError (its ``strerror`` says why) where it
    cannot be read, is anything else (a symbolic link, unless ``follow``, a named pipe, a device,
    a folder) or is larger than ``limit`` bytes. The file is opened without blocking, so a
    pipe's writer is never waited for, and read no further than ``limit``."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        descriptor = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "a symbolic link, not followed", str(path)) from None
        raise
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit} bytes", str(path))
    return data


def read_source(path: Path) -> SourceFile | None:
    """The file as UTF-8 text with its hash; None (logged) when it cannot be read
    (:func:`read_regular`) or decoded."""
    try:
        data = read_regular(path)
        return SourceFile(text=data.decode("utf-8"), hash=source_hash(data))
    except (OSError, UnicodeDecodeError) as exc:
        logger.warning("skipping %s: %s", path, exc)
        return None


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split where Python's tokenizer splits (``\\n``, ``\\r\\n``, ``\\r``).

    Unlike ``str.splitlines`` this keeps form feeds and other separators inside lines, so line
    numbers agree with ``ast``.
    """
    return io.StringIO(text, newline="").readlines()
