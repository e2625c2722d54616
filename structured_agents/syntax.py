"""Python source to an AST, one thread at a time: every ``ast.parse`` of the package goes here.

CPython 3.11 keeps the counter its AST constructor checks its recursion against in state that
threads share. Two threads turning parse trees into ``ast`` objects at once can make one of
them fail with ``SystemError: AST constructor recursion depth mismatch`` (python/cpython#106905;
seen here on 3.11.7 when the embedded runner finished several docstring runs at once, each in
its own thread). Parsing takes milliseconds, so the package parses under one lock.
"""

from __future__ import annotations

import ast
import threading
from typing import Literal, overload

__all__ = ["parse"]

_LOCK = threading.Lock()


@overload
def parse(source: str, filename: str = ..., mode: Literal["exec"] = ...) -> ast.Module: ...


@overload
def parse(source: str, filename: str = ..., *, mode: Literal["eval"]) -> ast.Expression: ...


def parse(source: str, filename: str = "<unknown>", mode: Literal["exec", "eval"] = "exec") -> ast.AST:
    """``ast.parse(source, filename, mode)``, while no other thread of the package parses."""
    with _LOCK:
        return ast.parse(source, filename, mode)
