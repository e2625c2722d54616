"""The ``function_gemma`` model plugin: Google's FunctionGemma (Gemma 3 270M tuned for calls).

Native format (see :mod:`function_gemma_format`)::

    <start_function_call>call:NAME{key:<escape>text<escape>,n:3,flag:true}<end_function_call>

Prompts follow FunctionGemma's chat template: a ``developer`` turn with the system text and
the function declarations, ``user`` turns, and ``model`` turns holding calls; tool results
are ``<start_function_response>`` blocks inside the model turn that made the calls, and the
model goes on in that same turn. Grammars: :mod:`function_gemma_grammar`.

``parse_response`` types arguments with the schemas of the request's own tools (it keeps
none between requests): an integer parameter written ``3.0`` becomes ``3``, a number written
``3`` becomes ``3.0``; strings stay strings even when they look like numbers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from structured_agents.errors import ParseError
from structured_agents.grammar.artifacts import GrammarArtifact
from structured_agents.grammar.config import GrammarConfig
from structured_agents.grammar.refs import resolve_ref
from structured_agents.plugins.function_gemma.format import (
    END_DECLARATION,
    END_RESPONSE,
    START_DECLARATION,
    START_RESPONSE,
    RenderStyle,
    escape_string,
    parse_native_calls,
    render_call,
    render_value,
)
from structured_agents.plugins.function_gemma.grammar import build_function_gemma_grammar
from structured_agents.plugins.openai_format import OpenAIFormat
from structured_agents.types import JsonDict, Message, ToolCall, ToolSchema

__all__ = ["DEVELOPER_PROMPT", "STOP_STRINGS", "FunctionGemmaPlugin"]

DEVELOPER_PROMPT = "You are a model that can do function calling with the following functions"
"""The line FunctionGemma expects before its function declarations."""

STOP_STRINGS = ("<end_of_turn>", START_RESPONSE)
"""Where a FunctionGemma response ends: the end of the turn, or a call awaiting its result."""

_START_TURN = "<start_of_turn>"
_END_TURN = "<end_of_turn>\n"
_MAX_REF_HOPS = 32


def _declaration_schema(node: Any) -> Any:
    """A parameters schema as FunctionGemma's declarations show it: type names upper-case, a
    string's ``pattern`` left out (the grammar enforces it; a regex only costs prompt tokens)."""
    if isinstance(node, Mapping):
        out = {
            k: _declaration_schema(v) for k, v in node.items() if not (k == "pattern" and isinstance(v, str))
        }
        kind = node.get("type")
        if isinstance(kind, str):
            out["type"] = kind.upper()
        elif isinstance(kind, list):
            out["type"] = [t.upper() if isinstance(t, str) else t for t in kind]
        return out
    if isinstance(node, list):
        return [_declaration_schema(v) for v in node]
    return node


def _declaration(tool: ToolSchema) -> str:
    body = {"description": tool.description, "parameters": _declaration_schema(tool.parameters)}
    return f"{START_DECLARATION}declaration:{tool.name}{render_value(body)}{END_DECLARATION}"


def _coerce(value: Any, schema: Any, root: Any) -> Any:
    """``value`` with numbers typed as ``schema`` says (recursing into objects and arrays)."""
    for _ in range(_MAX_REF_HOPS):
        if not (isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str)):
            break
        schema = resolve_ref(root, schema["$ref"])
    if not isinstance(schema, Mapping) or isinstance(value, bool):
        return value
    kind = schema.get("type")
    types = {kind} if isinstance(kind, str) else set(kind) if isinstance(kind, list) else set()
    if isinstance(value, int) and "number" in types and "integer" not in types:
        return float(value)
    if isinstance(value, float) and value.is_integer() and "integer" in types and "number" not in types:
        return int(value)
    if isinstance(value, dict):
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        return {k: _coerce(v, props.get(k), root) for k, v in value.items()}
    if isinstance(value, list):
        return [_coerce(v, schema.get("items"), root) for v in value]
    return value


