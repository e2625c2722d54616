"""XGrammar's error messages as a client may read them.

XGrammar prefixes a message with the time and the C++ source line that raised it
(``[21:20:07] /project/cpp/regex_converter.cc:83: Regex parsing error ...``): the library's
build paths, which a server should not hand a caller (a probe of ``sa serve`` read them in its
400s). :func:`library_message` keeps the message and drops those prefixes, and
:func:`not_compiled` is the one error a failed parse or compile raises.
"""

from __future__ import annotations

import re

from structured_agents.errors import GrammarError

__all__ = ["library_message", "not_compiled"]

_SOURCE_LINE = re.compile(r"\[\d{2}:\d{2}:\d{2}\] [^\s:]+\.(?:cc|cpp|h|hpp):\d+: ")


def library_message(error: object) -> str:
    """``error``'s text without XGrammar's time and source-line prefixes."""
    return _SOURCE_LINE.sub("", str(error)).strip()


def not_compiled(error: object, kind: str | None = None) -> GrammarError:
    """The error for a grammar (of ``kind``, where known) XGrammar could not parse or compile."""
    grammar = f"the {kind} grammar" if kind else "the grammar"
    return GrammarError(f"XGrammar could not compile {grammar}: {library_message(error)}")
