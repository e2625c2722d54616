"""Real, tiny implementations of the kernel's seams for its tests (imported by the tests here).

``LinePlugin`` is a complete ModelPlugin with a one-call-per-line format
(``CALL name {json}``) and a real EBNF grammar; ``StaticTools`` is a ToolSource over Python
callables with given schemas.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Sequence
from typing import Any

from structured_agents.context import RunContext
from structured_agents.errors import ParseError
from structured_agents.grammar.artifacts import EBNFGrammar, GrammarArtifact
from structured_agents.grammar.config import GrammarConfig
from structured_agents.types import JsonDict, Message, ToolCall, ToolResult, ToolSchema


class LinePlugin:
    """Calls are lines ``CALL name {json}``; any other output is the answer."""

    name = "line"
    supports_ebnf = True
    supports_structural_tags = False
    supports_json_schema = False

    def format_messages(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> list[JsonDict]:
        return [m.to_openai_format() for m in messages]

    def format_tools(self, tools: Sequence[ToolSchema]) -> list[JsonDict]:
        return [t.to_openai_format() for t in tools]

    def render_prompt(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> str:
        lines = [f"TOOLS: {', '.join(t.name for t in tools)}"]
        for m in messages:
            body = m.content or ""
            if m.tool_calls:
                body = self.render_tool_calls(m.tool_calls, tools)
            lines.append(f"{m.role.upper()}: {body}")
        return "\n".join(lines) + "\nASSISTANT:"

    def render_tool_calls(self, calls: Sequence[ToolCall], tools: Sequence[ToolSchema]) -> str:
        return "\n".join(f"CALL {c.name} {json.dumps(c.arguments, sort_keys=True)}" for c in calls)

    def build_grammar(self, tools: Sequence[ToolSchema], config: GrammarConfig) -> GrammarArtifact:
        names = " | ".join(json.dumps(t.name) for t in tools)
        more = '("\\n" call)*' if config.allow_parallel_calls else ""
        return EBNFGrammar(
            f'root ::= calls | text\ncalls ::= call {more}\ncall ::= "CALL " name " " args\n'
            f'name ::= {names}\nargs ::= "{{" [^\\n]* "}}"\ntext ::= [^C\\n] [^\\n]*\n'
        )

    def parse_response(
        self, text: str, tools: Sequence[ToolSchema], tool_calls_raw: Sequence[JsonDict] = ()
    ) -> tuple[str | None, list[ToolCall]]:
        calls: list[ToolCall] = []
        content: list[str] = []
        for line in text.splitlines():
            if not line.startswith("CALL "):
                content.append(line)
                continue
            _, name, args = line.split(" ", 2)
            try:
                calls.append(ToolCall(name=name, arguments=json.loads(args)))
            except json.JSONDecodeError as exc:
                raise ParseError(f"bad arguments of {name}: {exc}") from exc
        return ("\n".join(content) or None), calls

    def request_options(self, config: GrammarConfig | None) -> JsonDict:
        return {}


def schema(name: str, **props: str) -> ToolSchema:
    """A schema with string/integer properties (``name=type``)."""
    return ToolSchema(
        name=name,
        description=f"the {name} tool",
        parameters={"type": "object", "properties": {k: {"type": v} for k, v in props.items()}},
    )


class StaticTools:
    """A ToolSource of Python callables (sync or async) called with the call's arguments."""

    def __init__(self, tools: dict[str, tuple[ToolSchema, Callable[..., Any]]]) -> None:
        self._tools = tools
        self.contexts: list[RunContext] = []

    def tools(self) -> list[ToolSchema]:
        return [s for s, _ in self._tools.values()]

    async def execute(self, call: ToolCall, context: RunContext) -> ToolResult:
        self.contexts.append(context)
        if call.name not in self._tools:
            return ToolResult(call.id, call.name, f"unknown tool {call.name}", is_error=True)
        try:
            out = self._tools[call.name][1](**call.arguments)
            if inspect.isawaitable(out):
                out = await out
        except Exception as exc:
            return ToolResult(call.id, call.name, f"{type(exc).__name__}: {exc}", is_error=True)
        return ToolResult(call.id, call.name, out if isinstance(out, str) else json.dumps(out))
