"""Words a text borrowed from a bundle's prompt rather than from the code it is about.

A small model copies what it is shown: "Add a number to the stack." for a function that formats
numbers. A written text *borrows* a word (lowercased, three letters or more, camelCase and
snake_case split, minus :data:`STOP_WORDS`) when the word stands in the bundle's fixed text
(its worked examples, prompt files and tool descriptions: :func:`vocabulary`) but nowhere in
the file the text is about. The same definition serves both ends: the docstring task bans
such words at decode time, ``sa eval`` counts the ones that got through as *leaked*.

:func:`file_words` reads a run's file when its model turn is built (cached while the file is
unchanged), so jobs carry no copy of their file's words: a file of fifty functions is read
once, not stored fifty times.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

__all__ = ["STOP_WORDS", "borrowed_words", "file_text", "file_words", "vocabulary", "words"]

_STOP_TEXT = """
    the and for with this that from are was were not but all any can has have had its into
    one two may will when which who what where than then them they their there these those
    also only each other such some more most does did should would could been being over
    under after before about here how out you your via per etc our its it's
    args arg arguments argument param params parameter parameters returns return rtype raises
    raise yields yield note notes example examples attributes attribute keyword optional
    default none true false self cls
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())
"""English function words and docstring section words: every docstring may use them."""

_WORD = re.compile(r"[A-Za-z]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


def words(text: str) -> set[str]:
    """The words of ``text`` that count (see the module docstring)."""
    found = (word.lower() for word in _WORD.findall(_CAMEL.sub(" ", text)))
    return {word for word in found if len(word) >= 3 and word not in STOP_WORDS}


def file_words(workspace: Path | None, path: str) -> frozenset[str]:
    """The :func:`words` of the file ``path`` of ``workspace``; none when there is no such file
    inside the workspace (or it cannot be read as UTF-8)."""
    return _words(file_text(workspace, path))


@lru_cache(maxsize=64)
def _words(text: str) -> frozenset[str]:
    return frozenset(words(text))


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
    return frozenset(word for text in texts for word in words(text))


def borrowed_words(text: str, file_text: str, fixed: frozenset[str]) -> list[str]:
    """The words of ``text`` that are in ``fixed`` (a :func:`vocabulary`) but not in
    ``file_text``, sorted."""
    return sorted((words(text) & fixed) - words(file_text))