class FunctionGemmaPlugin(OpenAIFormat):
    """Formats turns for FunctionGemma, builds its grammars and parses its calls."""

    name = "function_gemma"
    supports_ebnf = True
    supports_structural_tags = True
    supports_json_schema = True

    def __init__(self) -> None:
        self._config: GrammarConfig | None = None
        """The grammar configuration of the agent this instance serves (one per kernel)."""

    def render_prompt(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> str:
        """The conversation in FunctionGemma's chat format, ending in the open model turn.

        Leading system messages and the declarations of ``tools`` form the ``developer``
        turn (with :data:`DEVELOPER_PROMPT` added when tools are given and the text lacks it);
        later system messages become developer turns of their own. The text carries no
        ``<bos>`` (the tokenizer adds it) and never ends in a space.
        """
        start = 0
        while start < len(messages) and messages[start].role == "system":
            start += 1
        developer = "\n\n".join(filter(None, ((m.content or "").strip() for m in messages[:start])))
        if tools and DEVELOPER_PROMPT not in developer:
            developer = f"{developer}\n{DEVELOPER_PROMPT}" if developer else DEVELOPER_PROMPT
        out: list[str] = []
        if developer or tools:
            declarations = "".join(_declaration(tool) for tool in tools)
            out.append(f"{_START_TURN}developer\n{developer}{declarations}{_END_TURN}")
        names = {call.id: call.name for message in messages for call in message.tool_calls}
        model_open = False
        for message in messages[start:]:
            if message.role in ("system", "user"):
                if model_open:
                    out.append(_END_TURN)
                    model_open = False
                role = "developer" if message.role == "system" else "user"
                out.append(f"{_START_TURN}{role}\n{(message.content or '').strip()}{_END_TURN}")
                continue
            if not model_open:
                out.append(f"{_START_TURN}model\n")
                model_open = True
            if message.role == "tool":
                name = message.name or names.get(message.tool_call_id or "", "unknown")
                result = escape_string(message.content or "")
                out.append(f"{START_RESPONSE}response:{name}{{result:{result}}}{END_RESPONSE}")
                continue
            out.append((message.content or "").strip() + self.render_tool_calls(message.tool_calls, tools))
            if not message.tool_calls:
                out.append(_END_TURN)
                model_open = False
        if not model_open:
            out.append(f"{_START_TURN}model\n")
        return "".join(out)

    def render_tool_calls(self, calls: Sequence[ToolCall], tools: Sequence[ToolSchema]) -> str:
        """The calls as the last grammar built by this instance accepts them.

        Native calls back to back (keys sorted, strings ``<escape>``-d, or JSON arguments under
        ``args_format="json"``); under ``json_schema`` mode the JSON document, arguments in the
        schema's declared property order.
        """
        config = self._config
        if not calls:
            return ""
        if config is not None and config.mode == "json_schema":
            by_name = {tool.name: tool for tool in tools}
            items = [{"name": call.name, "arguments": _schema_ordered(call, by_name)} for call in calls]
            document: Any = {"tool_calls": items} if config.allow_parallel_calls else items[0]
            return json.dumps(document, ensure_ascii=False)
        style: RenderStyle = (
            "json" if config is not None and config.args_format == "json" else "escaped_strings"
        )
        return "".join(render_call(call, style) for call in calls)

    def build_grammar(self, tools: Sequence[ToolSchema], config: GrammarConfig) -> GrammarArtifact:
        """The grammar of ``config`` for calls of ``tools`` (see :mod:`function_gemma_grammar`)."""
        self._config = config
        return build_function_gemma_grammar(tools, config)

    def parse_response(
        self, text: str, tools: Sequence[ToolSchema], tool_calls_raw: Sequence[JsonDict] = ()
    ) -> tuple[str | None, list[ToolCall]]:
        """Content and calls of a response: OpenAI ``tool_calls_raw`` when given, else a
        json_schema-mode document, else native calls in ``text``.

        Text without any call comes back as content (stripped; None when empty). Malformed
        calls raise ``ParseError`` naming the offset.
        """
        by_name = {tool.name: tool for tool in tools}
        if tool_calls_raw:
            calls = [
                _from_mapping(raw, f"tool_calls_raw[{i}]", by_name) for i, raw in enumerate(tool_calls_raw)
            ]
            return text.strip() or None, calls
        document = self._json_document(text)
        if document is not None:
            return None, [_from_mapping(item, f"tool_calls[{i}]", by_name) for i, item in enumerate(document)]
        content, found = parse_native_calls(text, list(by_name))
        return content.strip() or None, [_typed(name, arguments, by_name) for name, arguments in found]

    def request_options(self, config: GrammarConfig | None) -> JsonDict:
        """``tool_choice`` ``none`` under a grammar (it already forces calls), else ``auto``;
        plus FunctionGemma's stop strings."""
        return {"tool_choice": "auto" if config is None else "none", "stop": list(STOP_STRINGS)}

    @staticmethod
    def _json_document(text: str) -> list[Any] | None:
        """The calls of a json_schema-mode response, or None when ``text`` is not one."""
        stripped = text.strip()
        if not stripped.startswith("{"):
            return None
        try:
            document = json.loads(stripped)
        except json.JSONDecodeError:
            return None
        if isinstance(document.get("tool_calls"), list):
            return list(document["tool_calls"])
        return [document] if "name" in document and "arguments" in document else None


def _typed(
    name: str, arguments: JsonDict, tools: Mapping[str, ToolSchema], call_id: str | None = None
) -> ToolCall:
    tool = tools.get(name)
    if tool is not None:
        arguments = _coerce(arguments, tool.parameters, tool.parameters)
    return ToolCall(name, arguments) if call_id is None else ToolCall(name, arguments, call_id)


def _from_mapping(item: Any, where: str, tools: Mapping[str, ToolSchema]) -> ToolCall:
    """A call from ``{"name", "arguments"}`` or OpenAI's ``{"id", "function": {...}}``."""
    if not isinstance(item, Mapping):
        raise ParseError(f"{where}: a tool call must be an object, got {type(item).__name__}")
    function = item.get("function")
    function = function if isinstance(function, Mapping) else item
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise ParseError(f"{where}: missing tool name")
    arguments = function.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise ParseError(f"{where}: arguments are not JSON ({exc.msg} at offset {exc.pos})") from exc
    if not isinstance(arguments, Mapping):
        raise ParseError(f"{where}: arguments must be an object, got {type(arguments).__name__}")
    call_id = item.get("id")
    return _typed(name, dict(arguments), tools, call_id if isinstance(call_id, str) and call_id else None)


def _schema_ordered(call: ToolCall, tools: Mapping[str, ToolSchema]) -> JsonDict:
    tool = tools.get(call.name)
    order = list(tool.properties) if tool is not None else []
    ranked = sorted(call.arguments, key=lambda k: order.index(k) if k in order else len(order))
    return {key: call.arguments[key] for key in ranked}
