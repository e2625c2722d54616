"""The names a file's type comments and doctest examples use, which ruff does not read.

``Cache = {}  # type: Dict[int, Optional[str]]`` uses ``Dict`` and ``Optional`` as mypy reads
it, but ruff parses no type comment: it reports the imports as unused (F401) and its safe fix
removes them, after which mypy fails on the file (unidecode 1.3.8's ``__init__.py``). A name a
type comment uses is kept: the lint task leaves F401 unfixed in a file whose type comments use
a name it imports (:func:`imports_read_unseen`), and removes no such name itself.

A doctest example runs in the module's namespace: configobj 5.0.9's ``validate.py`` imports
``pprint`` only for ``>>> pprint(v.check(...))`` in a docstring, and with the import removed its
doctests failed. F401 is left unfixed too in a file whose doctest examples use a name it imports
(:func:`imports_read_unseen` again).
"""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from collections.abc import Set

from structured_agents import syntax
from structured_agents.tasks.lint_source import import_bound

__all__ = ["doctest_names", "imports_read_unseen", "type_comment_names"]

_TYPE_COMMENT = re.compile(r"#\s*type:\s*(?!ignore\b)(.+)")
"""A type comment (not ``# type: ignore``), and what it says."""
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def type_comment_names(text: str) -> frozenset[str]:
    """Each name the type comments of ``text`` use (``typing`` for ``typing.Dict``: the name
    bound in the file); empty where the text does not tokenize."""
    names: set[str] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT and (match := _TYPE_COMMENT.match(token.string)):
                said = match[1].split("#", 1)[0]
                names.update(_NAME.findall(said))
    except (tokenize.TokenError, SyntaxError):
        return frozenset()
    return frozenset(names)


_EXAMPLE = re.compile(r"^\s*(?:>>>|\.\.\.)\s(.*)$", re.M)
"""A doctest example's line (``>>> pprint(x)``, or its continuation ``... ``)."""


@functools.lru_cache(maxsize=64)
def doctest_names(text: str) -> frozenset[str]:
    """Each name the doctest examples in the strings of ``text`` use; empty where it does not
    parse."""
    tree = _tree(text) if ">>>" in text else None
    if tree is None:
        return frozenset()
    return frozenset(
        name
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and ">>>" in node.value
        for line in _EXAMPLE.findall(node.value)
        for name in _NAME.findall(line)
    )


@functools.lru_cache(maxsize=64)
def imports_read_unseen(text: str) -> bool:
    """Whether a type comment or a doctest example of ``text`` uses a name one of its imports
    binds: a use ruff does not see (asked of one file's text by every ruff call on it:
    discovery, each fix's layout, the verdict)."""
    names = (type_comment_names(text) if "type:" in text else frozenset()) | doctest_names(text)
    tree = _tree(text) if names else None
    return tree is not None and _imports_one_of(tree, names)


@functools.lru_cache(maxsize=64)
def _tree(text: str) -> ast.Module | None:
    try:
        return syntax.parse(text)
    except (SyntaxError, ValueError):
        return None


def _imports_one_of(tree: ast.Module, names: Set[str]) -> bool:
    """Whether an import of ``tree`` binds one of ``names``."""
    imports = (node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom))
    return any(not names.isdisjoint(import_bound(node)) for node in imports)
