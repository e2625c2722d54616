"""Reading Qwen3 responses into content and tool calls.

Three sources, tried in this order by :func:`parse_qwen_response`:

1. ``tool_calls_raw``: calls a server (vLLM with ``--tool-call-parser qwen3_xml``) already
   extracted, OpenAI format, ``arguments`` as a JSON string or an object. Typed values are
   kept; string quote noise is removed where the schema says string. Entries that are not
   calls at all raise :class:`ParseError`.
2. A whole-response JSON document: one ``{"name", "arguments"}`` object or an array of them
   (what the ``json_schema`` grammar produces). Arguments are taken as written.
3. Calls in the text, anywhere between free content:

   * ``<tool_call><function=NAME><parameter=KEY>value</parameter></function></tool_call>``
     (whitespace between tags free; the ``<tool_call>`` wrapper may be missing, as when a
     server strips it; a missing ``</parameter>`` ends the value at the next parameter);
   * ``<tool name="NAME"><parameter name="KEY">value</parameter></tool>`` (vLLM's
     ``qwen3_xml`` variant), wrapped or not;
   * ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (Qwen3's Hermes form).

   XML values are typed per the tool's schema (see ``qwen_values``); one leading and one
   trailing newline of a value belong to the format and are dropped.

Text outside calls is the content (stripped; ``None`` when empty). A response with a call that
cannot be read (truncated, unknown markup inside a call) gives ``(text, [])``: the kernel can
show the model its own malformed output rather than crash.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from structured_agents.errors import ParseError
from structured_agents.plugins.qwen.values import coerce_value, parse_value, property_schema
from structured_agents.types import JsonDict, ToolCall

__all__ = ["parse_qwen_response", "parse_raw_tool_calls"]

Schemas = Mapping[str, JsonDict]
"""Known tools' parameter schemas by tool name."""

_CALL_START = re.compile(r"<tool_call>|<function=|<tool\s+name=")
_FUNCTION_OPEN = re.compile(r"<function=([^>\n]+)>")
_TOOL_OPEN = re.compile(r"<tool\s+name=\"([^\"\n]*)\"\s*>")
_PARAMETER_OPEN = re.compile(r"<parameter(?:=([^>\n]+)|\s+name=\"([^\"\n]*)\"\s*)>")
_WRAP_OPEN = "<tool_call>"
_WRAP_CLOSE = "</tool_call>"
_PARAMETER_CLOSE = "</parameter>"


class _Malformed(Exception):
    """A call started but could not be read to its end."""


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _strip_format_newlines(value: str) -> str:
    value = value.removeprefix("\n")
    return value.removesuffix("\n")


def _typed_xml_arguments(raw: Mapping[str, str], schema: JsonDict | None) -> JsonDict:
    root = schema or {}
    return {key: parse_value(text, property_schema(root, key, root), root) for key, text in raw.items()}


def _coerced_arguments(arguments: Mapping[str, Any], schema: JsonDict | None) -> JsonDict:
    if schema is None:
        return dict(arguments)
    return {
        key: coerce_value(value, property_schema(schema, key, schema), schema)
        for key, value in arguments.items()
    }


def _read_parameters(text: str, pos: int, closer: str) -> tuple[dict[str, str], int]:
    """Parameters from ``pos`` up to and including ``closer`` (``</function>`` or ``</tool>``)."""
    params: dict[str, str] = {}
    while True:
        pos = _skip_ws(text, pos)
        if text.startswith(closer, pos):
            return params, pos + len(closer)
        opened = _PARAMETER_OPEN.match(text, pos)
        if opened is None:
            raise _Malformed
        key = (opened.group(1) if opened.group(1) is not None else opened.group(2)).strip()
        start = opened.end()
        end = text.find(_PARAMETER_CLOSE, start)
        if end != -1:
            params[key] = _strip_format_newlines(text[start:end])
            pos = end + len(_PARAMETER_CLOSE)
            continue
        bounds = [p for p in (text.find("<parameter", start), text.find(closer, start)) if p != -1]
        if not bounds:
            raise _Malformed
        params[key] = _strip_format_newlines(text[start : min(bounds)])
        pos = min(bounds)


