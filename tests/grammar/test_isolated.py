"""Grammars compiled in child processes: a compile that runs past its budget is refused, its
child killed and replaced, and the next grammar compiles (real XGrammar, a small vocabulary)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import xgrammar

from structured_agents.errors import GrammarError
from structured_agents.grammar.artifacts import EBNFGrammar
from structured_agents.grammar.compiler import GrammarBudget, GrammarCache
from structured_agents.grammar.isolated import IsolatedCompiler

INFO = xgrammar.TokenizerInfo(["a", "b", "ab", "yes", "no", "</s>"], stop_token_ids=[5])
SLOW = "\n".join(
    ["root ::= r0"] + [f"r{i} ::= [a-z] r{i + 1} | [0-9]" for i in range(30000)] + ['r30000 ::= "z"']
)
"""A grammar XGrammar takes hundreds of milliseconds to compile, even over six tokens."""


@pytest.fixture(scope="module")
def isolated() -> Iterator[IsolatedCompiler]:
    compiler = IsolatedCompiler(INFO, timeout_s=0.1, processes=1)
    yield compiler
    compiler.close()


def test_a_grammar_compiles_in_a_child_and_matches_as_compiled_here(isolated: IsolatedCompiler) -> None:
    cache = GrammarCache(INFO, isolation=isolated)
    compiled = cache.compile(EBNFGrammar('root ::= "yes" | "no"'))
    matcher = xgrammar.GrammarMatcher(compiled)
    assert matcher.accept_token(3) and matcher.accept_token(5) and matcher.is_terminated()
    assert cache.compile(EBNFGrammar('root ::= "yes" | "no"')) is compiled and cache.hits == 1


def test_a_compile_past_the_budget_is_refused_and_the_next_one_goes(isolated: IsolatedCompiler) -> None:
    cache = GrammarCache(
        INFO, isolation=isolated, budget=GrammarBudget(rules=10**6, classes=10**6, chars=10**8)
    )
    started = time.monotonic()
    with pytest.raises(GrammarError, match=r"did not compile within 0\.1 s"):
        cache.compile(EBNFGrammar(SLOW))
    assert time.monotonic() - started < 5
    with pytest.raises(GrammarError, match="could not compile"):  # a parse error, from this process
        cache.compile(EBNFGrammar("root ::= ("))
    compiled = cache.compile(EBNFGrammar('root ::= "ab"'))  # a fresh child took the killed one's place
    assert xgrammar.GrammarMatcher(compiled).accept_token(2)


def test_a_grammar_over_the_size_budget_never_reaches_a_compiler() -> None:
    cache = GrammarCache(INFO, budget=GrammarBudget(rules=100))
    with pytest.raises(GrammarError, match="too large to compile: 30002 rules"):
        cache.compile(EBNFGrammar(SLOW))
