"""Grammar artifacts for FunctionGemma: EBNF, XGrammar structural tags and JSON schema.

Every :class:`GrammarConfig` field is read:

``mode``
    ``ebnf``: the whole response is one call, or one or more calls back to back, and nothing
    else (no text, no whitespace between calls). ``structural_tag``: XGrammar triggered tags on
    ``<start_function_call>``, one tag per tool (``begin`` holds the tool name, ``content`` is
    the tool's argument grammar, ``end`` is ``}<end_function_call>``); the response must start
    with a call (``at_least_one``) unless ``require_calls`` is False (text, and calls where the
    model opens one). With parallel calls, free text may follow a call and
    separate calls (the parser returns it as content); without, the response is exactly one
    call. ``json_schema``: a JSON document, ``{"tool_calls": [CALL, ...]}`` (at least one)
    with parallel calls or a bare ``CALL`` without, where ``CALL`` is
    ``{"name": NAME, "arguments": {...}}`` and ``anyOf`` picks the tool by its ``const`` name.
``allow_parallel_calls``
    One or more calls versus exactly one.
``args_format``
    ``permissive``: any argument text with balanced braces (``<escape>`` strings may hold
    anything), still inside the call markers and with the tool name from the given tools; in
    ``json_schema`` mode, ``arguments`` is any object. ``escaped_strings``: the tool's keys
    and typed values (see :mod:`function_gemma_values`), strings as ``<escape>...<escape>``.
    ``json``: the same keys and types written as a JSON object (``call:NAME{"k":"v"}``).
    In ``json_schema`` mode both use the tool's ``parameters`` schema as ``arguments``.

Key order: native calls list keys sorted case-insensitively (FunctionGemma's template does);
in ``json_schema`` mode XGrammar keeps each schema's declared ``properties`` order.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from structured_agents.errors import GrammarConfigError
from structured_agents.grammar.artifacts import (
    EBNFGrammar,
    GrammarArtifact,
    JsonSchemaGrammar,
    StructuralTagGrammar,
)
from structured_agents.grammar.config import GrammarConfig
from structured_agents.grammar.ebnf import RuleSet, ebnf_literal
from structured_agents.plugins.function_gemma.format import END_CALL, START_CALL
from structured_agents.plugins.function_gemma.values import ValueGrammar
from structured_agents.types import JsonDict, ToolSchema

__all__ = ["build_function_gemma_grammar", "function_gemma_json_schema", "function_gemma_structural_tag"]

_CALL_OPEN = START_CALL + "call:"
_CALL_CLOSE = "}" + END_CALL


def _check_tools(tools: Sequence[ToolSchema]) -> None:
    if not tools:
        raise GrammarConfigError("function_gemma: build_grammar needs at least one tool, got none")
    counts = Counter(tool.name for tool in tools)
    duplicates = sorted(name for name, count in counts.items() if count > 1)
    if duplicates:
        raise GrammarConfigError(f"function_gemma: tool names must be unique, got duplicates {duplicates}")


def _free_arguments(rules: RuleSet) -> str:
    """Permissive arguments: text with balanced braces, ``<`` only to open an ``<escape>`` string."""
    string = ValueGrammar(rules, "escaped_strings").string()
    return rules.memo("permissive", "free_args", lambda: f"([^{{}}<] | {string} | {_braced(rules)})*")


def _braced(rules: RuleSet) -> str:
    """Permissive arguments nested in braces (a JSON-like object inside the arguments)."""
    return f'"{{" {_free_arguments(rules)} "}}"'


def _arguments(rules: RuleSet, tool: ToolSchema, config: GrammarConfig) -> str:
    """The expression for the text between ``call:NAME{`` and ``}``."""
    if config.args_format == "permissive":
        return _free_arguments(rules)
    return ValueGrammar(rules, config.args_format).members(tool.parameters, tool.parameters)


def _ebnf(tools: Sequence[ToolSchema], config: GrammarConfig) -> str:
    rules = RuleSet()
    if config.args_format == "permissive":
        names = rules.define("tool_name", " | ".join(ebnf_literal(tool.name) for tool in tools))
        body = f'{names} "{{" {_arguments(rules, tools[0], config)} "}}"'
    else:
        body = " | ".join(
            f'{ebnf_literal(tool.name + "{")} {_arguments(rules, tool, config)} "}}"' for tool in tools
        )
    call = rules.define("call", f"{ebnf_literal(_CALL_OPEN)} ({body}) {ebnf_literal(END_CALL)}")
    return rules.render(f"{call}+" if config.allow_parallel_calls else call)


def function_gemma_structural_tag(tools: Sequence[ToolSchema], config: GrammarConfig) -> JsonDict:
    """The XGrammar structural tag (as JSON data) for calls of ``tools``."""
    _check_tools(tools)
    tags: list[JsonDict] = []
    for tool in tools:
        rules = RuleSet()
        grammar = rules.render(_arguments(rules, tool, config))
        tags.append(
            {
                "type": "tag",
                "begin": f"{_CALL_OPEN}{tool.name}{{",
                "content": {"type": "grammar", "grammar": grammar},
                "end": _CALL_CLOSE,
            }
        )
    return {
        "type": "structural_tag",
        "format": {
            "type": "triggered_tags",
            "triggers": [START_CALL],
            "tags": tags,
            "at_least_one": config.require_calls,
            "stop_after_first": not config.allow_parallel_calls,
        },
    }


def _rewrite_refs(node: Any, prefix: str) -> Any:
    """A copy of ``node`` whose local ``$ref`` pointers point into ``#/$defs/<prefix>...``."""
    if isinstance(node, Mapping):
        out = {k: _rewrite_refs(v, prefix) for k, v in node.items()}
        ref = node.get("$ref")
        for section in ("#/$defs/", "#/definitions/"):
            if isinstance(ref, str) and ref.startswith(section):
                out["$ref"] = f"#/$defs/{prefix}{ref[len(section) :]}"
        return out
    if isinstance(node, list):
        return [_rewrite_refs(v, prefix) for v in node]
    return node


