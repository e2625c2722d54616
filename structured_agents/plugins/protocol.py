"""The model plugin seam: how one model family sees messages, tools and grammars."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from structured_agents.grammar.artifacts import GrammarArtifact
from structured_agents.grammar.config import GrammarConfig
from structured_agents.types import JsonDict, Message, ToolCall, ToolSchema

__all__ = ["ModelPlugin"]


@runtime_checkable
class ModelPlugin(Protocol):
    """Formats a turn for one model family, builds its grammar and parses its output.

    Capability flags say which ``GrammarConfig.mode`` values ``build_grammar`` serves; asking
    for another raises ``GrammarConfigError`` naming the plugin and the mode.
    """

    name: str
    supports_ebnf: bool
    supports_structural_tags: bool
    supports_json_schema: bool

    def format_messages(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> list[JsonDict]:
        """The messages in the OpenAI chat format this model's server expects."""
        ...

    def format_tools(self, tools: Sequence[ToolSchema]) -> list[JsonDict]:
        """The tools in the format this model's server expects."""
        ...

    def render_prompt(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> str:
        """The whole turn as text in the model's native format, ending where the model speaks."""
        ...

    def render_tool_calls(self, calls: Sequence[ToolCall], tools: Sequence[ToolSchema]) -> str:
        """The calls as the model writes them, as calls of ``tools`` (the inverse of
        ``parse_response``)."""
        ...

    def build_grammar(self, tools: Sequence[ToolSchema], config: GrammarConfig) -> GrammarArtifact:
        """The grammar that constrains this model to valid calls of ``tools``."""
        ...

    def parse_response(
        self, text: str, tools: Sequence[ToolSchema], tool_calls_raw: Sequence[JsonDict] = ()
    ) -> tuple[str | None, list[ToolCall]]:
        """Split a response to a request offering ``tools`` into free content and tool calls
        (arguments typed per the schema of ``tools``: a plugin keeps no tools between requests,
        since one instance serves every job of a batch)."""
        ...

    def request_options(self, config: GrammarConfig | None) -> JsonDict:
        """Extra fields of a chat request for this model (``tool_choice``, stop strings, ...)."""
        ...
