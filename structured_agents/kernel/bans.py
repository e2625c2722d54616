"""Texts a job's run must never write (``KernelConfig.job_bad_words``), kept clear of the call
syntax.

An engine bans a text by banning the token that would complete it, wherever it stands: inside
an argument's value and in the call's own syntax alike. A ban on ``description`` would also
forbid the key ``description:`` the grammar requires, leaving a sampled row no token at all.
:func:`syntax_safe` therefore drops every ban that occurs (case-sensitively, as engines match)
in the call syntax of the tools the run sees: each tool's call rendered by the plugin with its
arguments empty (objects with their declared keys, strings empty). ``Description`` stays banned
where ``description`` cannot be. Such a ban still holds where the syntax never writes the
word: after a space (`` description``, banned mid-sentence only, see
``SamplingParams.bad_words``) and after a comma (``,description``: the first key follows
``{``), where a value's prose or a runaway value writes it and the call's own keys never do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from structured_agents.plugins.protocol import ModelPlugin
from structured_agents.types import ToolCall, ToolSchema

__all__ = ["call_syntax", "syntax_safe"]


def _skeleton(schema: Any) -> Any:
    """An empty value of ``schema``: an object with every declared key, else an empty string."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if isinstance(properties, Mapping):
        return {str(key): _skeleton(value) for key, value in properties.items()}
    return ""


def call_syntax(plugin: ModelPlugin, tools: Sequence[ToolSchema]) -> str:
    """The calls of ``tools`` as ``plugin`` writes them, every argument empty."""
    calls = [ToolCall(tool.name, _skeleton({"properties": tool.properties})) for tool in tools]
    return plugin.render_tool_calls(calls, tools)


def syntax_safe(texts: Sequence[str], plugin: ModelPlugin, tools: Sequence[ToolSchema]) -> tuple[str, ...]:
    """``texts`` kept clear of :func:`call_syntax`: one the syntax writes is banned only after
    a space, or dropped when the syntax writes it there too (see the module docstring)."""
    if not texts:
        return ()
    syntax = call_syntax(plugin, tools)
    kept: dict[str, None] = {}
    for text in texts:
        word = text.strip()
        if word and word not in syntax:
            kept[word] = None
        elif word:
            kept.update((variant, None) for variant in (" " + word, "," + word) if variant not in syntax)
    return tuple(kept)
