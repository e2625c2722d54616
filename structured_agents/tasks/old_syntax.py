"""Syntax a Python older than ruff's lowest target lacks, found in a text's tree.

Ruff reports syntax its target version lacks, but its lowest target is ``py37``: for a codebase
that still supports Python 2.7 or 3.5 (simplejson 3.19 declares ``>=2.5``), an f-string,
``raise ... from`` or ``[*a, *b]`` passes ruff's check while the package's own users cannot
import the result. :func:`older_syntax` counts each construct of the text by the first Python
that has it, for the constructs Pythons 2.5 to 3.6 added; the caller compares the counts with
the original's, so what the code already used is not held against a change.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections import Counter
from collections.abc import Iterator

from structured_agents import syntax

__all__ = ["older_syntax"]

Version = tuple[int, int]


def _in_display(node: ast.AST, parent: ast.AST | None) -> bool:
    """Whether a ``*x`` unpacks into a list, tuple or set being built (PEP 448), not into an
    assignment target or a call's arguments."""
    if isinstance(parent, ast.Set):
        return True
    return isinstance(parent, (ast.List, ast.Tuple)) and isinstance(parent.ctx, ast.Load)


def _call_unpacks_more(node: ast.Call) -> bool:
    """Whether a call unpacks more than one ``*`` or ``**`` argument (PEP 448)."""
    stars = sum(isinstance(arg, ast.Starred) for arg in node.args)
    double = sum(keyword.arg is None for keyword in node.keywords)
    return stars > 1 or double > 1


def _constructs(tree: ast.AST) -> Iterator[tuple[Version, str]]:
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and not isinstance(parents.get(node), ast.FormattedValue):
            yield (3, 6), "an f-string"
        elif isinstance(node, ast.AnnAssign):
            yield (3, 6), "a variable annotation"
        elif isinstance(node, (ast.AsyncFunctionDef, ast.Await, ast.AsyncFor, ast.AsyncWith)):
            yield (3, 5), "async or await"
        elif isinstance(node, ast.Starred) and _in_display(node, parents.get(node)):
            yield (3, 5), "unpacking into a display ([*a, *b])"
        elif isinstance(node, ast.Dict) and any(key is None for key in node.keys):
            yield (3, 5), "unpacking into a dict display ({**a})"
        elif isinstance(node, ast.Call) and _call_unpacks_more(node):
            yield (3, 5), "more than one unpacking in a call"
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            yield (3, 5), "the @ operator"
        elif isinstance(node, ast.YieldFrom):
            yield (3, 3), "yield from"
        elif isinstance(node, ast.Raise) and node.cause is not None:
            yield (3, 0), "raise ... from"
        elif isinstance(node, ast.Nonlocal):
            yield (3, 0), "nonlocal"
        elif isinstance(node, ast.Starred) and isinstance(getattr(node, "ctx", None), ast.Store):
            yield (3, 0), "a starred assignment target"
        elif isinstance(node, ast.arguments) and node.kwonlyargs:
            yield (3, 0), "a keyword-only parameter"
        elif isinstance(node, ast.arg) and node.annotation is not None:
            yield (3, 0), "a parameter annotation"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            yield (3, 0), "a return annotation"
        elif isinstance(node, (ast.Set, ast.SetComp, ast.DictComp)):
            yield (2, 7), "a set display or a set or dict comprehension"
        elif isinstance(node, ast.With) and len(node.items) > 1:
            yield (2, 7), "several context managers in one with"


def _underscored_numbers(text: str) -> int:
    """Numbers written with ``_`` between digits (Python 3.6)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return 0
    return sum(token.type == tokenize.NUMBER and "_" in token.string for token in tokens)


def older_syntax(text: str, lowest: Version) -> Counter[str]:
    """The constructs of ``text`` that Python ``lowest`` lacks, by message (``an f-string needs
    Python 3.6``) with their count; empty for a text that does not parse (compiling it is
    another check's job)."""
    try:
        tree = syntax.parse(text)
    except (SyntaxError, ValueError):
        return Counter()
    found: Counter[str] = Counter(
        f"{what} needs Python {version[0]}.{version[1]}"
        for version, what in _constructs(tree)
        if version > lowest
    )
    if lowest < (3, 6):
        underscored = _underscored_numbers(text)
        if underscored:
            found["an underscore in a number needs Python 3.6"] = underscored
    return found
