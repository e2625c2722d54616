"""A string literal too long for its line, split into implicitly concatenated parts.

Ruff format wraps a fix's statement but never splits a string: pluggy's ``raise
ValueError("Plugin name already registered: %s=%s\\n%s" % (...))`` becomes an f-string of 94
columns in a file formatted at 88, and the verdict drops it (``made a line too long``). Where
such a literal stands alone on its line inside brackets (as ruff format leaves a call's only
argument), :func:`split_strings` writes it as black's string processing and maintainers do::

    raise ValueError(
        f"Plugin name already registered: {plugin_name}={plugin}\\n"
        f"{self._name2plugin}"
    )

Where the literal is instead the whole value of a one-line assignment or ``return`` (schedule
1.2.2's ``timestats = "(last run: %s, next run: %s)" % (...)``, an f-string of 102 columns once
UP031 and UP032 are made), the value is put in parentheses on lines of its own first, as black's
string processing writes it::

    timestats = (
        f"(last run: {format_time(self.last_run)}, "
        f"next run: {format_time(self.next_run)})"
    )

It splits after a ``\\n`` where that makes every part fit, else after the end of a clause
(``, ``, ``; ``: schedule's ``"(last run: {...}, "`` and ``"next run: {...})"``, not ``"next
run: "`` apart from its value, which a reviewer sent back), else after the last space that does;
never inside an escape or a replacement field. A part without a replacement field loses the
``f``. The split is kept only when the parsed string is the same as before, and only in two
parts or more: a string that fits once parenthesized is left where it was, as black leaves it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from structured_agents import syntax

__all__ = ["split_strings"]

_LITERAL = re.compile(
    r"^(?P<indent>[ \t]*)(?P<prefix>[rRfF]{0,2})(?P<quote>[\"'])(?P<body>.*)(?P=quote)(?P<comma>,?)$"
)
"""A line holding one single-quoted (not triple-quoted) string literal and an optional comma."""


def _breaks(
    body: str, quote: str, formatted: bool, raw: bool
) -> tuple[list[int], list[int], list[int]] | None:
    """The offsets of ``body`` after which it may be split (after a ``\\n`` escape, after a
    space that ends a clause: ``, `` or ``; ``, after any space), outside escapes and
    replacement fields; None when the body holds its quote unescaped or a field does not close
    (it is not one literal)."""
    newlines: list[int] = []
    clauses: list[int] = []
    spaces: list[int] = []
    depth = index = 0
    while index < len(body):
        char = body[index]
        if char == "\\":
            if not raw and depth == 0 and body[index + 1 : index + 2] == "n":
                newlines.append(index + 2)
            index += 2
            continue
        if char == quote:  # the literal ends here: the line holds more than one
            return None
        if formatted and char in "{}":
            if depth == 0 and body[index : index + 2] in ("{{", "}}"):
                index += 2
                continue
            depth += 1 if char == "{" else -1
            if depth < 0:
                return None
        elif char == " " and depth == 0:
            spaces.append(index + 1)
            if body[index - 1 : index] in (",", ";"):
                clauses.append(index + 1)
        index += 1
    return (newlines, clauses, spaces) if depth == 0 else None


def _parts(body: str, points: Sequence[int], room: int) -> list[str] | None:
    """``body`` cut at some of ``points`` so that each part is at most ``room`` long (the
    furthest point that fits each time); None when a part cannot fit."""
    parts: list[str] = []
    start = 0
    while len(body) - start > room:
        fitting = [point for point in points if start < point <= start + room and point < len(body)]
        if not fitting:
            return None
        parts.append(body[start : fitting[-1]])
        start = fitting[-1]
    return [*parts, body[start:]]


def _has_field(part: str) -> bool:
    return bool(re.search(r"(?<!\{)\{(?!\{)", part.replace("{{", "")))


def _literal(prefix: str, quote: str, part: str) -> str:
    if "f" in prefix.lower() and not _has_field(part):
        prefix = prefix.replace("f", "").replace("F", "")
        part = part.replace("{{", "{").replace("}}", "}")
    return f"{prefix}{quote}{part}{quote}"


def _split_line(line: str, width: int) -> list[str] | None:
    """``line`` (a string literal alone, perhaps with a comma) as several lines within
    ``width``; None when it is not such a line or cannot be split so."""
    ending = line[len(line.rstrip("\r\n")) :]
    match = _LITERAL.match(line.rstrip("\r\n"))
    if match is None:
        return None
    indent, prefix, quote, body, comma = match.group("indent", "prefix", "quote", "body", "comma")
    if "b" in prefix.lower():
        return None
    found = _breaks(body, quote, "f" in prefix.lower(), "r" in prefix.lower())
    if found is None:
        return None
    room = width - len(indent) - len(prefix) - 2 - len(comma)
    newlines, clauses, spaces = found
    parts = _parts(body, newlines, room) if newlines else None
    parts = parts or (_parts(body, sorted({*newlines, *clauses}), room) if clauses else None)
    parts = parts or _parts(body, sorted({*newlines, *spaces}), room)
    if parts is None or len(parts) < 2:
        return None
    lines = [f"{indent}{_literal(prefix, quote, part)}{ending}" for part in parts]
    lines[-1] = lines[-1].rstrip("\r\n") + comma + ending
    return lines


def _in_brackets(tree: ast.Module, row: int) -> ast.expr | None:
    """The string (one line, ``row`` from 1) that is not a statement of its own: a literal
    inside brackets, where parts on lines of their own concatenate."""
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            if (
                isinstance(child, ast.Constant | ast.JoinedStr)
                and child.lineno == child.end_lineno == row
                and not isinstance(node, ast.Expr)
            ):
                return child
    return None


_INDENT = "    "
_VALUED = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)
"""The statements whose value a string may be, put in parentheses to be split."""


def _parenthesized(tree: ast.Module, line: str, row: int, node: ast.expr) -> tuple[str, str, str] | None:
    """``line`` (row ``row`` from 1), where the string ``node`` is the whole value of a one-line
    assignment or ``return`` and ends the line, as its three lines with the value in parentheses:
    the statement up to ``(``, the literal alone one indent deeper, and ``)``; None otherwise."""
    text = line.rstrip("\r\n")
    ending, encoded = line[len(text) :], text.encode("utf-8")
    indent = text[: len(text) - len(text.lstrip(" "))]
    if "\t" in indent or node.end_col_offset != len(encoded):
        return None
    statements = (statement for statement in ast.walk(tree) if isinstance(statement, _VALUED))
    if not any(one.value is node and one.lineno == one.end_lineno == row for one in statements):
        return None
    head = encoded[: node.col_offset].decode("utf-8")
    literal = text[len(head) :]
    return f"{head}({ending}", f"{indent}{_INDENT}{literal}{ending}", f"{indent}){ending}"


def split_strings(lines: list[str], first: int, last: int, width: int, known: set[str]) -> list[str]:
    """``lines`` with each line of ``[first, last)`` longer than ``width`` (and not in
    ``known``, the file's lines before the fix) that is a string literal inside brackets split
    into parts that fit (see the module docstring); the lines as they were where any such
    split fails."""
    try:
        tree = syntax.parse("".join(lines))
    except (SyntaxError, ValueError):
        return lines
    result = list(lines)
    for row in range(last, first, -1):  # from the end: the rows above keep their numbers
        line = lines[row - 1]
        if len(line.rstrip("\r\n")) <= width or line.rstrip("\r\n") in known:
            continue
        node = _in_brackets(tree, row)
        if node is None:
            return lines
        split, opening, closing = _split_line(line, width), "", ""
        wrapped = _parenthesized(tree, line, row, node) if split is None else None
        if wrapped is not None and len(wrapped[0].rstrip("\r\n")) <= width:
            opening, inner, closing = wrapped
            split = _split_line(inner, width)
        if split is None:
            return lines
        try:
            joined = syntax.parse(
                "(" + "".join(part.strip().rstrip(",") for part in split) + ")", mode="eval"
            )
        except SyntaxError:
            return lines
        if ast.dump(joined.body) != ast.dump(node):
            return lines
        result[row - 1 : row] = [opening, *split, closing] if opening else split
    return result
