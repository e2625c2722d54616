"""Helpers to write XGrammar EBNF: literals, character classes, JSON pieces and rule sets.

Plugins build their grammars from these pieces instead of string templates, so every tool
name, key and enum value that reaches a grammar is escaped in one place. Nothing here uses
bounded repetition (``{m,n}``): XGrammar compiles it slowly (over a second for one rule).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable

__all__ = [
    "JSON_INTEGER",
    "JSON_NUMBER",
    "JSON_STRING",
    "RuleSet",
    "char_class",
    "ebnf_literal",
    "text_excluding",
]

JSON_INTEGER = '"-"? ("0" | [1-9] [0-9]*)'
"""A JSON integer (no leading zeros, no fraction or exponent)."""

JSON_NUMBER = JSON_INTEGER + ' ("." [0-9]+)? ([eE] [+\\-]? [0-9]+)?'
"""A JSON number, as ``json.dumps`` writes ints and finite floats."""

_HEX = "[0-9a-fA-F]"
JSON_STRING = f'"\\"" ([^"\\\\\\0-\\x1f] | "\\\\" (["\\\\/bfnrt] | "u" {_HEX} {_HEX} {_HEX} {_HEX}))* "\\""'
"""A JSON string with its quotes: any character but ``"``, ``\\`` and controls, or an escape."""

_LITERAL_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_CLASS_SPECIAL = frozenset("\\]^-[")


def _escape_char(ch: str, special: frozenset[str] | dict[str, str]) -> str:
    if isinstance(special, dict) and ch in special:
        return special[ch]
    if ch in special:
        return "\\" + ch
    if ord(ch) < 0x20 or ord(ch) == 0x7F:
        return f"\\u{ord(ch):04x}"
    return ch


def ebnf_literal(text: str) -> str:
    """``text`` as a quoted EBNF string literal (backslashes, quotes and controls escaped)."""
    return '"' + "".join(_escape_char(ch, _LITERAL_ESCAPES) for ch in text) + '"'


def char_class(chars: str, *, negated: bool = False) -> str:
    """A character class of exactly ``chars`` (``[...]``, or ``[^...]`` when ``negated``)."""
    if not chars:
        raise ValueError("char_class needs at least one character")
    body = "".join(_escape_char(ch, _CLASS_SPECIAL) for ch in dict.fromkeys(chars))
    return f"[{'^' if negated else ''}{body}]"


class RuleSet:
    """An ordered set of named EBNF rules with fresh names and memoised definitions.

    ``memo`` reserves a rule's name before building its body, so recursive definitions
    (a JSON-schema ``$ref`` to itself, nested generic values) refer to the rule by name.
    """

    _NAME_CHARS = re.compile(r"[^A-Za-z0-9_]+")

    def __init__(self, prefix: str = "") -> None:
        self._prefix = prefix
        self._rules: dict[str, str | None] = {}
        self._memo: dict[Hashable, str] = {}

    def fresh(self, hint: str) -> str:
        """A rule name not used yet, built from ``hint`` (never ``root``)."""
        base = self._prefix + (self._NAME_CHARS.sub("_", hint).strip("_") or "r")
        if base[0].isdigit():
            base = "r" + base
        name, n = base, 1
        while name in self._rules or name == "root":
            n += 1
            name = f"{base}{n}"
        self._rules[name] = None
        return name

    def define(self, hint: str, body: str) -> str:
        """Add ``name ::= body`` under a fresh name built from ``hint``; return the name."""
        name = self.fresh(hint)
        self._rules[name] = body
        return name

    def fill(self, name: str, body: str) -> None:
        """Give a name reserved with ``fresh`` its body (for mutually recursive rules)."""
        if self._rules.get(name, "") is not None:
            raise ValueError(f"EBNF rule {name!r} was not reserved or is already defined")
        self._rules[name] = body

    def memo(self, key: Hashable, hint: str, build: Callable[[], str]) -> str:
        """The rule for ``key``, defining it with ``build()`` the first time it is asked for."""
        found = self._memo.get(key)
        if found is not None:
            return found
        name = self.fresh(hint)
        self._memo[key] = name
        self._rules[name] = build()
        return name

    def render(self, root: str) -> str:
        """The whole grammar: ``root ::= root`` first, then every rule in definition order."""
        missing = [name for name, body in self._rules.items() if body is None]
        if missing:
            raise ValueError(f"EBNF rules reserved but never defined: {missing}")
        lines = [f"root ::= {root}"]
        lines += [f"{name} ::= {body}" for name, body in self._rules.items()]
        return "\n".join(lines) + "\n"


def text_excluding(rules: RuleSet, *delimiters: str) -> str:
    """A rule matching any text (possibly empty) that contains none of ``delimiters``.

    Written as a right-linear automaton over the delimiters' prefixes (state ``p``: the text
    ends with ``p``, the start of some delimiter), which XGrammar turns into a cheap per-token
    mask: the earlier form with nested repetitions cost about 100 ms per token on a 262k
    vocabulary.

    Every delimiter starts with the same character and has it nowhere else (``<escape>``,
    ``<start_function``...): the text may then end with a partial delimiter (``<esc`` before
    ``<escape>``), since ``text + delimiter`` can hold a delimiter only where the appended one
    starts, so the first occurrence closes the text. Delimiters that break the rule (``aab``,
    or ``<a`` with ``>b``) are refused: they need a full automaton.
    """
    if not delimiters or not all(delimiters):
        raise ValueError("text_excluding needs one or more non-empty delimiters")
    head = delimiters[0][0]
    for delimiter in delimiters:
        if delimiter[0] != head or head in delimiter[1:]:
            raise ValueError(
                f"text_excluding: {delimiter!r} must start with {head!r} and have it nowhere else"
            )
    complete = set(delimiters)
    prefixes = sorted(
        {d[:end] for d in delimiters for end in range(len(d))} - complete, key=lambda p: (len(p), p)
    )
    reachable = [p for p in prefixes if not any(p.startswith(d) for d in complete)]

    def build() -> str:
        states = {prefix: rules.fresh("text_state") for prefix in reachable}
        for prefix, name in states.items():
            nexts = sorted(
                {d[len(prefix)] for d in delimiters if d.startswith(prefix) and len(d) > len(prefix)}
            )
            options = ['""']
            options += [f"{ebnf_literal(c)} {states[prefix + c]}" for c in nexts if prefix + c in states]
            if prefix and head in states:  # a delimiter starts again
                options.append(f"{ebnf_literal(head)} {states[head]}")
            others = char_class("".join(dict.fromkeys([*nexts, head])), negated=True)
            options.append(f"{others} {states['']}")
            rules.fill(name, " | ".join(options))
        return states[""]

    return rules.memo(("text_excluding", *delimiters), "text", build)
