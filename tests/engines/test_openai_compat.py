"""OpenAICompatEngine: request bodies, and retries/timeouts/errors against a real HTTP server.

The server is a tiny FastAPI app run by uvicorn on 127.0.0.1 (``serve_in_thread``); each
route misbehaves in one way (503 twice, 429 with Retry-After, always 500, too slow...).
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from structured_agents.engines.openai_compat import (
    OpenAICompatEngine,
    RetryPolicy,
    build_body,
    parse_retry_after,
)
from structured_agents.errors import ConfigError, EngineError
from structured_agents.grammar.artifacts import EBNFGrammar, StructuralTagGrammar
from structured_agents.kernel.engine import GenerationRequest, SamplingParams
from structured_agents.serve import serve_in_thread

FAST_RETRY = RetryPolicy(max_retries=3, backoff_base_s=0.01, backoff_max_s=0.05)


def _ok(text: str) -> dict[str, object]:
    return {
        "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2},
    }


class Misbehaving:
    """Routes that fail in scripted ways; counts hits per route and tracks concurrency."""

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self.hit_times: dict[str, list[float]] = {}
        self.in_flight = 0
        self.max_in_flight = 0
        self.app = FastAPI()
        self.app.post("/{route}/v1/completions")(self.completions)

    async def completions(self, route: str, request: Request) -> JSONResponse:
        body = await request.json()
        key = f"{route}:{body.get('prompt')}"
        self.hits[key] += 1
        self.hit_times.setdefault(key, []).append(time.monotonic())
        n = self.hits[key]
        if route == "flaky" and n <= 2:
            return JSONResponse({"error": "warming up"}, status_code=503)
        if route == "ratelimited" and n == 1:
            return JSONResponse({"error": "slow down"}, status_code=429, headers={"Retry-After": "1"})
        if route == "broken":
            return JSONResponse({"error": {"message": "kaboom: model crashed"}}, status_code=500)
        if route == "partly" and body["prompt"] == "bad":
            return JSONResponse({"error": "structured_outputs.grammar is invalid"}, status_code=400)
        if route == "slow":
            await asyncio.sleep(3.0)
        if route == "garbled":
            return JSONResponse({"choices": []})
        if route == "bounded":
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            await asyncio.sleep(0.05)
            self.in_flight -= 1
        return JSONResponse(_ok(f"ok:{body['prompt']}"))


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Misbehaving]]:
    routes = Misbehaving()
    with serve_in_thread(routes.app) as url:
        yield url, routes


def _engine(url: str, route: str, **kwargs: object) -> OpenAICompatEngine:
    options: dict[str, object] = {"retry": FAST_RETRY, "timeout_s": 5.0, **kwargs}
    return OpenAICompatEngine(f"{url}/{route}/v1", **options)  # type: ignore[arg-type]


def test_completions_body_carries_prompt_sampling_and_grammar() -> None:
    grammar = EBNFGrammar('root ::= "a"')
    request = GenerationRequest(
        prompt="P",
        grammar=grammar,
        sampling=SamplingParams(
            max_new_tokens=9,
            temperature=0.5,
            seed=4,
            stop=("X",),
            frequency_penalty=-1,
            bad_words=("Y z", " w"),
        ),
    )
    assert build_body(request, "completions", "m") == {
        "model": "m",
        "prompt": "P",
        "max_tokens": 9,
        "temperature": 0.5,
        "top_p": 1.0,
        "seed": 4,
        "stop": ["X"],
        "frequency_penalty": -1,
        "bad_words": ["Y z"],
        "structured_outputs": {"grammar": 'root ::= "a"'},
    }


def test_chat_body_carries_messages_tools_and_structural_tag_string() -> None:
    tag = StructuralTagGrammar({"type": "structural_tag", "format": {"type": "const_string", "value": "x"}})
    messages = ({"role": "user", "content": "hi"},)
    tools = ({"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}},)
    body = build_body(GenerationRequest(prompt="", messages=messages, tools=tools, grammar=tag), "chat", None)
    assert body["messages"] == list(messages) and body["tools"] == list(tools)
    assert "model" not in body and "seed" not in body and "stop" not in body and "prompt" not in body
    assert body["structured_outputs"] == {"structural_tag": tag.tag_json}


def test_chat_without_messages_names_the_request(server: tuple[str, Misbehaving]) -> None:
    with (
        _engine(server[0], "ok", endpoint="chat") as engine,
        pytest.raises(EngineError, match=r"request 0 to .*messages"),
    ):
        engine.generate([GenerationRequest(prompt="only a prompt")])


def test_503_twice_then_success(server: tuple[str, Misbehaving]) -> None:
    url, routes = server
    with _engine(url, "flaky") as engine:
        (completion,) = engine.generate([GenerationRequest(prompt="a")])
    assert completion.text == "ok:a"
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (3, 2)
    assert routes.hits["flaky:a"] == 3


def test_429_retry_after_is_honoured(server: tuple[str, Misbehaving]) -> None:
    url, routes = server
    with _engine(url, "ratelimited") as engine:
        (completion,) = engine.generate([GenerationRequest(prompt="b")])
    first, second = routes.hit_times["ratelimited:b"]
    assert completion.text == "ok:b"
    assert second - first >= 0.95  # Retry-After: 1, not the 10 ms backoff


def test_persistent_500_is_an_engine_error_with_status_and_body(server: tuple[str, Misbehaving]) -> None:
    url, routes = server
    with _engine(url, "broken") as engine, pytest.raises(EngineError) as caught:
        engine.generate([GenerationRequest(prompt="c")])
    message = str(caught.value)
    assert "request 0" in message and f"{url}/broken/v1/completions" in message
    assert "HTTP 500" in message and "kaboom: model crashed" in message and "4 attempts" in message
    assert routes.hits["broken:c"] == 4


def test_400_is_not_retried_and_names_the_failing_index(server: tuple[str, Misbehaving]) -> None:
    url, routes = server
    requests = [GenerationRequest(prompt=p) for p in ("good", "bad", "fine")]
    with _engine(url, "partly") as engine, pytest.raises(EngineError, match=r"request 1 .*HTTP 400.*grammar"):
        engine.generate(requests)
    assert routes.hits["partly:bad"] == 1


def test_timeout_is_an_engine_error(server: tuple[str, Misbehaving]) -> None:
    started = time.monotonic()
    with (
        _engine(server[0], "slow", timeout_s=0.2) as engine,
        pytest.raises(EngineError, match=r"request 0 .*timed out after 0.2 s"),
    ):
        engine.generate([GenerationRequest(prompt="d")])
    assert time.monotonic() - started < 2.5  # the server takes 3 s


def test_unexpected_body_is_an_engine_error(server: tuple[str, Misbehaving]) -> None:
    with _engine(server[0], "garbled") as engine, pytest.raises(EngineError, match="unexpected body"):
        engine.generate([GenerationRequest(prompt="e")])


def test_connection_refused_is_retried_then_reported() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    engine = OpenAICompatEngine(f"http://127.0.0.1:{port}/v1", retry=FAST_RETRY)
    with engine, pytest.raises(EngineError, match=r"request 0 .*after 4 attempts; last: connection error"):
        engine.generate([GenerationRequest(prompt="f")])


def test_concurrency_is_bounded_and_order_kept(server: tuple[str, Misbehaving]) -> None:
    url, routes = server
    with _engine(url, "bounded", max_concurrency=2) as engine:
        completions = engine.generate([GenerationRequest(prompt=str(i)) for i in range(6)])
    assert [c.text for c in completions] == [f"ok:{i}" for i in range(6)]
    assert {c.batch_size for c in completions} == {6}
    assert routes.max_in_flight == 2


def test_generate_works_inside_a_running_event_loop(server: tuple[str, Misbehaving]) -> None:
    async def agent() -> str:
        with _engine(server[0], "ok") as engine:
            return engine.generate([GenerationRequest(prompt="g")])[0].text

    assert asyncio.run(agent()) == "ok:g"


def test_closed_engine_refuses_work(server: tuple[str, Misbehaving]) -> None:
    engine = _engine(server[0], "ok")
    engine.close()
    with pytest.raises(EngineError, match="closed"):
        engine.generate([GenerationRequest(prompt="h")])


def test_retry_after_header_forms() -> None:
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("2.5") == 2.5
    assert parse_retry_after("Wed, 01 Jan 2025 12:00:30 GMT", now=now) == 30.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_backoff_grows_with_jitter_and_caps() -> None:
    policy = RetryPolicy(backoff_base_s=1.0, backoff_max_s=4.0, retry_after_max_s=10.0)
    for retry, cap in [(0, 1.0), (1, 2.0), (2, 4.0), (5, 4.0)]:
        delays = {policy.delay_s(retry) for _ in range(20)}
        assert all(cap / 2 <= d <= cap for d in delays) and len(delays) > 1
    assert policy.delay_s(0, retry_after_s=3.0) == 3.0
    assert policy.delay_s(0, retry_after_s=600.0) == 10.0


def test_invalid_configuration_names_the_field() -> None:
    with pytest.raises(ConfigError, match=r"base_url.*'localhost:8000'"):
        OpenAICompatEngine("localhost:8000")
    with pytest.raises(ConfigError, match="max_retries"):
        RetryPolicy(max_retries=-1)
