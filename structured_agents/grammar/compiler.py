"""Compile grammar artifacts with XGrammar, cached on the artifact's text.

XGrammar is imported lazily here (it imports torch, about 2 s), so building grammars and
importing the package stay fast; only engines that decode locally pay for it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from structured_agents.errors import GrammarError
from structured_agents.grammar.artifacts import GrammarArtifact

if TYPE_CHECKING:
    import xgrammar

__all__ = ["GrammarCache"]


class GrammarCache:
    """An ``xgrammar.GrammarCompiler`` with an LRU of compiled grammars keyed on grammar text.

    Thread-safe: engines compile off their decoding loop from worker threads.
    """

    def __init__(self, tokenizer_info: xgrammar.TokenizerInfo, *, max_entries: int = 256) -> None:
        import xgrammar

        if max_entries < 1:
            raise GrammarError(f"GrammarCache.max_entries must be >= 1, got {max_entries}")
        self._compiler = xgrammar.GrammarCompiler(tokenizer_info, cache_enabled=False)
        self._entries: OrderedDict[str, xgrammar.CompiledGrammar] = OrderedDict()
        self._max_entries = max_entries
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def compile(self, artifact: GrammarArtifact) -> xgrammar.CompiledGrammar:
        """The compiled grammar of ``artifact``, compiling it on first use."""
        key = artifact.cache_key
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return found
        try:
            compiled = artifact.compile(self._compiler)
        except Exception as exc:  # XGrammar raises RuntimeError/ValueError with its parser message
            raise GrammarError(f"XGrammar could not compile the {artifact.kind} grammar: {exc}") from exc
        with self._lock:
            self.misses += 1
            self._entries[key] = compiled
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
        return compiled
