"""The OpenAI chat form of a request, which every shipped plugin sends to a chat server as is
(the server applies the model's own template)."""

from __future__ import annotations

from collections.abc import Sequence

from structured_agents.types import JsonDict, Message, ToolSchema

__all__ = ["OpenAIFormat"]


class OpenAIFormat:
    """``format_messages`` and ``format_tools`` of :class:`~structured_agents.plugins.protocol.ModelPlugin`
    in the OpenAI chat format."""

    def format_messages(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> list[JsonDict]:
        """The messages in the OpenAI chat format."""
        return [message.to_openai_format() for message in messages]

    def format_tools(self, tools: Sequence[ToolSchema]) -> list[JsonDict]:
        """The tools in the OpenAI ``tools`` format."""
        return [tool.to_openai_format() for tool in tools]
