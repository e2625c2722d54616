"""Grammars for Qwen3 tool calls: XGrammar structural tags (``qwen_xml``) and JSON schemas.

The structural tag constrains the whole response to tool calls in the XML form of the
Qwen3-Coder chat template, one call per block::

    <tool_call>
    <function=NAME>
    <parameter=KEY>
    VALUE
    </parameter>
    </function>
    </tool_call>

Blocks are separated by ``"\\n"`` as the template writes them; with parallel calls off exactly
one block is allowed, and no free text is allowed around the blocks. With
``GrammarConfig.require_calls`` False the response is free text in which each ``<tool_call>``
opens one such block (XGrammar triggered tags). The call's begin string is
the one of XGrammar's ``qwen_3_coder`` builder; its end string has no leading newline because
the last ``</parameter>\\n`` already wrote it (so a call without arguments is
``<function=NAME>\\n</function>``, as the template renders it); whitespace between parameters
is free (``qwen_xml`` allows it). Arguments come in the schema's declared property order.

``GrammarConfig.args_format`` decides how the parameters are constrained:

* ``escaped_strings`` (default): ``JSONSchemaFormat(style="qwen_xml")`` over the tool's full
  schema: keys and types from the schema, strings as raw XML text, other values as JSON.
* ``json``: the same keys and types, but every value, strings included, is one JSON document
  (``"London"``), built as one tag per declared property. Unambiguous to read back; extra
  (``additionalProperties``) keys are not allowed in this form.
* ``permissive``: keys and ``required`` from the schema, values unconstrained text (property
  schemas relaxed to ``{}``), for weak models that fail typed grammars.

Every form excludes ``</parameter>``, ``</function>`` and ``</tool_call>`` from string values
(nested JSON strings included) so a model cannot end a value or a call early by accident, and
``<tool_call>``, ``<function=`` and ``<parameter=`` so it cannot run on into another call inside
a value, which would then never close (``values.VALUE_EXCLUDES``).

This module builds plain dicts and does not import XGrammar (which imports torch).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from structured_agents.errors import GrammarConfigError
from structured_agents.grammar.artifacts import JsonSchemaGrammar, StructuralTagGrammar
from structured_agents.grammar.config import ArgsFormat, GrammarConfig
from structured_agents.plugins.qwen.values import VALUE_EXCLUDES
from structured_agents.types import JsonDict, ToolSchema

__all__ = [
    "CALL_END",
    "CALL_SEPARATOR",
    "CALL_TRIGGER",
    "arguments_schema",
    "build_json_schema",
    "build_structural_tag",
    "call_begin",
    "parameter_begin",
    "parameter_end",
]

CALL_END = "</function>\n</tool_call>"
CALL_TRIGGER = "<tool_call>"
"""Where every call begins (the trigger of the optional-calls form)."""
CALL_SEPARATOR = "\n"
_FORBIDDEN_IN_NAMES = (">", "\n", "\r")


def call_begin(name: str) -> str:
    """The text that opens a call of tool ``name``."""
    return f"<tool_call>\n<function={name}>\n"


def parameter_begin(key: str) -> str:
    """The text that opens argument ``key``."""
    return f"<parameter={key}>\n"


def parameter_end() -> str:
    """The text that closes an argument."""
    return "\n</parameter>\n"


def _check_tools(tools: Sequence[ToolSchema], mode: str) -> None:
    if not tools:
        raise GrammarConfigError(f"plugin 'qwen' cannot build a {mode} grammar without tools")
    seen: set[str] = set()
    for tool in tools:
        if tool.name in seen:
            raise GrammarConfigError(f"plugin 'qwen': duplicate tool name {tool.name!r}")
        seen.add(tool.name)
        for label, text in [("tool name", tool.name), *(("argument name", k) for k in tool.properties)]:
            if not text or any(ch in text for ch in _FORBIDDEN_IN_NAMES):
                raise GrammarConfigError(
                    f"plugin 'qwen': {label} {text!r} of tool {tool.name!r} cannot be written in "
                    "Qwen XML (it must be non-empty, without '>' or line breaks)"
                )
        kind = tool.parameters.get("type", "object")
        if kind != "object":
            raise GrammarConfigError(
                f"plugin 'qwen': parameters of tool {tool.name!r} must be type 'object', got {kind!r}"
            )


def arguments_schema(tool: ToolSchema, args_format: ArgsFormat) -> JsonDict:
    """The tool's parameters schema as the grammar constrains it under ``args_format``."""
    if args_format != "permissive":
        return {"type": "object", **tool.parameters}
    relaxed: JsonDict = {
        "type": "object",
        "properties": {key: {} for key in tool.properties},
        "additionalProperties": bool(tool.parameters.get("additionalProperties", False)),
    }
    if tool.required:
        relaxed["required"] = list(tool.required)
    return relaxed


