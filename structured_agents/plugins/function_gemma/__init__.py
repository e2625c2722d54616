"""FunctionGemma: the plugin (prompt, tools, parsing), its call format, grammar and value grammar.

==============  ============================================================
``plugin``      :class:`FunctionGemmaPlugin`: render prompts, build grammars, parse responses
``format``      the native call text: markers, rendering and a tokenizer-free parser
``grammar``     EBNF and structural-tag grammars of a tool set
``values``      the grammar of argument values, from JSON schemas
==============  ============================================================
"""

from __future__ import annotations

from structured_agents.plugins.function_gemma.plugin import (
    DEVELOPER_PROMPT,
    STOP_STRINGS,
    FunctionGemmaPlugin,
)

__all__ = ["DEVELOPER_PROMPT", "STOP_STRINGS", "FunctionGemmaPlugin"]
