"""Qwen3: the plugin (prompt, tools, parsing), its call format, grammar and value handling.

==============  ============================================================
``plugin``      :class:`QwenPlugin`: render prompts, build grammars, parse responses
``format``      the native call text: reading responses into content and tool calls
``grammar``     structural-tag (qwen_xml) and JSON-schema grammars of a tool set
``values``      argument values: parsing, coercion and rendering by JSON schema
==============  ============================================================
"""

from __future__ import annotations

from structured_agents.plugins.qwen.plugin import QwenPlugin

__all__ = ["QwenPlugin"]
