"""The grammar cache builds XGrammar's compiler when it first compiles a grammar, not when it is
made: an engine's start does not pay for the tokenizer info (real XGrammar, a small vocabulary)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import xgrammar

from structured_agents.errors import GrammarError
from structured_agents.grammar.artifacts import EBNFGrammar
from structured_agents.grammar.compiler import GrammarCache

INFO = xgrammar.TokenizerInfo(["a", "b", "ab", "yes", "no", "</s>"], stop_token_ids=[5])


def test_the_tokenizer_info_is_built_at_the_first_compile_and_once() -> None:
    built: list[str] = []
    started = threading.Event()

    def info() -> xgrammar.TokenizerInfo:
        built.append(threading.current_thread().name)
        started.wait(0.2)  # slow enough for the other threads to arrive meanwhile
        return INFO

    cache = GrammarCache(info)
    with pytest.raises(GrammarError, match="could not compile"):  # a parse error needs no compiler
        cache.compile(EBNFGrammar("root ::= ("))
    assert built == []
    texts = ['root ::= "yes"', 'root ::= "no"', 'root ::= "ab"', 'root ::= "a" "b"']
    with ThreadPoolExecutor(4) as pool:
        compiled = list(pool.map(lambda text: cache.compile(EBNFGrammar(text)), texts))
    assert len(built) == 1 and len(cache) == 4
    matcher = xgrammar.GrammarMatcher(compiled[0])
    assert matcher.accept_token(3) and matcher.accept_token(5) and matcher.is_terminated()


def test_a_tokenizer_info_given_as_it_is_serves_as_before() -> None:
    compiled = GrammarCache(INFO).compile(EBNFGrammar('root ::= "no"'))
    assert xgrammar.GrammarMatcher(compiled).accept_token(4)
