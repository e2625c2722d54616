"""Hostile input against ``sa serve`` on the real model behind a real uvicorn server.

Each probe is refused with a 400 naming the field, or bounded (cut at the token limit, cancelled
when its client goes); after each, an ordinary request is served promptly. The load: twenty
clients at once, eight of them giving up on long requests, and a plain request still answered
in under five seconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from structured_agents.kernel.engine import SamplingParams
from structured_agents.plugins.function_gemma import FunctionGemmaPlugin
from structured_agents.serve import create_app, serve_in_thread
from structured_agents.serve.http import RequestsInTime

if TYPE_CHECKING:
    from structured_agents.engines.transformers_engine import TransformersEngine

pytestmark = pytest.mark.model

MAX_TOKENS = 512
"""The server's bound on a request's ``max_tokens``."""


@pytest.fixture(scope="module")
def url(engine: TransformersEngine) -> Iterator[str]:
    app = create_app(
        engine,
        plugin=FunctionGemmaPlugin,
        model_name="gemma",
        defaults=SamplingParams(max_new_tokens=32),
        max_tokens=MAX_TOKENS,
    )
    with serve_in_thread(app) as base:
        yield base


def _post(url: str, body: dict[str, Any], timeout: float = 120) -> httpx.Response:
    return httpx.post(f"{url}/v1/completions", json={"model": "gemma", **body}, timeout=timeout)


def _plain_is_prompt(url: str, within_s: float = 5.0) -> None:
    started = time.monotonic()
    answer = _post(url, {"prompt": "The capital of France is", "max_tokens": 4})
    assert answer.status_code == 200, answer.text
    assert time.monotonic() - started < within_s


def _refused(answer: httpx.Response, param: str) -> str:
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["param"] == param, error
    return str(error["message"])


def test_a_grammar_that_never_ends_is_cut_at_the_token_limit(url: str) -> None:
    started = time.monotonic()
    answer = _post(
        url, {"prompt": "A", "max_tokens": 24, "structured_outputs": {"grammar": 'root ::= "a" root'}}
    )
    assert answer.status_code == 200, answer.text
    (choice,) = answer.json()["choices"]
    assert choice["finish_reason"] == "length" and set(choice["text"]) <= {"a"}
    assert time.monotonic() - started < 60
    _plain_is_prompt(url)


def test_a_grammar_that_matches_nothing_is_a_400(url: str) -> None:
    body = {"prompt": "A", "structured_outputs": {"grammar": "root ::= [^\\x00-\\U0010FFFF]"}}
    message = _refused(_post(url, body), "structured_outputs.grammar")
    assert "allows no token" in message or "compile" in message
    _plain_is_prompt(url)


def test_a_self_referencing_schema_is_served_or_refused_never_a_500(url: str) -> None:
    for schema in ({"$ref": "#"}, {"properties": {"a": {"$ref": "#"}}, "required": ["a"], "type": "object"}):
        answer = _post(url, {"prompt": "{", "max_tokens": 24, "structured_outputs": {"json": schema}})
        assert answer.status_code in (200, 400), answer.text
        if answer.status_code == 400:
            assert answer.json()["error"]["param"] == "structured_outputs.json"
    _plain_is_prompt(url)


def test_a_grammar_over_the_size_budget_is_a_400_in_moments(url: str) -> None:
    rules = [f"r{i} ::= [a-z] r{i + 1} | [0-9]" for i in range(2500)]  # 5,000 character classes
    grammar = "\n".join(["root ::= r0", *rules, 'r2500 ::= "z"'])
    started = time.monotonic()
    body = {"prompt": "A", "structured_outputs": {"grammar": grammar}}
    message = _refused(_post(url, body), "structured_outputs.grammar")
    assert "too large to compile" in message and time.monotonic() - started < 10
    _plain_is_prompt(url)


def test_token_budgets_and_seeds_out_of_range_are_400s_naming_the_field(url: str) -> None:
    _refused(_post(url, {"prompt": "A", "max_tokens": 10**30}), "max_tokens")
    _refused(_post(url, {"prompt": "A", "max_tokens": MAX_TOKENS + 1}), "max_tokens")
    chat = {"model": "gemma", "messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 10**6}
    _refused(httpx.post(f"{url}/v1/chat/completions", json=chat, timeout=60), "max_completion_tokens")
    for seed in (10**23, 2**64, -(2**64)):
        answer = _post(url, {"prompt": "A", "seed": seed, "temperature": 1.0, "max_tokens": 2})
        assert answer.status_code == 400 and "seed" in answer.text, answer.text
    assert _post(url, {"prompt": "A", "seed": 2**62, "temperature": 1.0, "max_tokens": 2}).status_code == 200


def test_a_grammar_whose_matching_work_grows_each_token_is_ended_in_moments(url: str) -> None:
    """Nested repetitions compile, then each token's matching costs more than the last (148 s
    for 20 tokens, the whole batch waiting): the row ends once one token's work is over budget."""
    grammar = 'root ::= ((("a"{0,1000}){0,1000}){0,1000})'
    started = time.monotonic()
    answer = _post(url, {"prompt": "Hello", "max_tokens": 40, "structured_outputs": {"grammar": grammar}})
    message = _refused(answer, "structured_outputs.grammar")
    assert "to advance one token" in message and time.monotonic() - started < 30, message
    _plain_is_prompt(url)


