"""The ``qwen`` model plugin: Qwen3 instruct models (Qwen3-2507, Qwen3-Coder) with XML tool calls.

Prompts follow Qwen3's ChatML template: tools as one JSON object per line inside ``<tools>`` in
the system turn, tool results as ``<tool_response>`` blocks in a user turn, and the prompt ends
with the open ``<|im_start|>assistant\\n`` turn. Calls are written in the XML form of the
Qwen3-Coder template (see ``qwen_grammar``), which XGrammar's ``qwen_xml`` style constrains and
vLLM's ``qwen3_xml``/``qwen3_coder`` tool parsers read. Qwen3-2507's own template teaches the
Hermes JSON form (``<tool_call>{"name": ..., "arguments": ...}</tool_call>``) instead, so the
tools section states the XML form with an example written by the same renderer the grammar
is tested against; the Hermes form is still parsed.

Calls are parsed and rendered as calls of the tools the request offers (``parse_response``
and ``render_tool_calls`` take them), so XML argument values are typed by that request's
schemas (unknown tools fall back to reading values as JSON, else text) and no job's tools
leak into another's. The one state kept is the ``GrammarConfig`` of the agent's grammar,
so that calls in the prompt history are written in the form that grammar accepts (XML with
raw or JSON strings, or the JSON document): one instance serves one agent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from structured_agents.errors import GrammarConfigError
from structured_agents.grammar.artifacts import GrammarArtifact
from structured_agents.grammar.config import GrammarConfig
from structured_agents.plugins.openai_format import OpenAIFormat
from structured_agents.plugins.qwen.format import parse_qwen_response
from structured_agents.plugins.qwen.grammar import (
    CALL_END,
    CALL_SEPARATOR,
    build_json_schema,
    build_structural_tag,
    call_begin,
    parameter_begin,
    parameter_end,
)
from structured_agents.plugins.qwen.values import canonical, dumps_json, property_schema, render_value
from structured_agents.types import JsonDict, Message, ToolCall, ToolSchema

__all__ = ["QwenPlugin"]

_IM_START = "<|im_start|>"
_IM_END = "<|im_end|>"
_EXAMPLE_CALL = ToolCall(
    name="example_function_name",
    arguments={
        "example_parameter_1": "value_1",
        "example_parameter_2": "This is the value for the second parameter\nthat can span\nmultiple lines",
    },
    id="call_example",
)


class QwenPlugin(OpenAIFormat):
    """Qwen3 instruct models: ChatML prompts, ``qwen_xml`` structural tags, XML/JSON call parsing."""

    name: str = "qwen"
    supports_ebnf: bool = False
    supports_structural_tags: bool = True
    supports_json_schema: bool = True

    def __init__(self) -> None:
        self._config = GrammarConfig(mode="structural_tag")
        """The grammar configuration of the agent this instance serves (one per kernel)."""

    # -- OpenAI-format requests ------------------------------------------------------------

    def request_options(self, config: GrammarConfig | None) -> JsonDict:
        """``tool_choice="auto"`` so vLLM keeps our grammar instead of forcing its own JSON schema."""
        if config is None:
            return {}
        return {"tool_choice": "auto", "parallel_tool_calls": config.allow_parallel_calls}

    # -- native text -------------------------------------------------------------------------

    def render_tool_calls(self, calls: Sequence[ToolCall], tools: Sequence[ToolSchema]) -> str:
        """The calls as the last built grammar accepts them (XML by default; the inverse of parsing)."""
        return self._render_calls(calls, _schemas(tools))

    def _render_calls(self, calls: Sequence[ToolCall], schemas: dict[str, JsonDict]) -> str:
        if self._config.mode == "json_schema":
            docs = [self._json_call(call, schemas.get(call.name)) for call in calls]
            if self._config.allow_parallel_calls or len(docs) != 1:
                return dumps_json(docs)
            return dumps_json(docs[0])
        return CALL_SEPARATOR.join(self._xml_call(call, schemas.get(call.name)) for call in calls)

    @staticmethod
    def _json_call(call: ToolCall, schema: JsonDict | None) -> JsonDict:
        return {"name": call.name, "arguments": canonical(call.arguments, schema, schema or {})}

    def _xml_call(self, call: ToolCall, schema: JsonDict | None) -> str:
        root = schema or {}
        arguments = canonical(call.arguments, schema, root)
        json_strings = self._config.args_format == "json"
        parts = [call_begin(call.name)]
        for key, value in arguments.items():
            text = render_value(value, property_schema(root, key, root), root, json_strings=json_strings)
            parts.append(f"{parameter_begin(key)}{text}{parameter_end()}")
        parts.append(CALL_END)
        return "".join(parts)

    def _tools_section(self, tools: Sequence[ToolSchema]) -> str:
        signatures = "\n".join(json.dumps(tool.to_openai_format(), ensure_ascii=False) for tool in tools)
        if self._config.allow_parallel_calls:
            intro = "You may call one or more functions to assist with the user query."
        else:
            intro = "You must call exactly one function to assist with the user query."
        return (
            f"# Tools\n\n{intro}\n\n"
            "You are provided with function signatures within <tools></tools> XML tags:\n"
            f"<tools>\n{signatures}\n</tools>\n\n"
            "For each function call, reply in the following format with NO suffix:\n\n"
            f"{self._example()}\n\n"
            "<IMPORTANT>\nReminder:\n"
            "- Function calls MUST follow the specified format\n"
            "- Required parameters MUST be specified\n"
            "</IMPORTANT>"
        )

    def _example(self) -> str:
        """An example call in the form the current grammar accepts (no schema: plain strings)."""
        return self._render_calls([_EXAMPLE_CALL], {})

    def render_prompt(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> str:
        """The turn in Qwen3 ChatML, ending with the open assistant turn (no trailing space)."""
        rest = list(messages)
        system: str | None = None
        if rest and rest[0].role == "system":
            system = rest.pop(0).content or ""
        parts: list[str] = []
        if tools:
            head = f"{system}\n\n" if system else ""
            parts.append(f"{_IM_START}system\n{head}{self._tools_section(tools)}{_IM_END}\n")
        elif system is not None:
            parts.append(f"{_IM_START}system\n{system}{_IM_END}\n")
        for index, message in enumerate(rest):
            if message.role == "tool":
                if index == 0 or rest[index - 1].role != "tool":
                    parts.append(f"{_IM_START}user")
                parts.append(f"\n<tool_response>\n{message.content or ''}\n</tool_response>")
                if index + 1 == len(rest) or rest[index + 1].role != "tool":
                    parts.append(f"{_IM_END}\n")
                continue
            body = message.content or ""
            if message.role == "assistant" and message.tool_calls:
                calls = self.render_tool_calls(message.tool_calls, tools)
                body = f"{body.strip()}\n{calls}" if body.strip() else calls
            parts.append(f"{_IM_START}{message.role}\n{body}{_IM_END}\n")
        parts.append(f"{_IM_START}assistant\n")
        return "".join(parts)

    # -- grammar and parsing -----------------------------------------------------------------

    def build_grammar(self, tools: Sequence[ToolSchema], config: GrammarConfig) -> GrammarArtifact:
        """A ``qwen_xml`` structural tag or a JSON schema of calls; ``ebnf`` is not served."""
        if config.mode == "ebnf":
            raise GrammarConfigError(
                "plugin 'qwen' does not support grammar mode 'ebnf'; use 'structural_tag' or 'json_schema'"
            )
        artifact: GrammarArtifact
        if config.mode == "structural_tag":
            artifact = build_structural_tag(tools, config)
        else:
            artifact = build_json_schema(tools, config)
        self._config = config
        return artifact

    def parse_response(
        self, text: str, tools: Sequence[ToolSchema], tool_calls_raw: Sequence[JsonDict] = ()
    ) -> tuple[str | None, list[ToolCall]]:
        """Content and calls from a server's tool_calls, a JSON document or XML calls in the text."""
        return parse_qwen_response(text, tool_calls_raw, _schemas(tools))


def _schemas(tools: Sequence[ToolSchema]) -> dict[str, JsonDict]:
    return {tool.name: tool.parameters for tool in tools}
