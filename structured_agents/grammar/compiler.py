"""Compile grammar artifacts with XGrammar, cached on the artifact's text, within a budget.

XGrammar is imported lazily here (it imports torch, about 2 s), so building grammars and
importing the package stay fast; only engines that decode locally pay for it.

A compile cannot be interrupted once XGrammar runs it, and its time grows with the grammar
in ways its size does not tell (a chain of rules with character classes: 1.4 s at 400 rules
with the Gemma 3 vocabulary on 2 cores; a client of ``sa serve`` held a compile thread for
minutes with 3,500 rules of another shape). Every grammar is parsed first (milliseconds) and
refused with a :class:`GrammarError` when its normalized form is over :data:`BUDGET`, a
bound on size far above what tool grammars need (Qwen's for four tools: 369 rules, 629
classes; the lint bundle's: 37 rules); where a client's grammars are compiled (``sa serve``),
an :class:`~structured_agents.grammar.isolated.IsolatedCompiler` also bounds the time, in
child processes it kills.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from structured_agents.errors import GrammarError
from structured_agents.grammar.artifacts import GrammarArtifact
from structured_agents.grammar.isolated import IsolatedCompiler
from structured_agents.grammar.messages import not_compiled

if TYPE_CHECKING:
    import xgrammar

__all__ = ["BUDGET", "GrammarBudget", "GrammarCache"]


@dataclass(frozen=True, slots=True)
class GrammarBudget:
    """How large a grammar may be, read from its normalized form (XGrammar's ``str(Grammar)``)."""

    rules: int = 4000
    classes: int = 4000
    """Character classes (``[...]``)."""
    chars: int = 512 * 1024

    def problem(self, normalized: str) -> str | None:
        """Why ``normalized`` is over the budget (None: it is within)."""
        sizes = {
            "rules": len(normalized.splitlines()),
            "character classes": normalized.count("["),
            "characters": len(normalized),
        }
        limits = {"rules": self.rules, "character classes": self.classes, "characters": self.chars}
        over = [f"{sizes[k]} {k} (at most {limits[k]})" for k in sizes if sizes[k] > limits[k]]
        return f"the grammar is too large to compile: {', '.join(over)}" if over else None


BUDGET = GrammarBudget()
"""The budget every grammar is compiled within."""


class GrammarCache:
    """An ``xgrammar.GrammarCompiler`` with an LRU of compiled grammars keyed on grammar text.

    Thread-safe: engines compile off their decoding loop from worker threads.
    """

    def __init__(
        self,
        tokenizer_info: xgrammar.TokenizerInfo | Callable[[], xgrammar.TokenizerInfo],
        *,
        max_entries: int = 256,
        budget: GrammarBudget = BUDGET,
        isolation: IsolatedCompiler | None = None,
    ) -> None:
        """``tokenizer_info``: the vocabulary's, or what builds it the first time a grammar is
        compiled here (an engine's start then does not pay for it: 0.4 s for Gemma 3's
        262k tokens, which a run without grammars never needs); ``isolation``: compile in its
        child processes, within its time budget (None: here)."""
        if max_entries < 1:
            raise GrammarError(f"GrammarCache.max_entries must be >= 1, got {max_entries}")
        self._info = tokenizer_info
        self._compiler: xgrammar.GrammarCompiler | None = None
        self._compiler_lock = threading.Lock()
        self._entries: OrderedDict[str, xgrammar.CompiledGrammar] = OrderedDict()
        self._max_entries = max_entries
        self._budget = budget
        self._isolation = isolation
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
            grammar = artifact.parse()
        except Exception as exc:  # XGrammar raises RuntimeError/ValueError with its parser message
            raise not_compiled(exc, artifact.kind) from exc
        problem = self._budget.problem(str(grammar))
        if problem is not None:
            raise GrammarError(f"{problem}; simplify the {artifact.kind} grammar")
        if self._isolation is not None:
            compiled = self._isolation.compile(grammar)
        else:
            compiled = self._compile_here(grammar, artifact)
        with self._lock:
            self.misses += 1
            self._entries[key] = compiled
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
        return compiled

    def _local_compiler(self) -> xgrammar.GrammarCompiler:
        """XGrammar's compiler over the tokenizer info, built on first use."""
        import xgrammar

        with self._compiler_lock:
            if self._compiler is None:
                info = self._info if isinstance(self._info, xgrammar.TokenizerInfo) else self._info()
                self._compiler = xgrammar.GrammarCompiler(info, cache_enabled=False)
            return self._compiler

    def _compile_here(self, grammar: xgrammar.Grammar, artifact: GrammarArtifact) -> xgrammar.CompiledGrammar:
        compiler = self._local_compiler()
        try:
            return compiler.compile_grammar(grammar)
        except Exception as exc:
            raise not_compiled(exc, artifact.kind) from exc
