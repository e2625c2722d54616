"""OpenAI's ``tool_choice`` as a grammar, the way vLLM constrains it, built by the model plugin.

* ``"required"``: the output is one or more calls of the request's tools (one when
  ``parallel_tool_calls`` is false), under the plugin's grammar: EBNF where it has one, else a
  structural tag, else a JSON schema.
* ``{"type": "function", "function": {"name": NAME}}``: exactly one call of that tool.
* ``"auto"`` (the default when tools are given): the model may answer in text or call tools.
  Where the plugin builds structural tags, a triggered tag constrains each call the model
  opens (``GrammarConfig(require_calls=False)``); elsewhere the output is free and parsed.
* ``"none"`` (the default without tools): no tool grammar, and the output is not parsed for
  calls.

A request that also sets ``structured_outputs`` keeps its own grammar; with ``required`` or a
named function that is a conflict (400 naming ``tool_choice``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from structured_agents.errors import StructuredAgentsError
from structured_agents.grammar.artifacts import GrammarArtifact, StructuralTagGrammar
from structured_agents.grammar.config import GrammarConfig, GrammarMode
from structured_agents.plugins.protocol import ModelPlugin
from structured_agents.serve.schemas import ApiError
from structured_agents.types import ToolSchema

__all__ = ["ToolPlan", "plan_tools"]


@dataclass(frozen=True, slots=True)
class ToolPlan:
    """How one chat request treats its tools."""

    grammar: GrammarArtifact | None
    """The grammar the output is decoded under (None: unconstrained)."""
    parse_calls: bool
    """Whether the output is parsed for tool calls."""
    calls_only: bool
    """Whether the whole output is calls (nothing of it is streamed as content)."""
    triggers: tuple[str, ...] = ()
    """Texts that open a call in free text: streamed content stops before them."""
    tools: tuple[ToolSchema, ...] = ()
    """The tools the output's calls are parsed as calls of."""


def _mode(plugin: ModelPlugin) -> GrammarMode:
    if plugin.supports_ebnf:
        return "ebnf"
    return "structural_tag" if plugin.supports_structural_tags else "json_schema"


def _named(choice: dict[str, Any], tools: Sequence[ToolSchema]) -> ToolSchema:
    function = choice.get("function")
    name = function.get("name") if isinstance(function, dict) else None
    if choice.get("type") != "function" or not isinstance(name, str):
        raise ApiError(
            "tool_choice must be none, auto, required or {'type': 'function', 'function': {'name': ...}}",
            param="tool_choice",
        )
    for tool in tools:
        if tool.name == name:
            return tool
    raise ApiError(f"tool_choice names {name!r}, which is not among the request's tools", param="tool_choice")


def _build(plugin: ModelPlugin, tools: Sequence[ToolSchema], config: GrammarConfig) -> GrammarArtifact:
    try:
        return plugin.build_grammar(tools, config)
    except StructuredAgentsError as exc:
        message = f"the {plugin.name} plugin cannot build a grammar for these tools: {exc}"
        raise ApiError(message, param="tools") from exc
    except RecursionError as exc:  # a schema's objects walked recursively: ~940 properties in one
        message = f"the tools' schemas are too large for the {plugin.name} plugin to build a grammar"
        raise ApiError(message, param="tools") from exc


def _triggers(grammar: GrammarArtifact) -> tuple[str, ...]:
    fmt = grammar.tag.get("format", {}) if isinstance(grammar, StructuralTagGrammar) else {}
    return tuple(fmt.get("triggers", ())) if fmt.get("type") == "triggered_tags" else ()


def plan_tools(
    plugin: ModelPlugin,
    tools: Sequence[ToolSchema],
    tool_choice: str | dict[str, Any] | None,
    *,
    parallel: bool,
    structured: GrammarArtifact | None,
) -> ToolPlan:
    """The plan for ``tool_choice`` over ``tools`` (``structured``: the request's own grammar)."""
    choice = tool_choice if tool_choice is not None else ("auto" if tools else "none")
    if choice == "none" or (choice == "auto" and not tools):
        return ToolPlan(structured, parse_calls=False, calls_only=False)
    if not tools:
        raise ApiError(f"tool_choice={choice!r} needs tools", param="tool_choice")
    if choice == "auto":
        if structured is not None or not plugin.supports_structural_tags:
            return ToolPlan(structured, parse_calls=True, calls_only=False, tools=tuple(tools))
        config = GrammarConfig(mode="structural_tag", allow_parallel_calls=parallel, require_calls=False)
        grammar = _build(plugin, tools, config)
        return ToolPlan(
            grammar, parse_calls=True, calls_only=False, triggers=_triggers(grammar), tools=tuple(tools)
        )
    if structured is not None:
        raise ApiError("structured_outputs cannot be combined with a forced tool_choice", param="tool_choice")
    if choice == "required":
        config = GrammarConfig(mode=_mode(plugin), allow_parallel_calls=parallel)
        return ToolPlan(_build(plugin, tools, config), parse_calls=True, calls_only=True, tools=tuple(tools))
    if isinstance(choice, dict):
        config = GrammarConfig(mode=_mode(plugin), allow_parallel_calls=False)
        named = [_named(choice, tools)]
        return ToolPlan(_build(plugin, named, config), parse_calls=True, calls_only=True, tools=tuple(named))
    raise ApiError(
        f"tool_choice must be none, auto, required or a named function, got {choice!r}", param="tool_choice"
    )
