"""FunctionGemma's native call format: markers, value rendering and a tokenizer-free parser.

A call is ``<start_function_call>call:NAME{key:VALUE,...}<end_function_call>``. Values are
``<escape>``-delimited strings (anything but the sequence ``<escape>``), JSON numbers,
``true``/``false``/``null``, nested ``{key:VALUE,...}`` objects and ``[VALUE,...]`` arrays;
keys are bare. Keys are written sorted case-insensitively, as FunctionGemma's chat template
(Jinja ``dictsort``) lists them; the grammars expect the same order.

The ``json`` argument format writes the arguments as a JSON object instead
(``call:NAME{"key":"value"}``); the parser reads both, and is lenient where the grammar is
not (whitespace, bare words as strings, a missing end marker at the very end).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from structured_agents.errors import ParseError
from structured_agents.types import JsonDict, ToolCall

__all__ = [
    "END_CALL",
    "END_DECLARATION",
    "END_RESPONSE",
    "ESCAPE",
    "ESCAPE_REPLACEMENT",
    "MARKERS_IN_STRINGS",
    "START_CALL",
    "START_DECLARATION",
    "START_RESPONSE",
    "NativeCall",
    "RenderStyle",
    "escape_string",
    "parse_native_calls",
    "render_call",
    "render_value",
    "sorted_keys",
]

START_CALL = "<start_function_call>"
END_CALL = "<end_function_call>"
START_RESPONSE = "<start_function_response>"
END_RESPONSE = "<end_function_response>"
START_DECLARATION = "<start_function_declaration>"
END_DECLARATION = "<end_function_declaration>"
ESCAPE = "<escape>"
ESCAPE_REPLACEMENT = "&lt;escape&gt;"
"""What ``<escape>`` inside a string value becomes when written (the format cannot carry it)."""
MARKERS_IN_STRINGS = ("<start", "<end", "</")
"""Starts of the format's markers and their near variants that the grammar keeps out of
``<escape>`` strings, so a value always closes and its call with it: a small model writes them
into values (a docstring that goes on with ``</start_function_call><start_function_response>``;
the README's ``get_weather`` call, whose city went on with ``}</escape>\n<end-function_call>
call:get_weather{...`` until the token limit, no call returned). Stems rather than the whole
markers, so the hyphenated and closing variants are caught too, and because each character of
an excluded text is a grammar state (XGrammar compiled a FunctionGemma grammar in 0.6 s with
stems against 1.6 s with whole markers; Gemma 3 vocabulary, 2 cores). A value cannot hold
``</`` or a word starting ``<start``/``<end`` at all."""

RenderStyle = Literal["escaped_strings", "json"]
"""``escaped_strings``: the native format; ``json``: arguments as a JSON object."""
NativeCall = tuple[str, JsonDict]
"""A parsed call: the tool name and its (untyped) arguments."""

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_INTEGER = re.compile(r"-?[0-9]+")
_OPEN_BRACE = re.compile(r"\s*\{")
_BARE_END = frozenset(",}]")
_JSON_DECODER = json.JSONDecoder()


def sorted_keys(keys: Iterable[str]) -> list[str]:
    """``keys`` in FunctionGemma's order: case-insensitive, ties broken by the exact key."""
    return sorted(keys, key=lambda k: (k.lower(), k))


def escape_string(text: str) -> str:
    """``text`` as an ``<escape>``-delimited string (an inner ``<escape>`` is neutralised)."""
    return ESCAPE + text.replace(ESCAPE, ESCAPE_REPLACEMENT) + ESCAPE


def render_value(value: Any, style: RenderStyle = "escaped_strings") -> str:
    """One value in the native format (``escaped_strings``) or as compact JSON (``json``).

    Never raises: non-finite floats and values JSON cannot hold are written as strings.
    """
    if isinstance(value, str):
        return escape_string(value) if style == "escaped_strings" else json.dumps(value, ensure_ascii=False)
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else render_value(repr(value), style)
    if isinstance(value, Mapping):
        items = {str(k): v for k, v in value.items()}
        members = (f"{_render_key(k, style)}:{render_value(items[k], style)}" for k in sorted_keys(items))
        return "{" + ",".join(members) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(render_value(v, style) for v in value) + "]"
    return render_value(str(value), style)


def _render_key(key: str, style: RenderStyle) -> str:
    return key if style == "escaped_strings" else json.dumps(key, ensure_ascii=False)


def render_call(call: ToolCall, style: RenderStyle = "escaped_strings") -> str:
    """One call with its markers: ``<start_function_call>call:NAME{...}<end_function_call>``."""
    return f"{START_CALL}call:{call.name}{render_value(call.arguments, style)}{END_CALL}"


class _Reader:
    """A cursor over model output that reads native values; errors name the offset."""

    def __init__(self, text: str, pos: int) -> None:
        self.text = text
        self.pos = pos

    def error(self, message: str) -> ParseError:
        snippet = self.text[max(0, self.pos - 20) : self.pos + 20]
        return ParseError(f"FunctionGemma call: {message} at offset {self.pos} (near {snippet!r})")

    def skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self, literal: str) -> bool:
        return self.text.startswith(literal, self.pos)

    def expect(self, literal: str) -> None:
        self.skip_ws()
        if not self.peek(literal):
            raise self.error(f"expected {literal!r}")
        self.pos += len(literal)

    def value(self) -> Any:
        self.skip_ws()
        if self.peek(ESCAPE):
            return self.escaped()
        if self.peek('"'):
            return self.json_string()
        if self.peek("{"):
            self.pos += 1
            return self.members()
        if self.peek("["):
            self.pos += 1
            return self.elements()
        return self.bare()

    def escaped(self) -> str:
        start = self.pos + len(ESCAPE)
        end = self.text.find(ESCAPE, start)
        if end < 0:
            raise self.error("unterminated <escape> string")
        self.pos = end + len(ESCAPE)
        return self.text[start:end]

    def json_string(self) -> str:
        try:
            value, self.pos = _JSON_DECODER.raw_decode(self.text, self.pos)
        except json.JSONDecodeError as exc:
            raise self.error(f"bad JSON string ({exc.msg})") from exc
        return str(value)

    def bare(self) -> Any:
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in _BARE_END and not self.peek(ESCAPE):
            self.pos += 1
        token = self.text[start : self.pos].strip()
        if not token:
            self.pos = start
            raise self.error("expected a value")
        if _NUMBER.fullmatch(token):
            return int(token) if _INTEGER.fullmatch(token) else float(token)
        return {"true": True, "false": False, "null": None}.get(token, token)

    def key(self) -> str:
        self.skip_ws()
        if self.peek('"'):
            return self.json_string()
        if self.peek(ESCAPE):
            return self.escaped()
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in ":,{}[]":
            self.pos += 1
        key = self.text[start : self.pos].strip()
        if not key:
            self.pos = start
            raise self.error("expected a key")
        return key

    def members(self) -> JsonDict:
        """The members of an object whose ``{`` was read, through its ``}``."""
        out: JsonDict = {}
        self.skip_ws()
        if self.peek("}"):
            self.pos += 1
            return out
        while True:
            key = self.key()
            self.expect(":")
            out[key] = self.value()
            self.skip_ws()
            if self.peek("}"):
                self.pos += 1
                return out
            self.expect(",")

    def elements(self) -> list[Any]:
        """The elements of an array whose ``[`` was read, through its ``]``."""
        out: list[Any] = []
        self.skip_ws()
        if self.peek("]"):
            self.pos += 1
            return out
        while True:
            out.append(self.value())
            self.skip_ws()
            if self.peek("]"):
                self.pos += 1
                return out
            self.expect(",")

    def name(self, known: Sequence[str]) -> str:
        """The tool name before ``{``: the longest known name that fits, else the raw text."""
        for candidate in sorted(known, key=len, reverse=True):
            if self.peek(candidate) and _OPEN_BRACE.match(self.text, self.pos + len(candidate)):
                self.pos += len(candidate)
                return candidate
        end = self.text.find("{", self.pos)
        name = self.text[self.pos : end].strip() if end >= 0 else ""
        if not name:
            raise self.error("expected a tool name followed by '{'")
        self.pos = end
        return name


def parse_native_calls(text: str, known_names: Sequence[str] = ()) -> tuple[str, list[NativeCall]]:
    """The text outside calls and the ``(name, arguments)`` of every call in ``text``.

    Reading stops at a ``<start_function_response>`` outside calls: what follows is a
    response the model imagined (the marker is a stop string of FunctionGemma).
    """
    calls: list[NativeCall] = []
    content: list[str] = []
    pos = 0
    while True:
        start = text.find(START_CALL, pos)
        response = text.find(START_RESPONSE, pos)
        if response >= 0 and (start < 0 or response < start):
            content.append(text[pos:response])
            break
        if start < 0:
            content.append(text[pos:])
            break
        content.append(text[pos:start])
        reader = _Reader(text, start + len(START_CALL))
        reader.expect("call:")
        name = reader.name(known_names)
        reader.expect("{")
        arguments = reader.members()
        reader.skip_ws()
        if reader.peek(END_CALL):
            reader.pos += len(END_CALL)
        elif reader.pos < len(text):
            raise reader.error(f"expected {END_CALL!r}")
        calls.append((name, arguments))
        pos = reader.pos
    return "".join(content), calls