def _call_from_json(obj: Any) -> ToolCall | None:
    """A call from a ``{"name": ..., "arguments": ...}`` object, else ``None``."""
    if not isinstance(obj, Mapping) or not isinstance(obj.get("name"), str) or not obj["name"]:
        return None
    arguments = obj.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return None
    if not isinstance(arguments, Mapping):
        return None
    return ToolCall(name=obj["name"], arguments=dict(arguments))


def _read_call(text: str, pos: int, schemas: Schemas) -> tuple[ToolCall, int]:
    """The call starting at ``pos`` and the position after it."""
    wrapped = text.startswith(_WRAP_OPEN, pos)
    if wrapped:
        pos = _skip_ws(text, pos + len(_WRAP_OPEN))
    function = _FUNCTION_OPEN.match(text, pos)
    tool = _TOOL_OPEN.match(text, pos)
    call: ToolCall | None
    if function is not None or tool is not None:
        opened = function if function is not None else tool
        assert opened is not None
        name = opened.group(1).strip()
        raw, pos = _read_parameters(text, opened.end(), "</function>" if function else "</tool>")
        call = ToolCall(name=name, arguments=_typed_xml_arguments(raw, schemas.get(name)))
    elif wrapped and text.startswith("{", pos):
        try:
            obj, pos = json.JSONDecoder().raw_decode(text, pos)
        except ValueError as exc:
            raise _Malformed from exc
        call = _call_from_json(obj)
    else:
        call = None
    if call is None:
        raise _Malformed
    after = _skip_ws(text, pos)
    if text.startswith(_WRAP_CLOSE, after):
        return call, after + len(_WRAP_CLOSE)
    if wrapped and after < len(text) and not text.startswith(_WRAP_OPEN, after):
        raise _Malformed
    return call, pos


def _json_document_calls(text: str) -> list[ToolCall] | None:
    """Calls when the whole response is the ``json_schema`` grammar's document, else ``None``."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return None
    try:
        doc = json.loads(stripped)
    except ValueError:
        return None
    items = doc if isinstance(doc, list) else [doc]
    calls = [_call_from_json(item) for item in items]
    if not calls or any(c is None for c in calls):
        return None
    return [c for c in calls if c is not None]


def parse_raw_tool_calls(raw: Sequence[JsonDict], schemas: Schemas) -> list[ToolCall]:
    """Calls from a server's OpenAI-format ``tool_calls``; :class:`ParseError` if one is not a call."""
    calls: list[ToolCall] = []
    for index, entry in enumerate(raw):
        where = f"tool_calls_raw[{index}]"
        if not isinstance(entry, Mapping):
            raise ParseError(f"{where} must be an object, got {type(entry).__name__}")
        function = entry.get("function", entry)
        if not isinstance(function, Mapping):
            raise ParseError(f"{where}.function must be an object, got {type(function).__name__}")
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise ParseError(f"{where}.function.name must be a non-empty string, got {name!r}")
        arguments: Any = function.get("arguments")
        if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
            arguments = {}
        elif isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError as exc:
                raise ParseError(f"{where} ({name}): arguments are not valid JSON: {exc}") from exc
        if not isinstance(arguments, Mapping):
            raise ParseError(
                f"{where} ({name}): arguments must be a JSON object, got {type(arguments).__name__}"
            )
        typed = _coerced_arguments(arguments, schemas.get(name))
        call_id = entry.get("id")
        calls.append(
            ToolCall(name, typed, id=call_id)
            if isinstance(call_id, str) and call_id
            else ToolCall(name, typed)
        )
    return calls


def parse_qwen_response(
    text: str, tool_calls_raw: Sequence[JsonDict], schemas: Schemas
) -> tuple[str | None, list[ToolCall]]:
    """Content and calls of one response (see the module docstring)."""
    if tool_calls_raw:
        return (text.strip() or None), parse_raw_tool_calls(tool_calls_raw, schemas)
    document = _json_document_calls(text)
    if document is not None:
        return None, document
    calls: list[ToolCall] = []
    content: list[str] = []
    pos = 0
    try:
        while (start := _CALL_START.search(text, pos)) is not None:
            content.append(text[pos : start.start()])
            call, pos = _read_call(text, start.start(), schemas)
            calls.append(call)
    except _Malformed:
        return text, []
    if not calls:
        return (text if text.strip() else None), []
    content.append(text[pos:])
    return ("".join(content).strip() or None), calls
