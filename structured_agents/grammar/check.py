"""Does a grammar allow a text? The check scripted engines and model tests share.

A model decoding under a grammar can only write texts the grammar allows: a whole output
(the matcher terminates) when it stopped on its own, or a prefix of one when the token limit
cut it off. :func:`grammar_problem` says which of those ``text`` is not, or None when it is.
Grammars compile against an empty vocabulary (character level), cached on their text.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from structured_agents.grammar.artifacts import GrammarArtifact

if TYPE_CHECKING:
    from structured_agents.grammar.compiler import GrammarCache

__all__ = ["grammar_problem"]

_cache: GrammarCache | None = None
_lock = threading.Lock()


def _grammars() -> GrammarCache:
    global _cache
    with _lock:
        if _cache is None:
            import xgrammar

            from structured_agents.grammar.compiler import GrammarCache

            _cache = GrammarCache(xgrammar.TokenizerInfo([]))
        return _cache


def grammar_problem(grammar: GrammarArtifact, text: str, *, complete: bool) -> str | None:
    """Why ``grammar`` does not allow ``text`` (a whole output when ``complete``, else a prefix
    of one), or None when it does. Raises ``GrammarError`` when the grammar does not compile."""
    import xgrammar

    compiled = _grammars().compile(grammar)
    matcher = xgrammar.GrammarMatcher(compiled, terminate_without_stop_token=True)
    if matcher.accept_string(text) and (matcher.is_terminated() or not complete):
        return None
    matcher = xgrammar.GrammarMatcher(compiled, terminate_without_stop_token=True)
    offset = next((i for i, char in enumerate(text) if not matcher.accept_string(char)), None)
    if offset is None:
        return "ends before the grammar allows"
    return f"rejected at character {offset} ({text[offset : offset + 20]!r})"