def test_a_tiny_temperature_or_top_p_is_served_and_fails_no_neighbour(url: str) -> None:
    """``1e-320`` is 0 in float32: the division made every row of the batch fail with a 500."""
    tiny = [{"temperature": 1e-320}, {"temperature": 1.0, "top_p": 1e-320}]
    with ThreadPoolExecutor(5) as pool:
        neighbours = [pool.submit(_post, url, {"prompt": "Water is", "max_tokens": 48}) for _ in range(3)]
        time.sleep(0.5)
        probes = [pool.submit(_post, url, {"prompt": "a", "max_tokens": 4, **fields}) for fields in tiny]
        assert [f.result().status_code for f in neighbours + probes] == [200] * 5


def _chat(url: str, **fields: Any) -> httpx.Response:
    body = {"model": "gemma", "messages": [{"role": "user", "content": "hi"}], **fields}
    return httpx.post(f"{url}/v1/chat/completions", json=body, timeout=120)


def _tool(parameters: Any, name: str = "f") -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def test_what_a_small_body_can_ask_is_bounded_and_refused_in_moments(url: str) -> None:
    """Each of these held the server for seconds to minutes, used gigabytes or ended in a 500."""
    started = time.monotonic()
    assert _refused(_post(url, {"prompt": ["a"] * 100, "n": 2, "max_tokens": 1}), "prompt").startswith(
        "100 prompts with n=2 ask for 200 choices"
    )
    many = _chat(url, tools=[_tool({"type": "object"}, f"t{i}") for i in range(129)])
    assert many.status_code == 400 and "tools" in many.text, many.text
    items = {"type": "object", "properties": {"xs": {"type": "array", "minItems": 10**7}}, "required": ["xs"]}
    assert "minItems" in _refused(_chat(url, tools=[_tool(items)], tool_choice="required"), "tools")
    wide = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(3000)}}
    _refused(_chat(url, tools=[_tool(wide)], tool_choice="required"), "tools")
    _refused(_chat(url, tools=[_tool("not a schema")]), "tools[0].function.parameters")
    tool_calls = _chat(url, messages=[{"role": "assistant", "content": "x", "tool_calls": 5}])
    assert tool_calls.status_code == 400 and "tool_calls must be a list" in tool_calls.text, tool_calls.text
    nested = "[" * 100_000 + "]" * 100_000
    _refused(_post(url, {"prompt": "A", "structured_outputs": {"json": nested}}), "structured_outputs.json")
    body = '{"model": "gemma", "prompt": "\\ud800 hi", "max_tokens": 2}'  # JSON's escape of a lone surrogate
    surrogate = httpx.post(
        f"{url}/v1/completions", content=body, headers={"content-type": "application/json"}
    )
    assert surrogate.status_code == 400 and "surrogate" in surrogate.text, surrogate.text
    assert time.monotonic() - started < 60
    too_long = _post(url, {"prompt": "word " * 40_000, "max_tokens": 2})
    assert too_long.status_code == 400 and "'s context is" in too_long.text, too_long.text
    assert httpx.get(f"{url}/docs", timeout=10).status_code == 404
    assert httpx.get(f"{url}/openapi.json", timeout=10).status_code == 404
    _plain_is_prompt(url)


