"""``sa serve`` over real HTTP: a FunctionEngine behind the app, OpenAICompatEngine in front.

The server runs with uvicorn on 127.0.0.1 (``serve_in_thread``); the client side is the
project's own OpenAICompatEngine or plain httpx for the error cases. The server-side engine
records every batch, so the tests see exactly what reached it.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from structured_agents.cli.main import app as cli
from structured_agents.engines.function import BatchInfo, FunctionEngine
from structured_agents.engines.openai_compat import OpenAICompatEngine, RetryPolicy
from structured_agents.errors import EngineError, GrammarError
from structured_agents.grammar.artifacts import (
    EBNFGrammar,
    GrammarArtifact,
    JsonSchemaGrammar,
    StructuralTagGrammar,
)
from structured_agents.kernel.engine import GenerationRequest, SamplingParams
from structured_agents.plugins.function_gemma import FunctionGemmaPlugin
from structured_agents.serve import create_app, serve_in_thread
from structured_agents.serve.schemas import ApiError, CompletionBody
from structured_agents.types import Message, ToolCall, ToolSchema

READ_FILE = ToolSchema(
    "read_file",
    "Read a file.",
    {
        "type": "object",
        "properties": {"path": {"type": "string"}, "lines": {"type": "integer"}},
        "required": ["path"],
    },
)
CALL = ToolCall("read_file", {"path": "src/app.py", "lines": 20})
ARTIFACTS: list[GrammarArtifact] = [
    EBNFGrammar('root ::= "call:" [a-z]+'),
    StructuralTagGrammar({"type": "structural_tag", "format": {"type": "const_string", "value": "x"}}),
    JsonSchemaGrammar({"type": "object", "properties": {"path": {"type": "string"}}}),
]


def reply(request: GenerationRequest, info: BatchInfo) -> str:
    """The server-side 'model': native FunctionGemma calls for chat, an echo for completions."""
    if request.prompt.endswith("explode"):
        raise RuntimeError("GPU on fire")
    if request.prompt.endswith("bad-grammar"):
        raise GrammarError("unexpected token at 3")
    if request.messages:
        return FunctionGemmaPlugin().render_tool_calls([CALL], [READ_FILE])
    return f"echo:{request.prompt}"


@dataclass
class Server:
    url: str
    engine: FunctionEngine

    def client(self, **kwargs: object) -> OpenAICompatEngine:
        options: dict[str, object] = {"retry": RetryPolicy(max_retries=0), "timeout_s": 10.0, **kwargs}
        return OpenAICompatEngine(f"{self.url}/v1", **options)  # type: ignore[arg-type]

    def seen(self, since: int) -> list[GenerationRequest]:
        return [request for batch in self.engine.batches[since:] for request in batch]


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    engine = FunctionEngine(reply)
    app = create_app(
        engine,
        plugin=FunctionGemmaPlugin,
        model_name="tiny",
        defaults=SamplingParams(max_new_tokens=32),
        max_batch_size=8,
        batch_wait_ms=50,
    )
    with serve_in_thread(app) as url:
        yield Server(url, engine)


def test_models_lists_the_served_model(server: Server) -> None:
    data = httpx.get(f"{server.url}/v1/models").json()
    assert [card["id"] for card in data["data"]] == ["tiny"]


@pytest.mark.parametrize("artifact", ARTIFACTS, ids=lambda a: a.kind)
def test_completions_carry_grammar_and_sampling_intact(server: Server, artifact: GrammarArtifact) -> None:
    sampling = SamplingParams(
        max_new_tokens=17,
        temperature=0.4,
        top_p=0.8,
        seed=5,
        stop=("<end>",),
        frequency_penalty=0.25,
        bad_words=("a copied line",),
    )
    since = len(server.engine.batches)
    with server.client(model="tiny") as client:
        (completion,) = client.generate(
            [GenerationRequest(prompt="hello", grammar=artifact, sampling=sampling)]
        )
    assert completion.text == "echo:hello" and completion.finish_reason == "stop"
    (seen,) = server.seen(since)
    assert seen.grammar == artifact
    assert seen.sampling == sampling


def test_bad_words_keep_vllms_meaning_whatever_their_spaces() -> None:
    body = CompletionBody(model="tiny", prompt="p", bad_words=[" call", "copied line"])
    assert body.sampling(SamplingParams()).bad_words == ("call", "copied line")
    with pytest.raises(ApiError, match="non-blank"):
        CompletionBody(model="tiny", prompt="p", bad_words=["  "]).sampling(SamplingParams())


def test_missing_sampling_fields_use_the_server_defaults(server: Server) -> None:
    since = len(server.engine.batches)
    response = httpx.post(f"{server.url}/v1/completions", json={"prompt": "x"})
    assert response.status_code == 200, response.text
    (seen,) = server.seen(since)
    assert seen.sampling == SamplingParams(max_new_tokens=32) and seen.grammar is None


def test_chat_renders_with_the_plugin_and_returns_tool_calls(server: Server) -> None:
    messages = (Message.system("You read code."), Message.user("Open src/app.py"))
    request = GenerationRequest(
        prompt="",
        messages=tuple(m.to_openai_format() for m in messages),
        tools=(READ_FILE.to_openai_format(),),
        grammar=ARTIFACTS[0],
    )
    since = len(server.engine.batches)
    with server.client(endpoint="chat") as client:
        (completion,) = client.generate([request])
    (seen,) = server.seen(since)
    assert seen.prompt == FunctionGemmaPlugin().render_prompt(messages, [READ_FILE])
    assert seen.grammar == ARTIFACTS[0]
    assert "<end_of_turn>" in seen.sampling.stop  # the plugin's stop strings
    assert completion.text == "" and len(completion.tool_calls_raw) == 1
    content, calls = FunctionGemmaPlugin().parse_response(
        completion.text, [READ_FILE], completion.tool_calls_raw
    )
    assert content is None
    assert [(c.name, c.arguments) for c in calls] == [(CALL.name, CALL.arguments)]


def test_concurrent_requests_are_batched(server: Server) -> None:
    since = len(server.engine.batches)
    with server.client(max_concurrency=8) as client:
        completions = client.generate([GenerationRequest(prompt=f"p{i}") for i in range(6)])
    assert [c.text for c in completions] == [f"echo:p{i}" for i in range(6)]
    sizes = server.engine.batch_sizes[since:]
    assert sum(sizes) == 6 and max(sizes) > 1, sizes


def test_a_list_of_prompts_gets_one_choice_each(server: Server) -> None:
    data = httpx.post(f"{server.url}/v1/completions", json={"prompt": ["a", "b"], "max_tokens": 4}).json()
    assert [(c["index"], c["text"]) for c in data["choices"]] == [(0, "echo:a"), (1, "echo:b")]


@pytest.mark.parametrize(
    ("body", "status", "expected"),
    [
        (
            {"prompt": "x", "structured_outputs": {"regex": "[a-z]+"}},
            400,
            "structured_outputs.regex is not supported",
        ),
        ({"prompt": "x", "structured_outputs": {"grammar": "g", "json": {}}}, 400, "exactly one"),
        (
            {"prompt": "x", "structured_outputs": {"structural_tag": "{not json"}},
            400,
            "invalid structured_outputs.structural_tag",
        ),
        ({"prompt": "x", "structured_outputs": {"grammar": "g", "whitespace_pattern": " "}}, 400, "options"),
        ({"prompt": "x", "temperature": -1}, 400, "temperature"),
        ({"prompt": "x", "model": "gpt-9"}, 404, "gpt-9"),
        ({"prompt": "bad-grammar"}, 400, "does not compile"),
        ({"prompt": "explode"}, 500, "GPU on fire"),
    ],
)
def test_errors_are_openai_error_bodies(
    server: Server, body: dict[str, object], status: int, expected: str
) -> None:
    response = httpx.post(f"{server.url}/v1/completions", json=body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert expected in error["message"] and error["code"] == status


def test_chat_with_an_unknown_role_is_a_400_naming_the_message(server: Server) -> None:
    body = {"messages": [{"role": "user", "content": "hi"}, {"role": "robot", "content": "?"}]}
    response = httpx.post(f"{server.url}/v1/chat/completions", json=body)
    assert response.status_code == 400 and "messages[1].role" in response.json()["error"]["message"]


def test_client_reports_server_errors_with_status_and_body(server: Server) -> None:
    good, bad = GenerationRequest(prompt="hi"), GenerationRequest(prompt="bad-grammar")
    with server.client() as client, pytest.raises(EngineError) as caught:
        client.generate([good, bad])
    message = str(caught.value)
    assert "request 1 " in message and "HTTP 400" in message and "does not compile" in message
    assert "more of" not in message  # the good request shared the batch and still succeeded


def test_a_bad_request_does_not_fail_its_batch_mates(server: Server) -> None:
    async def both() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=server.url) as client:
            return list(
                await asyncio.gather(
                    client.post("/v1/completions", json={"prompt": "fine"}),
                    client.post("/v1/completions", json={"prompt": "explode"}),
                )
            )

    since = len(server.engine.batches)
    fine, exploded = asyncio.run(both())
    assert server.engine.batch_sizes[since] == 2  # batched together, then retried one by one
    assert fine.status_code == 200 and fine.json()["choices"][0]["text"] == "echo:fine"
    assert exploded.status_code == 500 and "GPU on fire" in exploded.json()["error"]["message"]


def test_cli_rejects_an_unknown_engine() -> None:
    result = CliRunner().invoke(cli, ["serve", "--engine", "warp-drive"])
    assert result.exit_code == 2
    assert "SA_ENGINE__NAME='warp-drive'" in result.output


def test_cli_serves_a_scripted_engine(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["scripted reply"]))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = "from structured_agents.cli.main import app; app()"
    args = ["serve", "--engine", "scripted", "--model", str(script), "--port", str(port)]
    process = subprocess.Popen([sys.executable, "-c", command, *args], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "sa serve did not start"
            time.sleep(0.1)
        data = httpx.post(f"http://127.0.0.1:{port}/v1/completions", json={"prompt": "go"}).json()
        assert data["choices"][0]["text"] == "scripted reply"
        assert data["model"] == str(script)
    finally:
        process.terminate()
        process.communicate(timeout=10)


@pytest.mark.model
def test_real_model_behind_sa_serve_returns_grammar_valid_calls() -> None:
    """The shipped model (TransformersEngine, built from settings) behind the server, over HTTP."""
    from structured_agents.engines.factory import create_engine
    from structured_agents.grammar.config import GrammarConfig
    from structured_agents.settings import EngineSettings

    settings = EngineSettings(name="transformers", device="cpu")
    defaults = SamplingParams(max_new_tokens=48)
    app = create_app(create_engine(settings), plugin=FunctionGemmaPlugin, defaults=defaults)
    config = GrammarConfig(mode="ebnf", allow_parallel_calls=False)
    request = GenerationRequest(
        prompt="",
        messages=(Message.user("Show me the first 20 lines of src/app.py").to_openai_format(),),
        tools=(READ_FILE.to_openai_format(),),
        grammar=FunctionGemmaPlugin().build_grammar([READ_FILE], config),
    )
    with serve_in_thread(app) as url, OpenAICompatEngine(f"{url}/v1", endpoint="chat") as client:
        (completion,) = client.generate([request])
    _, calls = FunctionGemmaPlugin().parse_response(completion.text, [READ_FILE], completion.tool_calls_raw)
    assert [c.name for c in calls] == ["read_file"] and isinstance(calls[0].arguments["path"], str)


def test_a_body_nested_hundreds_deep_is_a_400_and_the_next_request_is_served(server: Server) -> None:
    """A tool schema nested 300 deep ended the plugin's recursive walk of it in a 500."""
    schema: dict[str, object] = {}
    for _ in range(300):
        schema = {"type": "object", "properties": {"p": schema}}
    tool = {"type": "function", "function": {"name": "deep", "parameters": schema}}
    body = {"messages": [{"role": "user", "content": "hi"}], "tools": [tool]}
    response = httpx.post(f"{server.url}/v1/chat/completions", json=body)
    assert response.status_code == 400, response.text
    assert "(body).tools.0.function" in response.text and "nested deeper than 64 levels" in response.text
    ordinary = {"messages": [{"role": "user", "content": "hi"}], "tools": [READ_FILE.to_openai_format()]}
    assert httpx.post(f"{server.url}/v1/chat/completions", json=ordinary, timeout=30).status_code == 200
