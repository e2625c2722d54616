"""Reading source files exactly as they are on disk.

Text is decoded as UTF-8 with no newline translation, so ``source_hash(text)`` equals the
hash of the file's bytes and a diff against the text applies to the file byte for byte.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from pathlib import Path

from structured_agents.jobs.ids import source_hash

__all__ = ["SourceFile", "read_source", "split_lines"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file's text and the hash of its bytes."""

    text: str
    hash: str


def read_source(path: Path) -> SourceFile | None:
    """The file as UTF-8 text with its hash; None (logged) when it cannot be read or decoded."""
    try:
        data = path.read_bytes()
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
