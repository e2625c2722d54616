"""The EBNF of a call in the docstring form (:mod:`.form`).

Each text is one line of one sentence: no line break, no ``"`` (so the docstring cannot close
early), no backslash, and a period only at its end, so a model that has said its sentence ends
the line instead of running on (or writing ``file.py.c.h.py...``); a string property's
``pattern`` is enforced where it is of the forms :mod:`structured_agents.grammar.patterns` reads
(its opening words and excluded characters), else left to the tool. Every line holds at least
one character, and none opens on a space.
Required sections and keys must be written; optional ones may be left out.
"""

from __future__ import annotations

from structured_agents.grammar.artifacts import EBNFGrammar
from structured_agents.grammar.ebnf import RuleSet, char_class, ebnf_literal
from structured_agents.grammar.patterns import none_of
from structured_agents.plugins.python_docstring.form import CLOSE, ENTRY, INDENT, DocstringForm, Section
from structured_agents.types import JsonDict

__all__ = ["build_docstring_grammar"]

_NEVER = '\n\r"\\'
"""Characters no line holds."""
_NOT_FIRST = " \t"
"""Characters no line opens on."""


def _line(rules: RuleSet, schema: JsonDict) -> str:
    """The rule of one line of text for a string property ``schema``."""
    found = none_of(schema.get("pattern"))
    opening = found.opening if found is not None else ""
    rest = _NEVER + (found.rest if found is not None else "")
    first = rest + _NOT_FIRST + (found.first or "" if found is not None else "")
    body = f'{char_class(first + ".", negated=True)} {char_class(rest + ".", negated=True)}* "."?'
    if opening:
        body = f"{ebnf_literal(opening)} {body}"
    return rules.memo(("line", opening, first, rest), "line", lambda: body)


def _section(rules: RuleSet, section: Section) -> str:
    heading = ebnf_literal(f"\n\n{INDENT}{section.title}:")
    if section.free:
        key = rules.memo("key", "key", lambda: "[A-Za-z_*] [A-Za-z0-9_*]*")
        entry = f'{ebnf_literal(chr(10) + ENTRY)} {key} ": " {_line(rules, section.entry_schema(None))}'
        entries = f"({entry})+"
    elif not section.keys:
        entries = f"{ebnf_literal(chr(10) + ENTRY)} {_line(rules, section.schema)}"
    else:
        parts = []
        for key in section.keys:
            entry = f"{ebnf_literal(f'{chr(10)}{ENTRY}{key}: ')} {_line(rules, section.entry_schema(key))}"
            parts.append(entry if section.key_required(key) else f"({entry})?")
        entries = " ".join(parts)
    body = f"{heading} {entries}"
    return rules.define(section.name, body if section.required else f"({body})?")


def build_docstring_grammar(form: DocstringForm) -> EBNFGrammar:
    """The grammar of the text that follows an opened docstring, up to and with its close."""
    rules = RuleSet()
    summary = rules.define("summary", _line(rules, form.summary_schema))
    close = ebnf_literal(CLOSE)
    if not form.sections:
        return EBNFGrammar(rules.render(f"{summary} {close}"))
    sections = " ".join(_section(rules, section) for section in form.sections)
    closed = f"{sections} {ebnf_literal(chr(10) + INDENT + CLOSE)}"
    if any(section.required for section in form.sections):
        return EBNFGrammar(rules.render(f"{summary} {closed}"))
    return EBNFGrammar(rules.render(f"{summary} ({close} | {closed})"))
