"""EBNF helpers, checked against the real XGrammar parser and matcher."""

from __future__ import annotations

import json

import pytest
import xgrammar
from hypothesis import given, settings
from hypothesis import strategies as st
from xgrammar.testing import _is_grammar_accept_string

from structured_agents.grammar.ebnf import (
    JSON_INTEGER,
    JSON_NUMBER,
    JSON_STRING,
    RuleSet,
    char_class,
    ebnf_literal,
    text_excluding,
)

TRICKY = ['a"b', "a\\b", "new\nline", "tab\there", "\r", "\x00\x01\x1f\x7f", "é→😀", '\\"', "", "[]^-"]


@pytest.mark.parametrize("text", TRICKY)
def test_literal_matches_exactly_its_text(text: str) -> None:
    grammar = f"root ::= {ebnf_literal(text)}"
    assert _is_grammar_accept_string(grammar, text)
    assert not _is_grammar_accept_string(grammar, text + "x")


@pytest.mark.parametrize("chars", ["]", "\\", "^", "-", "[", "a-z", '"<', "\n\t"])
def test_char_class_holds_exactly_its_characters(chars: str) -> None:
    grammar = f"root ::= {char_class(chars)}*"
    assert _is_grammar_accept_string(grammar, chars)
    assert not _is_grammar_accept_string(grammar, chars + "b")
    negated = f"root ::= {char_class(chars, negated=True)}*"
    assert _is_grammar_accept_string(negated, "b")
    for ch in chars:
        assert not _is_grammar_accept_string(negated, ch)


def test_char_class_needs_characters() -> None:
    with pytest.raises(ValueError):
        char_class("")


def _excluding_grammar(*delimiters: str) -> xgrammar.CompiledGrammar:
    rules = RuleSet()
    body = text_excluding(rules, *delimiters)
    compiler = xgrammar.GrammarCompiler(xgrammar.TokenizerInfo([]), cache_enabled=False)
    return compiler.compile_grammar(rules.render(body))


def _accepts(compiled: xgrammar.CompiledGrammar, text: str) -> bool:
    matcher = xgrammar.GrammarMatcher(compiled, terminate_without_stop_token=True)
    return bool(matcher.accept_string(text)) and bool(matcher.is_terminated())


ESCAPE_TEXT = _excluding_grammar("<escape>")
PARAMETER_TEXT = _excluding_grammar("</parameter>")
SINGLE_TEXT = _excluding_grammar("|")
MARKERS = ("<escape>", "<start_fn", "<end_fn", "</start_fn", "<e")
MARKERS_TEXT = _excluding_grammar(*MARKERS)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="<escape>x\n<<", max_size=24))
def test_text_excluding_accepts_exactly_the_texts_without_the_delimiter(text: str) -> None:
    assert _accepts(ESCAPE_TEXT, text) == ("<escape>" not in text)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="</parmet>x", max_size=30))
def test_text_excluding_works_for_other_delimiters(text: str) -> None:
    assert _accepts(PARAMETER_TEXT, text) == ("</parameter>" not in text)


@pytest.mark.parametrize(
    ("text", "accepted"),
    [("", True), ("<", True), ("<esc", True), ("<escape", True), ("a<escape>b", False), ("<<escape>", False),
     ("<escape<escape>", False), ("x<escap<e<escape>>", False), ("}{,\"\n😀<e<es<esc", True)],
)  # fmt: skip
def test_text_excluding_escape_examples(text: str, accepted: bool) -> None:
    assert _accepts(ESCAPE_TEXT, text) is accepted


def test_text_excluding_single_character_delimiter() -> None:
    assert _accepts(SINGLE_TEXT, "ab\nc")
    assert not _accepts(SINGLE_TEXT, "a|b")


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="<escape>_start_fn/x<<", max_size=28))
def test_text_excluding_many_delimiters_accepts_exactly_the_texts_without_any(text: str) -> None:
    assert _accepts(MARKERS_TEXT, text) == (not any(marker in text for marker in MARKERS))


def test_text_excluding_many_delimiters_examples() -> None:
    assert _accepts(MARKERS_TEXT, "a < b, <s and </end_f or <star")
    for bad in ("x<start_fn", "</start_fn>", "<end_fn", "<ex", "<escape>"):
        assert not _accepts(MARKERS_TEXT, bad), bad


def test_text_excluding_refuses_repeating_first_character() -> None:
    with pytest.raises(ValueError):
        text_excluding(RuleSet(), "aab")
    with pytest.raises(ValueError):
        text_excluding(RuleSet(), "")
    with pytest.raises(ValueError, match="must start with '<'"):
        text_excluding(RuleSet(), "<a", ">b")


def test_text_excluding_is_memoised_per_delimiter() -> None:
    rules = RuleSet()
    assert text_excluding(rules, "<escape>") == text_excluding(rules, "<escape>")
    assert text_excluding(rules, "<escape>") != text_excluding(rules, "</x>")


def test_ruleset_names_are_fresh_and_valid() -> None:
    rules = RuleSet()
    names = [rules.define(hint, '"a"') for hint in ["root", "root", "9lives", "a-b.c", "", "a-b.c"]]
    assert len(set(names)) == len(names)
    assert "root" not in names
    for name in names:
        assert name.replace("_", "a").isalnum() and not name[0].isdigit()
    assert _is_grammar_accept_string(rules.render(" ".join(names)), "a" * len(names))


def test_ruleset_memo_allows_recursion() -> None:
    rules = RuleSet()

    def nested() -> str:
        return rules.memo("nested", "nested", lambda: f'"(" {nested()}? ")"')

    grammar = rules.render(nested())
    assert _is_grammar_accept_string(grammar, "((()))")
    assert not _is_grammar_accept_string(grammar, "(()")


def test_ruleset_render_refuses_undefined_reserved_rules() -> None:
    rules = RuleSet()
    rules.fresh("dangling")
    with pytest.raises(ValueError, match="dangling"):
        rules.render('"x"')


json_floats = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=100, deadline=None)
@given(st.integers(), json_floats, st.text())
def test_json_pieces_accept_what_json_dumps_writes(integer: int, number: float, text: str) -> None:
    assert _is_grammar_accept_string(f"root ::= {JSON_INTEGER}", json.dumps(integer))
    assert _is_grammar_accept_string(f"root ::= {JSON_NUMBER}", json.dumps(number))
    assert _is_grammar_accept_string(f"root ::= {JSON_NUMBER}", json.dumps(integer))
    assert _is_grammar_accept_string(f"root ::= {JSON_STRING}", json.dumps(text, ensure_ascii=False))
    assert _is_grammar_accept_string(f"root ::= {JSON_STRING}", json.dumps(text))


@pytest.mark.parametrize(
    ("piece", "text"),
    [(JSON_INTEGER, "01"), (JSON_INTEGER, "1.0"), (JSON_INTEGER, "+1"), (JSON_NUMBER, "1."),
     (JSON_NUMBER, ".5"), (JSON_NUMBER, "NaN"), (JSON_STRING, '"a'), (JSON_STRING, '"\n"'),
     (JSON_STRING, '"\\x"')],
)  # fmt: skip
def test_json_pieces_reject_invalid_json(piece: str, text: str) -> None:
    assert not _is_grammar_accept_string(f"root ::= {piece}", text)
