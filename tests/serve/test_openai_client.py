"""``sa serve`` as a drop-in for the official ``openai`` client, over a scripted engine.

A real uvicorn server (``serve_in_thread``) serves a :class:`ScriptedEngine` that checks every
output against the request's grammar (``validate_grammar``), so each test proves which grammar
the server built for the request: a scripted reply the grammar forbids fails the request. The
"model" answers each chat turn with a call of the tool the last user message names
(``call NAME``), or with the message's text otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx
import openai
import pytest

from structured_agents.engines.scripted import ScriptedEngine
from structured_agents.grammar.artifacts import EBNFGrammar, StructuralTagGrammar
from structured_agents.grammar.config import GrammarConfig
from structured_agents.kernel.engine import GenerationRequest, SamplingParams
from structured_agents.plugins.function_gemma import FunctionGemmaPlugin
from structured_agents.serve import create_app, serve_in_thread
from structured_agents.serve.schemas import tools_from_openai
from structured_agents.types import ToolCall

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
TIME = {
    "type": "function",
    "function": {"name": "get_time", "description": "The time now.", "parameters": {"type": "object"}},
}
YES_NO = 'root ::= "yes" | "no"'


def reply(request: GenerationRequest) -> str | list[ToolCall]:
    """Chat: a call of the tool named after ``call`` in the last user message, else its text.

    Each request is a conversation of its own (replayed when a failed batch is retried)."""
    if not request.messages:
        return "yes" if request.grammar is not None else f"echo:{request.prompt}"
    asked = str(request.messages[-1].get("content") or "")
    if asked.startswith("call "):
        name = asked.split()[1]
        return [ToolCall(name, {"city": "Paris"} if name == "get_weather" else {})]
    return asked


@dataclass
class Served:
    url: str
    engine: ScriptedEngine

    def client(self, api_key: str = "unused") -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{self.url}/v1", api_key=api_key, max_retries=0, timeout=60)

    def last(self) -> GenerationRequest:
        return self.engine.requests[-1]


def _served(**options: object) -> Iterator[Served]:
    engine = ScriptedEngine(
        lambda key: [reply] * 4,
        key=lambda r: r.request_id,
        plugin=FunctionGemmaPlugin(),
        validate_grammar=True,
    )
    engine.generate([GenerationRequest("warm-up", grammar=EBNFGrammar(YES_NO))])  # loads XGrammar (torch)
    app = create_app(
        engine,
        plugin=FunctionGemmaPlugin,
        model_name="tiny",
        defaults=SamplingParams(max_new_tokens=64),
        batch_wait_ms=50,
        **options,  # type: ignore[arg-type]
    )
    with serve_in_thread(app) as url:
        yield Served(url, engine)


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    yield from _served()


def _chat(served: Served, text: str, **options: object) -> openai.types.chat.ChatCompletion:
    return served.client().chat.completions.create(
        model="tiny",
        messages=[{"role": "user", "content": text}],
        tools=[WEATHER, TIME],  # type: ignore[list-item]
        **options,  # type: ignore[arg-type]
    )


def test_completions_with_a_grammar(served: Served) -> None:
    result = served.client().completions.create(
        model="tiny", prompt="Is it?", extra_body={"structured_outputs": {"grammar": YES_NO}}
    )
    assert result.choices[0].text == "yes" and result.choices[0].finish_reason == "stop"
    assert served.last().grammar == EBNFGrammar(YES_NO)
    assert result.usage is not None and result.usage.completion_tokens == 1


def test_required_tool_choice_constrains_to_calls_of_the_tools(served: Served) -> None:
    result = _chat(served, "call get_weather", tool_choice="required")
    choice = result.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    (call,) = choice.message.tool_calls or []
    assert call.type == "function" and call.function.name == "get_weather"  # type: ignore[union-attr]
    assert json.loads(call.function.arguments) == {"city": "Paris"}  # type: ignore[union-attr]
    assert isinstance(served.last().grammar, EBNFGrammar)
    with pytest.raises(openai.InternalServerError, match="violates the request's ebnf grammar"):
        _chat(served, "just text", tool_choice="required")  # text is not a call: the grammar forbids it


def test_a_named_tool_choice_allows_that_tool_only(served: Served) -> None:
    named = {"type": "function", "function": {"name": "get_time"}}
    result = _chat(served, "call get_time", tool_choice=named)
    assert [c.function.name for c in result.choices[0].message.tool_calls or []] == ["get_time"]  # type: ignore[union-attr]
    with pytest.raises(openai.InternalServerError, match="violates"):
        _chat(served, "call get_weather", tool_choice=named)
    with pytest.raises(openai.BadRequestError, match="not among the request's tools") as caught:
        _chat(served, "call get_time", tool_choice={"type": "function", "function": {"name": "nope"}})
    assert caught.value.body["param"] == "tool_choice"  # type: ignore[index]


def test_auto_tool_choice_allows_text_or_calls(served: Served) -> None:
    text = _chat(served, "It is sunny.")
    assert text.choices[0].message.content == "It is sunny." and text.choices[0].finish_reason == "stop"
    grammar = served.last().grammar
    assert isinstance(grammar, StructuralTagGrammar) and grammar.tag["format"]["at_least_one"] is False
    call = _chat(served, "call get_time", tool_choice="auto")
    assert call.choices[0].finish_reason == "tool_calls"


def test_none_tool_choice_builds_no_grammar_and_parses_no_calls(served: Served) -> None:
    result = _chat(served, "call get_time", tool_choice="none")
    assert served.last().grammar is None and not result.choices[0].message.tool_calls
    assert "call:get_time" in (result.choices[0].message.content or "")


def test_parallel_tool_calls_decide_whether_the_grammar_allows_several_calls(served: Served) -> None:
    grammars = []
    for parallel in (True, False):
        result = _chat(served, "call get_time", tool_choice="required", parallel_tool_calls=parallel)
        assert len(result.choices[0].message.tool_calls or []) == 1
        grammars.append(served.last().grammar)
    config = GrammarConfig(mode="ebnf", allow_parallel_calls=False)
    assert grammars[1] == FunctionGemmaPlugin().build_grammar(tools_from_openai([WEATHER, TIME]), config)
    assert grammars[0] != grammars[1]


def test_streaming_completions_send_deltas_finish_reason_usage_and_done(served: Served) -> None:
    stream = served.client().completions.create(
        model="tiny", prompt="hello", stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    assert "".join(c.choices[0].text for c in chunks if c.choices) == "echo:hello"
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop" and set(finishes[:-1]) == {None}
    assert chunks[-1].choices == [] and chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0


def test_streaming_chat_sends_tool_call_deltas(served: Served) -> None:
    stream = served.client().chat.completions.create(
        model="tiny",
        messages=[{"role": "user", "content": "call get_weather"}],
        tools=[WEATHER, TIME],  # type: ignore[list-item]
        tool_choice="required",
        stream=True,
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    calls = [tc for c in chunks for tc in (c.choices[0].delta.tool_calls or [])]
    assert [(tc.index, tc.function.name) for tc in calls] == [(0, "get_weather")]  # type: ignore[union-attr]
    assert json.loads(calls[0].function.arguments or "") == {"city": "Paris"}  # type: ignore[union-attr]
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_streaming_chat_text(served: Served) -> None:
    with served.client().chat.completions.stream(
        model="tiny", messages=[{"role": "user", "content": "Hello there"}]
    ) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.content == "Hello there" and final.choices[0].finish_reason == "stop"


def test_n_candidates_are_numbered_choices(served: Served) -> None:
    result = served.client().completions.create(model="tiny", prompt=["a", "b"], n=3)
    assert [(c.index, c.text) for c in result.choices] == [(i, f"echo:{'ab'[i // 3]}") for i in range(6)]
    chat = _chat(served, "call get_time", tool_choice="required", n=2)
    assert [c.finish_reason for c in chat.choices] == ["tool_calls", "tool_calls"]


BAD = [
    ("grammar", "root ::= ("),
    ("json", {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}),
    ("structural_tag", json.dumps({"type": "structural_tag", "format": {"type": "no_such_format"}})),
]


@pytest.mark.parametrize(("field", "value"), BAD, ids=[field for field, _ in BAD])
def test_a_grammar_that_does_not_compile_is_a_400_naming_its_field(
    served: Served, field: str, value: object
) -> None:
    good = {"structured_outputs": {"grammar": YES_NO}}
    bad = {"structured_outputs": {field: value}}
    client = served.client()
    with ThreadPoolExecutor(4) as pool:  # a bad request among good ones, batched together
        futures = [
            pool.submit(client.completions.create, model="tiny", prompt="q", extra_body=body)
            for body in (good, bad, good)
        ]
        results = [f.exception() or f.result() for f in futures]
    first, error, last = results
    assert isinstance(error, openai.BadRequestError), error
    assert error.body["param"] == f"structured_outputs.{field}"  # type: ignore[index]
    assert f"structured_outputs.{field}" in error.message
    for result in (first, last):
        assert not isinstance(result, Exception) and result.choices[0].text == "yes"  # type: ignore[union-attr]


def test_api_key_and_body_limit() -> None:
    for served in _served(api_key="s3cret", max_body_bytes=2000):
        ok = served.client("s3cret").completions.create(model="tiny", prompt="x")
        assert ok.choices[0].text == "echo:x"
        with pytest.raises(openai.AuthenticationError):
            served.client("wrong").completions.create(model="tiny", prompt="x")
        assert httpx.post(f"{served.url}/v1/completions", json={"prompt": "x"}).status_code == 401
        assert httpx.get(f"{served.url}/health").status_code == 200
        secret = "TOPSECRET" * 300
        big = httpx.post(
            f"{served.url}/v1/completions",
            json={"prompt": secret},
            headers={"Authorization": "Bearer s3cret"},
        )
        assert big.status_code == 413 and "TOPSECRET" not in big.text
        chunked = httpx.post(
            f"{served.url}/v1/completions",
            content=iter([b'{"prompt": "', secret.encode(), b'"}']),
            headers={"Authorization": "Bearer s3cret", "Content-Type": "application/json"},
        )
        assert chunked.status_code == 413 and "TOPSECRET" not in chunked.text
