"""How deep a parsed JSON document nests, found without recursion: a caller's deeply nested
body must not exhaust the stack of the code that checks it (nor of what would walk it later)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["too_deep", "walk"]


def walk(data: Any) -> Iterator[tuple[str, Any, int]]:
    """Every value of ``data`` with its dotted path and depth (the body is ``(body)`` at 0; a
    dict's keys and values are one level deeper), depth first, iteratively."""
    stack: list[tuple[str, Any, int]] = [("(body)", data, 0)]
    while stack:
        where, item, depth = stack.pop()
        yield where, item, depth
        if isinstance(item, dict):
            for key, value in item.items():
                inner = f"{where}.{str(key)[:100]}"
                stack += [(inner, key, depth + 1), (inner, value, depth + 1)]
        elif isinstance(item, list):
            stack += [(f"{where}.{number}", value, depth + 1) for number, value in enumerate(item)]


def too_deep(where: str, limit: int) -> str:
    """The problem of a value at ``where`` past ``limit`` levels (the field, not the deep path)."""
    head = ".".join(where.split(".")[:4])
    return f"{head}...: nested deeper than {limit} levels"
