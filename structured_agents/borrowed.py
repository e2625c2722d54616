"""Words a text borrowed from a bundle's prompt rather than from the code it is about.

A small model copies what it is shown: "Add a number to the stack." for a function that formats
numbers. A written text *borrows* a word (one of its
:func:`~structured_agents.words.plain_words`) when the word stands in the bundle's fixed text
(its worked examples, prompt files and tool descriptions: :func:`vocabulary`) but nowhere in
the file the text is about. The same definition serves both ends: the docstring task bans
such words at decode time, ``sa eval`` counts the ones that got through as *leaked*.

:func:`file_words` reads a run's file when its model turn is built (cached while the file is
unchanged), so jobs carry no copy of their file's words: a file of fifty functions is read
once, not stored fifty times.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from structured_agents.words import plain_words

__all__ = ["borrowed_words", "file_text", "file_words", "vocabulary"]


def file_words(workspace: Path | None, path: str) -> frozenset[str]:
    """The :func:`~structured_agents.words.plain_words` of the file ``path`` of ``workspace``;
    none when there is no such file inside the workspace (or it cannot be read as UTF-8)."""
    return _words(file_text(workspace, path))


@lru_cache(maxsize=64)
def _words(text: str) -> frozenset[str]:
    return frozenset(plain_words(text))


def file_text(workspace: Path | None, path: str) -> str:
    """The text of the regular file ``path`` of ``workspace`` (read once while it is unchanged);
    empty when there is no such file inside the workspace, or it cannot be read as UTF-8."""
    if workspace is None or not path:
        return ""
    root = workspace.resolve()
    target = (root / path).resolve()
    try:
        if not target.is_relative_to(root) or not target.is_file():
            return ""
        stat = target.stat()
    except OSError:
        return ""
    return _file_text(str(target), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=64)
def _file_text(path: str, _mtime_ns: int, _size: int) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def vocabulary(texts: Iterable[str]) -> frozenset[str]:
    """The words of a bundle's fixed ``texts``: the words a text may borrow."""
    return frozenset(word for text in texts for word in plain_words(text))


def borrowed_words(text: str, file_text: str, fixed: frozenset[str]) -> list[str]:
    """The words of ``text`` that are in ``fixed`` (a :func:`vocabulary`) but not in
    ``file_text``, sorted."""
    return sorted((plain_words(text) & fixed) - plain_words(file_text))
