"""``sa serve`` on the real small model (Gemma 3 270M, base), driven by the official ``openai`` client.

Assertions hold for every output the grammars allow, never one particular output.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import httpx
import openai
import pytest

from structured_agents.kernel.engine import SamplingParams
from structured_agents.plugins.function_gemma import FunctionGemmaPlugin
from structured_agents.serve import create_app, serve_in_thread

if TYPE_CHECKING:
    from structured_agents.engines.transformers_engine import TransformersEngine

pytestmark = pytest.mark.model


def _tool(name: str, description: str, **params: str) -> dict[str, Any]:
    properties = {key: {"type": "string", "description": text} for key, text in params.items()}
    parameters = {"type": "object", "properties": properties, "required": list(params)}
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


TOOLS = [
    _tool("get_weather", "The weather in a city.", city="the city"),
    _tool("read_file", "Read a file of the repository.", path="file path"),
    _tool("send_email", "Send an email.", to="address", subject="subject line"),
]
REQUIRED = {t["function"]["name"]: set(t["function"]["parameters"]["required"]) for t in TOOLS}
PROMPTS = [
    "What is the weather in Paris?",
    "Is it raining in Tokyo right now?",
    "Open the file src/main.py",
    "Show me README.md",
    "Email bob@example.com about the meeting",
    "Tell alice@example.org that the build is green",
    "How hot is it in Cairo?",
    "Read docs/setup.md please",
    "Forecast for Oslo",
    "I need the contents of pyproject.toml",
    "Write to carol@example.net: lunch at noon",
    "Weather in São Paulo?",
    "cat tests/test_app.py",
    "Notify dave@example.com that the server is down",
    "Should I take an umbrella in London today?",
    "What does setup.cfg say?",
    "Send an email to team@example.com with subject Release",
    "Temperature in Reykjavik",
    "Look at Makefile",
    "Mail eve@example.com: thanks!",
]


@pytest.fixture(scope="module")
def url(engine: TransformersEngine) -> Iterator[str]:
    app = create_app(
        engine, plugin=FunctionGemmaPlugin, model_name="gemma", defaults=SamplingParams(max_new_tokens=64)
    )
    with serve_in_thread(app) as base:
        yield base


def _client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=1800)


def test_required_tool_choice_gives_a_parsable_call_for_every_prompt(url: str) -> None:
    client = _client(url)

    def ask(prompt: str) -> Any:
        return client.chat.completions.create(
            model="gemma",
            messages=[
                {"role": "system", "content": "You are an assistant that answers with one function call."},
                {"role": "user", "content": prompt},
            ],
            tools=TOOLS,
            tool_choice="required",
            parallel_tool_calls=False,
            max_tokens=96,
            frequency_penalty=0.5,
        )

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(ask, PROMPTS))
    for prompt, result in zip(PROMPTS, results, strict=True):
        choice = result.choices[0]
        assert choice.finish_reason == "tool_calls", (prompt, choice)
        (call,) = choice.message.tool_calls
        arguments = json.loads(call.function.arguments)
        assert call.function.name in REQUIRED and REQUIRED[call.function.name] <= set(arguments), (
            prompt,
            call,
        )


def test_streamed_tool_call_and_text(url: str) -> None:
    client = _client(url)
    stream = client.chat.completions.create(
        model="gemma",
        messages=[{"role": "user", "content": "What is the weather in Rome?"}],
        tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    calls = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
    assert [tc.function.name for tc in calls] == ["get_weather"]
    assert "city" in json.loads(calls[0].function.arguments)
    assert chunks[-2].choices[0].finish_reason == "tool_calls" and chunks[-1].usage is not None
    text = client.completions.create(
        model="gemma", prompt="The capital of France is", max_tokens=8, stream=True
    )
    pieces = list(text)
    assert len([p for p in pieces if p.choices[0].text]) > 1  # tokens went out as they were decoded


def test_a_client_that_disconnects_frees_its_batch_slot(url: str, engine: TransformersEngine) -> None:
    body = {"prompt": "Once upon a time", "max_tokens": 400, "stream": True}
    with httpx.stream("POST", f"{url}/v1/completions", json=body, timeout=600) as response:
        lines = response.iter_lines()
        assert next(line for line in lines if line.startswith("data: {"))
        assert engine.live_rows == 1
    deadline = time.monotonic() + 120
    while engine.live_rows and time.monotonic() < deadline:
        time.sleep(0.05)
    assert engine.live_rows == 0


def test_a_bad_grammar_fails_alone_among_good_requests(url: str) -> None:
    client = _client(url)
    bodies = [{"grammar": 'root ::= "yes" | "no"'}, {"grammar": "root ::= ("}, {"grammar": 'root ::= "ok"'}]
    with ThreadPoolExecutor(3) as pool:
        futures = [
            pool.submit(
                client.completions.create,
                model="gemma",
                prompt="Answer:",
                n=2,
                logprobs=2,
                extra_body={"structured_outputs": body},
            )
            for body in bodies
        ]
    yes_no, broken, ok = (f.exception() or f.result() for f in futures)
    assert isinstance(broken, openai.BadRequestError) and broken.body["param"] == "structured_outputs.grammar"
    assert [c.text for c in ok.choices] == ["ok", "ok"]
    for choice in yes_no.choices:
        assert choice.text in ("yes", "no") and choice.logprobs is not None
        assert "".join(choice.logprobs.tokens) == choice.text
        assert all(len(top) >= 2 for top in choice.logprobs.top_logprobs)