def function_gemma_json_schema(tools: Sequence[ToolSchema], config: GrammarConfig) -> JsonDict:
    """The JSON schema of a json_schema-mode response (see the module doc for its shape).

    Each tool's ``$defs``/``definitions`` move to the document's ``$defs`` under a
    ``t<index>_`` prefix, so the tools' ``$ref`` pointers into them still resolve once nested
    (other pointers, such as ``#`` itself, are not rewritten).
    """
    _check_tools(tools)
    defs: JsonDict = {}
    variants: list[JsonDict] = []
    for index, tool in enumerate(tools):
        prefix = f"t{index}_"
        if config.args_format == "permissive":
            arguments: JsonDict = {"type": "object"}
        else:
            arguments = _rewrite_refs(copy.deepcopy(tool.parameters), prefix)
            for section in ("$defs", "definitions"):
                for name, sub in (arguments.pop(section, None) or {}).items():
                    defs[f"{prefix}{name}"] = sub
        variants.append(
            {
                "type": "object",
                "properties": {"name": {"const": tool.name}, "arguments": arguments},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    call: JsonDict = variants[0] if len(variants) == 1 else {"anyOf": variants}
    schema: JsonDict = call
    if config.allow_parallel_calls:
        schema = {
            "type": "object",
            "properties": {"tool_calls": {"type": "array", "items": call, "minItems": 1}},
            "required": ["tool_calls"],
            "additionalProperties": False,
        }
    return {**schema, "$defs": defs} if defs else schema


def build_function_gemma_grammar(tools: Sequence[ToolSchema], config: GrammarConfig) -> GrammarArtifact:
    """The grammar artifact of ``config.mode`` for calls of ``tools``.

    Raises ``GrammarConfigError`` for an empty tool list or duplicate tool names.
    """
    _check_tools(tools)
    if config.mode == "json_schema":
        return JsonSchemaGrammar(function_gemma_json_schema(tools, config))
    if config.mode == "structural_tag":
        return StructuralTagGrammar(function_gemma_structural_tag(tools, config))
    return EBNFGrammar(_ebnf(tools, config))
