"""The ``python_docstring`` model plugin: a base code model writes a call as a docstring.

A base model (no chat template, no tool-call training, such as the shipped Gemma 3 270M) has
read far more Python than calls: given a definition whose docstring is opened, it goes on
writing that docstring. This plugin lets it: the prompt is code, and the one tool a run sees
is called by writing its arguments as the docstring (:mod:`.form`), under a grammar
(:mod:`.grammar`, EBNF only) that holds the text to that form.

Prompt: the system text as comment lines, then each user message as it is (a bundle's user
template renders the code and ends on the opened docstring). A previous call is written out
after its user message, and a tool's result follows as comment lines, after which the last
user message stands again, so the prompt always ends where the model writes. Worked examples
are rendered the same way, as code that went before.
"""

from __future__ import annotations

from collections.abc import Sequence

from structured_agents.errors import GrammarConfigError, ParseError
from structured_agents.grammar.artifacts import GrammarArtifact
from structured_agents.grammar.config import GrammarConfig
from structured_agents.plugins.openai_format import OpenAIFormat
from structured_agents.plugins.python_docstring.form import DocstringForm
from structured_agents.plugins.python_docstring.grammar import build_docstring_grammar
from structured_agents.types import JsonDict, Message, ToolCall, ToolSchema

__all__ = ["PythonDocstringPlugin"]


def _comment(text: str) -> str:
    return "".join(f"# {line}".rstrip() + "\n" for line in text.strip().splitlines())


class PythonDocstringPlugin(OpenAIFormat):
    """A call of the one tool a run sees, written as the docstring of the code in the prompt."""

    name = "python_docstring"
    supports_ebnf = True
    supports_structural_tags = False
    supports_json_schema = False

    def request_options(self, config: GrammarConfig | None) -> JsonDict:
        """Nothing: the grammar ends the text at the docstring's close."""
        return {}

    def render_tool_calls(self, calls: Sequence[ToolCall], tools: Sequence[ToolSchema]) -> str:
        """The call as the docstring text the model writes."""
        if not tools:
            raise ParseError("plugin 'python_docstring' got no tool to write a call of")
        form = DocstringForm.of(tuple(tools))
        return "".join(form.render(call.arguments) for call in calls)

    def render_prompt(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> str:
        """Code ending on the opened docstring (see the module docstring)."""
        parts: list[str] = []
        last_user = ""
        for message in messages:
            text = message.content or ""
            if message.role == "system":
                parts.append(_comment(text))
            elif message.role == "user":
                last_user = text
                parts.append(text)
            elif message.role == "assistant" and message.tool_calls:
                parts.append(self.render_tool_calls(message.tool_calls, tools) + "\n\n\n")
            elif message.role == "tool":
                parts.append(_comment(text))
        if messages and messages[-1].role != "user":
            parts.append(last_user)
        return "".join(parts)

    def build_grammar(self, tools: Sequence[ToolSchema], config: GrammarConfig) -> GrammarArtifact:
        """The EBNF of the call's docstring; other modes are not served."""
        if config.mode != "ebnf":
            raise GrammarConfigError(
                f"plugin 'python_docstring' does not support grammar mode {config.mode!r}; use 'ebnf'"
            )
        if not tools:
            raise GrammarConfigError("plugin 'python_docstring' needs the one tool a run calls")
        return build_docstring_grammar(DocstringForm.of(tuple(tools)))

    def parse_response(
        self, text: str, tools: Sequence[ToolSchema], tool_calls_raw: Sequence[JsonDict] = ()
    ) -> tuple[str | None, list[ToolCall]]:
        """The call the docstring text writes, as a call of the one tool in ``tools`` (none
        when it has no summary)."""
        if not tools:
            raise ParseError("plugin 'python_docstring' got no tool to parse a call of")
        call = DocstringForm.of(tuple(tools)).parse(text)
        return (None, [call]) if call is not None else (text or None, [])