def test_what_a_probe_found_ending_in_a_500_is_a_400_naming_the_field(url: str) -> None:
    """A tool call's arguments as a JSON string nested 100,000 deep (``json.loads`` ran out of
    stack), a ``tool_call_id`` that is a list, and a lone surrogate in a key (the error naming
    the key could not be encoded) each ended in a 500; a library's build paths were quoted in
    a grammar's 400; 100,000 stop strings made each token of the batch 28 times slower."""
    deep = "[" * 100_000 + "]" * 100_000
    call = {"role": "assistant", "tool_calls": [{"function": {"name": "x", "arguments": deep}}]}
    assert "tool_calls[0] is not an OpenAI tool call: arguments nested too deep" in _refused(
        _chat(url, messages=[call]), "messages"
    )
    listed = {"role": "tool", "content": "x", "tool_call_id": [1, 2]}
    assert "messages[0].tool_call_id must be a string" in _refused(_chat(url, messages=[listed]), "messages")
    raw = '{"model": "gemma", "messages": [{"role": "user", "content": "a", "\\ud800": 1}]}'
    key = httpx.post(f"{url}/v1/chat/completions", content=raw, headers={"content-type": "application/json"})
    assert key.status_code == 400 and "surrogate" in key.text, key.text
    backreference = {"type": "string", "pattern": "(a)\\1"}
    message = _refused(
        _post(url, {"prompt": "A", "structured_outputs": {"json": backreference}}), "structured_outputs.json"
    )
    assert "Backreference" in message and ".cc:" not in message and "/project" not in message
    for stop in (["x"] * 65, "x" * 257):
        answer = _post(url, {"prompt": "A", "max_tokens": 2, "stop": stop})
        assert answer.status_code == 400 and "stop" in answer.text, answer.text
    assert _post(url, {"prompt": "A", "max_tokens": 2, "stop": ["x" * 256] * 64}).status_code == 200
    _plain_is_prompt(url)


