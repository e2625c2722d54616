"""A job's bad words never forbid its own call syntax (``structured_agents.kernel.bans``)."""

from __future__ import annotations

from structured_agents.grammar.config import GrammarConfig
from structured_agents.kernel.bans import call_syntax, syntax_safe
from structured_agents.plugins.function_gemma import FunctionGemmaPlugin
from structured_agents.types import ToolSchema

SUBMIT = ToolSchema(
    "submit_result",
    "Submit.",
    {
        "type": "object",
        "properties": {
            "description": {"type": "string"},
            "parameters": {"type": "object", "properties": {"inventory": {"type": "string"}}},
        },
    },
)


def test_the_call_syntax_is_each_tool_called_with_empty_arguments() -> None:
    plugin = FunctionGemmaPlugin()
    plugin.build_grammar([SUBMIT], GrammarConfig(mode="ebnf", args_format="escaped_strings"))
    syntax = call_syntax(plugin, [SUBMIT])
    assert "call:submit_result{" in syntax and "description:" in syntax and "inventory:" in syntax


def test_bans_the_syntax_writes_are_dropped_case_sensitively() -> None:
    plugin = FunctionGemmaPlugin()
    plugin.build_grammar([SUBMIT], GrammarConfig(mode="ebnf", args_format="escaped_strings"))
    texts = ["description", "Description", "call", "Call", "inventory", "Inventory", "zebra", "zebra", " "]
    # what the syntax writes is banned after a space only, where prose uses it and keys never do
    assert syntax_safe(texts, plugin, [SUBMIT]) == (
        " description",
        ",description",  # the first key: after "{" only
        "Description",
        " call",
        ",call",
        "Call",
        " inventory",
        ",inventory",  # the syntax writes "{inventory:"
        "Inventory",
        "zebra",
    )
    assert " description" not in call_syntax(plugin, [SUBMIT])
    second = ToolSchema("s", "S.", {"type": "object", "properties": {"a": {"type": "string"}, "zebra": {}}})
    assert syntax_safe(["zebra"], plugin, [second]) == (" zebra",)  # ",zebra:" is its syntax
    assert syntax_safe([], plugin, [SUBMIT]) == ()