def _rebase_refs(schema: JsonDict, prefix: str) -> tuple[JsonDict, JsonDict]:
    """``schema`` with its local refs moved under ``#/$defs/<prefix>...``, and those defs.

    Lets a tool's schema (whose refs are relative to its own root) be embedded in another
    document: ``#/$defs/X`` and ``#/definitions/X`` become ``#/$defs/<prefix>.$defs.X`` (or
    ``.definitions.X``); ``#`` and other local pointers point into ``#/$defs/<prefix>``.
    """
    uses_root = False

    def remap(ref: str) -> str:
        nonlocal uses_root
        for section in ("$defs", "definitions"):
            head = f"#/{section}/"
            if ref.startswith(head):
                return f"#/$defs/{prefix}.{section}.{ref[len(head) :]}"
        if ref == "#" or ref.startswith("#/"):
            uses_root = True
            return f"#/$defs/{prefix}{ref[1:]}"
        return ref

    def rewrite(node: Any) -> Any:
        if isinstance(node, Mapping):
            return {
                k: remap(v) if k == "$ref" and isinstance(v, str) else rewrite(v) for k, v in node.items()
            }
        if isinstance(node, list):
            return [rewrite(item) for item in node]
        return node

    body = {k: v for k, v in schema.items() if k not in ("$defs", "definitions")}
    defs: JsonDict = {}
    for section in ("$defs", "definitions"):
        section_defs = schema.get(section)
        if isinstance(section_defs, Mapping):
            for name, sub in section_defs.items():
                defs[f"{prefix}.{section}.{name}"] = rewrite(sub)
    rebased: JsonDict = rewrite(body)
    if uses_root:
        defs[prefix] = rebased
    return rebased, defs


def _json_arguments_content(schema: JsonDict) -> JsonDict:
    """Per-property tags whose values are JSON documents (``args_format="json"``)."""
    rebased, defs = _rebase_refs(schema, "args")
    props = rebased.get("properties") or {}
    required = set(rebased.get("required") or ())
    elements: list[JsonDict] = []
    for key, sub in props.items():
        value_schema = dict(sub) if isinstance(sub, Mapping) else {}
        if defs:
            value_schema["$defs"] = copy.deepcopy(defs)
        tag: JsonDict = {
            "type": "tag",
            "begin": parameter_begin(key),
            "content": {"type": "json_schema", "json_schema": value_schema, "excludes": list(VALUE_EXCLUDES)},
            "end": parameter_end(),
        }
        elements.append(tag if key in required else {"type": "optional", "content": tag})
    if not elements:
        return {"type": "const_string", "value": ""}
    return elements[0] if len(elements) == 1 else {"type": "sequence", "elements": elements}


def build_structural_tag(tools: Sequence[ToolSchema], config: GrammarConfig) -> StructuralTagGrammar:
    """The ``qwen_xml`` structural tag for ``tools`` under ``config`` (see the module docstring)."""
    _check_tools(tools, "structural_tag")
    tags: list[JsonDict] = []
    for tool in tools:
        schema = arguments_schema(tool, config.args_format)
        content: JsonDict
        if config.args_format == "json":
            content = _json_arguments_content(schema)
        else:
            content = {
                "type": "json_schema",
                "json_schema": schema,
                "style": "qwen_xml",
                "excludes": list(VALUE_EXCLUDES),
            }
        tags.append({"type": "tag", "begin": call_begin(tool.name), "content": content, "end": CALL_END})
    calls: JsonDict = {
        "type": "tags_with_separator",
        "tags": tags,
        "separator": CALL_SEPARATOR,
        "at_least_one": True,
        "stop_after_first": not config.allow_parallel_calls,
    }
    if not config.require_calls:  # free text; a call wherever the model opens one
        calls = {
            "type": "triggered_tags",
            "triggers": [CALL_TRIGGER],
            "tags": tags,
            "at_least_one": False,
            "stop_after_first": not config.allow_parallel_calls,
        }
    return StructuralTagGrammar({"type": "structural_tag", "format": calls})


def build_json_schema(tools: Sequence[ToolSchema], config: GrammarConfig) -> JsonSchemaGrammar:
    """A schema for ``{"name": ..., "arguments": {...}}``, or a non-empty array of those.

    ``args_format`` ``permissive`` relaxes the argument values as in the structural tag; the
    other two keep the full schema (JSON strings are the only string form here anyway).
    """
    _check_tools(tools, "json_schema")
    choices: list[JsonDict] = []
    defs: JsonDict = {}
    for index, tool in enumerate(tools):
        arguments, tool_defs = _rebase_refs(arguments_schema(tool, config.args_format), f"tool{index}")
        defs.update(tool_defs)
        choices.append(
            {
                "type": "object",
                "properties": {"name": {"const": tool.name}, "arguments": arguments},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    call: JsonDict = choices[0] if len(choices) == 1 else {"anyOf": choices}
    schema: JsonDict = (
        {"type": "array", "items": call, "minItems": 1} if config.allow_parallel_calls else call
    )
    if defs:
        schema = {**schema, "$defs": defs}
    return JsonSchemaGrammar(schema)
