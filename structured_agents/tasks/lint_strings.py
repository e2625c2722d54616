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
run: "`` apart from its value, which a reviewer sent back; outside the text's parentheses also
after ``: `` and around a parenthesis: webtest 3.0.7's ``f"No fields found matching {name!r} "``
over ``"(and no default given)"``), else after a space, not just before a replacement field
where another fits; never inside an escape or a replacement field. Of the ways to cut it into
as few parts as fit, the one whose longest part is shortest: a reviewer sent back ``"given)"``
and ``f"field {self.name!r}"`` left alone by cuts at the furthest space that fit. A part without a
replacement field loses the ``f``. The split is kept only when the parsed string is the same as
before, and only in two parts or more: a string that fits once parenthesized is left where it
was, as black leaves it.
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
    space that ends a clause: ``, `` or ``; ``, and outside the text's parentheses ``: `` or a
    parenthesis closed, or before one opens; after any space), outside escapes and replacement
    fields; None when the body holds its quote unescaped or a field does not close (it is not
    one literal)."""
    newlines: list[int] = []
    clauses: list[int] = []
    spaces: list[int] = []
    depth = index = parenthesized = 0
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
        elif char in "()" and depth == 0:
            parenthesized = max(0, parenthesized + (1 if char == "(" else -1))
        elif char == " " and depth == 0:
            spaces.append(index + 1)
            before, after = body[index - 1 : index], body[index + 1 : index + 2]
            if before in (",", ";") or (not parenthesized and (before in (":", ")") or after == "(")):
                clauses.append(index + 1)
        index += 1
    return (newlines, clauses, spaces) if depth == 0 else None


def _fewest(body: str, points: Sequence[int], room: int) -> int | None:
    """How few parts of at most ``room`` each ``body`` cut at ``points`` makes (the furthest
    point that fits each time); None when a part cannot fit."""
    count = start = 0
    while len(body) - start > room:
        fitting = [point for point in points if start < point <= start + room and point < len(body)]
        if not fitting:
            return None
        count, start = count + 1, fitting[-1]
    return count + 1


def _parts(body: str, points: Sequence[int], room: int) -> list[str] | None:
    """``body`` cut at some of ``points`` into as few parts of at most ``room`` each as can be,
    cut where the longest part is shortest (then where the parts are most even): the furthest
    point each time left webtest 3.0.7's ``"field {self.name!r}"`` and ``"given)"`` alone, which
    a reviewer sent back; None when a part cannot fit."""
    fewest = _fewest(body, points, room)
    if fewest is None:
        return None
    cuts = [0, *sorted({point for point in points if 0 < point < len(body)}), len(body)]
    # (cut, parts so far): the longest part, the sum of the parts' squares, the cut before
    best: dict[tuple[int, int], tuple[int, int, int]] = {(0, 0): (0, 0, 0)}
    for count in range(1, fewest + 1):
        for end in range(1, len(cuts)):
            ways = [
                (max(best[start, count - 1][0], length), best[start, count - 1][1] + length * length, start)
                for start in range(end)
                if (start, count - 1) in best and (length := cuts[end] - cuts[start]) <= room
            ]
            if ways:
                best[end, count] = min(ways)
    parts, end = [], len(cuts) - 1
    for count in range(fewest, 0, -1):
        start = best[end, count][2]
        parts.append(body[cuts[start] : cuts[end]])
        end = start
    return parts[::-1]


def _split_body(body: str, found: tuple[list[int], list[int], list[int]], room: int) -> list[str] | None:
    """``body`` in parts of at most ``room`` each, cut at the points :func:`_breaks` ``found``:
    after its ``\\n`` escapes where those are enough, else after the end of a clause too, else
    after a space not just before a replacement field, else after any space."""
    newlines, clauses, spaces = found
    words = [point for point in spaces if not _field_at(body, point)]
    parts = _parts(body, newlines, room) if newlines else None
    parts = parts or (_parts(body, sorted({*newlines, *clauses}), room) if clauses else None)
    parts = parts or _parts(body, sorted({*newlines, *words}), room)
    return parts or _parts(body, sorted({*newlines, *spaces}), room)


def _field_at(body: str, point: int) -> bool:
    """Whether a replacement field starts at ``point`` of ``body``: a part cut there would
    leave the word before it (``at``, ``chosen by``) apart from its value."""
    return body[point : point + 1] == "{" and body[point : point + 2] != "{{"


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
    parts = _split_body(body, found, width - len(indent) - len(prefix) - 2 - len(comma))
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


_ONE_LITERAL = re.compile(r"^(?P<prefix>[fF]?)(?P<quote>[\"'])(?P<body>.*)(?P=quote)$")
"""A plain or formatted single-quoted literal and nothing else."""

_AFTER_LITERAL = re.compile(r"^(?:[)\]},]|$)")
"""What may follow a string the reflow moves: the end of its line, a closing bracket or a comma."""


def _strings(tree: ast.Module) -> dict[ast.expr, ast.AST]:
    """The string expressions of ``tree`` (plain or formatted, outermost only) with their parents."""
    found: dict[ast.expr, ast.AST] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr | ast.FormattedValue):
            continue  # a formatted string's own parts are not strings of their own
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.JoinedStr) or (
                isinstance(child, ast.Constant) and isinstance(child.value, str)
            ):
                found[child] = node
    return found


def _pieces(lines: list[str], node: ast.expr) -> tuple[str, str, list[tuple[str, str, str]]] | None:
    """The text before ``node`` on its first line, the text after it on its last, and each of
    its lines' literal (prefix, quote, body), where each line holds one literal and nothing
    else; None otherwise."""
    first, last = node.lineno, node.end_lineno or node.lineno
    head = lines[first - 1].encode("utf-8")[: node.col_offset].decode("utf-8", errors="replace")
    closing = lines[last - 1].rstrip("\r\n").encode("utf-8")
    tail = closing[node.end_col_offset :].decode("utf-8", errors="replace")
    pieces = []
    for row in range(first, last + 1):
        text = lines[row - 1].rstrip("\r\n")
        start = len(head) if row == first else len(text) - len(text.lstrip(" "))
        end = len(text) - len(tail) if row == last else len(text)
        match = _ONE_LITERAL.match(text[start:end])
        if match is None:
            return None
        prefix, quote, body = match.group("prefix", "quote", "body")
        if _breaks(body, quote, bool(prefix), raw=False) is None:
            return None  # not one literal: two side by side, or a field that does not close
        pieces.append((prefix, quote, body))
    return head, tail, pieces


def _reflowed(lines: list[str], node: ast.expr, parent: ast.AST, width: int) -> tuple[list[str], int] | None:
    """The lines of the string ``node`` (one literal a line, inside brackets or the whole value
    of ``parent``, an assignment or ``return``) written again as literals of at most ``width``
    columns, each under the first (see :func:`reflow_strings`), and the last line (from 1)
    they replace; None where it is not such a string, or cannot be written so."""
    found = _pieces(lines, node)
    if found is None:
        return None
    head, tail, pieces = found
    last = node.end_lineno or node.lineno
    if len({quote for _, quote, _ in pieces}) != 1 or not _AFTER_LITERAL.match(tail):
        return None
    if isinstance(parent, _VALUED) and parent.value is node and not tail and head.strip():
        head, tail = head + "(", ")"  # the value in parentheses, to continue inside them
    closers = lines[last].strip() if last < len(lines) else ""
    if head.strip() and not tail and closers and not closers.strip(")]}"):
        tail, last = closers, last + 1  # brackets left alone on the next line close after it
    if head.strip() and not head.endswith(("(", "[", "{")):
        return None  # continuations align under a bracket's first element, never mid-list
    indent = head if not head.strip() else " " * len(head)
    if "\t" in indent:
        return None
    prefix = next((prefix for prefix, _, _ in pieces if prefix), "")
    quote = pieces[0][1]
    body = "".join(
        text if one or not prefix else text.replace("{", "{{").replace("}", "}}") for one, _, text in pieces
    )
    found_breaks = _breaks(body, quote, bool(prefix), raw=False)
    room = width - len(indent) - len(prefix) - 2 - len(tail)
    parts = _split_body(body, found_breaks, room) if found_breaks is not None else None
    if parts is None:
        return None
    literals = [_literal(prefix, quote, part) for part in parts]
    try:
        joined = syntax.parse("(" + " ".join(literals) + ")", mode="eval")
    except SyntaxError:
        return None
    if ast.dump(joined.body) != ast.dump(node):
        return None
    ending = lines[last - 1][len(lines[last - 1].rstrip("\r\n")) :]
    written = [f"{indent}{literal}" for literal in literals]
    written[0] = head + written[0][len(indent) :]
    written[-1] += tail
    return [line + ending for line in written], last


def reflow_strings(lines: list[str], first: int, last: int, width: int, before: str) -> list[str]:
    """``lines`` with each string that a line of ``[first, last)`` longer than ``width`` holds
    written again in literals that fit, where the string is one a fix wrote (its text is not in
    ``before``, the file before the fix) and stands inside brackets, one literal a line. Each
    literal goes under the first, as code that aligns its continuations under a bracket writes
    them (pyasn1 0.6.0's ``LOG('calling decoder %s on Python type %s '`` over ``'<%s>' %
    (...))``, whose f-string ran to 102 columns)::

        LOG(f'calling decoder {type(valueDecoder).__name__} on '
            f'Python type {type(pyObject).__name__} <{pyObject!r}>')

    A literal alone on its line keeps its indent. The lines as they were where any such line is
    not in such a string, or cannot be fitted."""
    text = "".join(lines)
    try:
        strings = _strings(syntax.parse(text))
    except (SyntaxError, ValueError):
        return lines
    result, done = list(lines), set()
    for row in range(last, first, -1):  # from the end: the rows above keep their numbers
        if len(lines[row - 1].rstrip("\r\n")) <= width:
            continue
        holding = [node for node in strings if node.lineno <= row <= (node.end_lineno or node.lineno)]
        node = max(holding, key=lambda one: (one.end_lineno or one.lineno) - one.lineno, default=None)
        if node is not None and id(node) in done:
            continue
        segment = ast.get_source_segment(text, node) if node is not None else None
        if node is None or isinstance(strings[node], ast.Expr) or not segment or segment in before:
            return lines
        reflowed = _reflowed(lines, node, strings[node], width)
        if reflowed is None:
            return lines
        written, end = reflowed
        result[node.lineno - 1 : end] = written
        done.add(id(node))
    return result