def test_a_body_trickled_in_is_cut_and_the_next_request_served(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whole headers, then a byte of body now and then, with no key, on a path outside ``/v1``:
    20,000 such connections held ``sa serve`` at its open-file limit."""
    monkeypatch.setattr(RequestsInTime, "body_timeout_s", 1.0)
    host, port = url.removeprefix("http://").split(":")
    head = b"POST /nonexistent HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"
    clients = [socket.create_connection((host, int(port))) for _ in range(50)]
    for client in clients:
        client.sendall(head)
    started = time.monotonic()
    for client in clients:
        client.settimeout(10)
        with contextlib.suppress(ConnectionResetError):
            while client.recv(4096):
                pass
        client.close()
    assert time.monotonic() - started < 10  # closed, not answered after the full body
    _plain_is_prompt(url)


def _abandon(url: str) -> None:
    """A client that asks for the server's most tokens, then gives up after half a second."""
    body = {"model": "gemma", "prompt": "Once upon a time", "max_tokens": MAX_TOKENS}
    try:
        httpx.post(f"{url}/v1/completions", json=body, timeout=0.5)
    except httpx.TimeoutException:
        return
    raise AssertionError("the abandoning client got an answer within half a second")


def test_twenty_clients_eight_abandoning_leave_a_plain_request_served_in_seconds(
    url: str, engine: TransformersEngine
) -> None:
    def ordinary(_: int) -> int:
        return _post(url, {"prompt": "Water is", "max_tokens": 8}).status_code

    with ThreadPoolExecutor(20) as pool:
        abandoned = [pool.submit(_abandon, url) for _ in range(8)]
        served = [pool.submit(ordinary, i) for i in range(12)]
        for future in abandoned:
            future.result()
        assert [future.result() for future in served] == [200] * 12
    deadline = time.monotonic() + 10
    while engine.live_rows and time.monotonic() < deadline:  # the abandoned rows leave the batch
        time.sleep(0.1)
    assert engine.live_rows == 0
    _plain_is_prompt(url)


def test_a_stream_with_more_choices_than_the_batch_leaves_when_its_client_does(
    url: str, engine: TransformersEngine
) -> None:
    """Its headers wait until every choice has started, the last ones only as the first end:
    a client that gives up meanwhile is noticed, and no choice decodes on for nobody."""
    body = json.dumps({"prompt": "Once upon a time", "max_tokens": MAX_TOKENS, "n": 16, "stream": True})
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as client:
        head = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        client.sendall(f"{head}Content-Length: {len(body)}\r\n\r\n{body}".encode())
        time.sleep(1.0)
    deadline = time.monotonic() + 10
    while engine.live_rows and time.monotonic() < deadline:
        time.sleep(0.1)
    assert engine.live_rows == 0
    _plain_is_prompt(url)


def test_sa_serve_kills_a_slow_compile_and_ends_within_its_shutdown_bound_on_sigterm(
    tmp_path: Path,
) -> None:
    port = _free_port()
    env = {
        **os.environ,
        "SA_SERVE__SHUTDOWN_TIMEOUT_S": "2",
        "SA_SERVE__MAX_TOKENS": "100000",
        "SA_SERVE__COMPILE_TIMEOUT_S": "3",
    }
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "sa"), "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "serve.log").open("wb"),
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            time.sleep(0.5)
        # a grammar within the size budget that compiles for longer than the time budget (3 s):
        # refused when its child process is killed, and the next request is served at once
        rules = [f"r{i} ::= [a-z] r{i + 1} | [0-9]" for i in range(1500)]
        chain = "\n".join(["root ::= r0", *rules, 'r1500 ::= "z"'])
        started = time.monotonic()
        slow = httpx.post(
            f"{base}/v1/completions",
            json={"prompt": "A", "structured_outputs": {"grammar": chain}},
            timeout=60,
        )
        assert slow.status_code == 400 and "did not compile within 3 s" in slow.text, slow.text
        assert time.monotonic() - started < 10
        plain = httpx.post(f"{base}/v1/completions", json={"prompt": "Water is", "max_tokens": 4}, timeout=60)
        assert plain.status_code == 200
        body = {"prompt": "Once upon a time", "max_tokens": 100000, "stream": True}
        with ThreadPoolExecutor(1) as pool:
            pool.submit(lambda: _stream_until_cut(base, body))
            time.sleep(2)  # decoding now, and would go on for minutes
            started = time.monotonic()
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
        assert time.monotonic() - started < 15, (tmp_path / "serve.log").read_text()[-2000:]
    finally:
        if server.poll() is None:
            server.kill()


def _stream_until_cut(base: str, body: dict[str, Any]) -> None:
    with (
        contextlib.suppress(httpx.HTTPError),
        httpx.stream("POST", f"{base}/v1/completions", json=body, timeout=60) as r,
    ):
        for _ in r.iter_lines():
            pass


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_metrics_count_the_requests_and_read_the_engine(url: str) -> None:
    _plain_is_prompt(url)
    scraped = httpx.get(f"{url}/metrics", timeout=30)
    assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(scraped.text)
        for sample in family.samples
    }
    assert samples[("vllm:num_requests_running", ())] == 0
    assert samples[("vllm:prompt_tokens_total", ())] > 0 and samples[("vllm:generation_tokens_total", ())] > 0
    assert samples[("vllm:e2e_request_latency_seconds_count", ())] >= 1
    assert samples[("sa_engine_decode_steps_total", ())] > 0
    assert samples[("sa_grammar_cache_misses_total", ())] >= 1  # the grammars of the probes above
    assert ("sa_engine_seconds_total", (("phase", "decode"),)) in samples
