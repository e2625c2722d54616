"""``sa serve``: an OpenAI-compatible HTTP endpoint over any :class:`Engine` (a CPU ``vllm serve``).

Routes: ``POST /v1/completions``, ``POST /v1/chat/completions``, ``GET /v1/models`` and
``GET /health``. Requests honour vLLM's ``structured_outputs`` (``grammar``, ``json`` or
``structural_tag``) and ``max_tokens``, ``temperature``, ``top_p``, ``seed``, ``stop``,
``frequency_penalty``.
Chat requests are rendered into the model's prompt by the plugin (a fresh instance per
request, since plugins remember the tools they were given) and its reply is parsed back into
``tool_calls``.

Concurrent requests are coalesced by a :class:`BatchingEngine`: it waits up to
``batch_wait_ms`` after the first request for more, flushes at ``max_batch_size``, and calls
the engine's ``generate`` from one worker thread, one batch at a time (engines need not be
thread-safe). A failed batch is retried request by request
(:class:`~structured_agents.serve.isolation.FailureIsolatingEngine`), so one client's bad
request does not fail the others batched with it.

Errors come back as OpenAI's ``{"error": {...}}`` body: 400 for requests that cannot be
served (the message names the field), 404 for an unknown model, 500 when the engine fails.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from structured_agents.engines.batching import BatchingEngine
from structured_agents.errors import ParseError, StructuredAgentsError
from structured_agents.kernel.engine import Completion, Engine, GenerationRequest, SamplingParams
from structured_agents.plugins.protocol import ModelPlugin
from structured_agents.serve.isolation import FailureIsolatingEngine, is_grammar_failure
from structured_agents.serve.schemas import (
    ApiError,
    ChatBody,
    CompletionBody,
    grammar_from_body,
    messages_from_openai,
    tools_from_openai,
)
from structured_agents.types import JsonDict

__all__ = ["create_app"]

log = logging.getLogger(__name__)

_ERROR_TYPES = {
    400: "BadRequestError",
    404: "NotFoundError",
    500: "InternalServerError",
    503: "ServiceUnavailable",
}


def _error(status: int, message: str, param: str | None = None) -> JSONResponse:
    body = {"message": message, "type": _ERROR_TYPES.get(status, "Error"), "param": param, "code": status}
    return JSONResponse({"error": body}, status_code=status)


def _usage(completions: Sequence[Completion]) -> JsonDict:
    prompt = sum(c.usage.prompt_tokens for c in completions)
    generated = sum(c.usage.completion_tokens for c in completions)
    return {"prompt_tokens": prompt, "completion_tokens": generated, "total_tokens": prompt + generated}


def _finish_reason(completion: Completion) -> str:
    return "length" if completion.finish_reason == "length" else "stop"


def _engine_failure(message: str, *, grammar: bool) -> ApiError:
    """A 400 when the engine rejected the request's grammar, else a 500 (as vLLM does)."""
    if grammar:
        return ApiError(f"the engine rejected the grammar: {message}", param="structured_outputs")
    return ApiError(f"the engine failed: {message}", status=500)


class _Service:
    """What the routes share: the batcher (set while the app runs), the plugin and the defaults."""

    def __init__(
        self, plugin: Callable[[], ModelPlugin] | None, model_name: str, defaults: SamplingParams
    ) -> None:
        self.plugin = plugin
        self.model_name = model_name
        self.defaults = defaults
        self.batcher: BatchingEngine | None = None
        self.created = int(time.time())

    def check_model(self, model: str | None) -> None:
        if model is not None and model != self.model_name:
            raise ApiError(
                f"The model `{model}` does not exist; this server serves `{self.model_name}`.", status=404
            )

    async def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        if self.batcher is None:
            raise ApiError("the server is not started (lifespan not run)", status=503)
        futures = [asyncio.wrap_future(self.batcher.submit(request)) for request in requests]
        try:
            completions = list(await asyncio.gather(*futures))
        except StructuredAgentsError as exc:
            raise _engine_failure(str(exc), grammar=is_grammar_failure(exc)) from exc
        for completion in completions:
            if completion.finish_reason == "error":
                error = (  # engines put the reason in metadata["error"] or in the text
                    completion.metadata.get("error")
                    or completion.text
                    or f"request {completion.request_id} ended in error"
                )
                raise _engine_failure(str(error), grammar=bool(completion.metadata.get("grammar_error")))
        return completions

    async def completions(self, body: CompletionBody) -> JsonDict:
        body.check()
        self.check_model(body.model)
        grammar = grammar_from_body(body.structured_outputs)
        sampling = body.sampling(self.defaults)
        prompts = [body.prompt] if isinstance(body.prompt, str) else body.prompt
        if not prompts:
            raise ApiError("prompt must not be empty", param="prompt")
        completions = await self.generate(
            [GenerationRequest(prompt=prompt, grammar=grammar, sampling=sampling) for prompt in prompts]
        )
        choices = [
            {"index": i, "text": c.text, "logprobs": None, "finish_reason": _finish_reason(c)}
            for i, c in enumerate(completions)
        ]
        return {
            "id": f"cmpl-{uuid.uuid4().hex}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": self.model_name,
            "choices": choices,
            "usage": _usage(completions),
        }

    async def chat(self, body: ChatBody) -> JsonDict:
        body.check()
        self.check_model(body.model)
        if self.plugin is None:
            raise ApiError("this server has no model plugin to render chat requests; start it with --plugin")
        plugin = self.plugin()
        grammar = grammar_from_body(body.structured_outputs)
        stop = tuple(plugin.request_options(None).get("stop") or ())
        try:
            prompt = plugin.render_prompt(messages_from_openai(body.messages), tools_from_openai(body.tools))
        except StructuredAgentsError as exc:
            raise ApiError(
                f"the {plugin.name} plugin cannot render these messages: {exc}", param="messages"
            ) from exc
        request = GenerationRequest(
            prompt=prompt,
            messages=tuple(body.messages),
            tools=tuple(body.tools or ()),
            grammar=grammar,
            sampling=body.sampling(self.defaults, extra_stop=stop),
        )
        (completion,) = await self.generate([request])
        finish = _finish_reason(completion)
        try:
            content, calls = plugin.parse_response(completion.text)
        except ParseError as exc:
            log.warning("returning unparsed text: %s", exc)
            content, calls = completion.text, []
        message: JsonDict = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = [call.to_openai_format() for call in calls]
            finish = "tool_calls"
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model_name,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
            "usage": _usage([completion]),
        }

    def models(self) -> JsonDict:
        card = {
            "id": self.model_name,
            "object": "model",
            "created": self.created,
            "owned_by": "structured-agents",
        }
        return {"object": "list", "data": [card]}


def create_app(
    engine: Engine,
    *,
    plugin: Callable[[], ModelPlugin] | None = None,
    model_name: str = "structured-agents",
    defaults: SamplingParams | None = None,
    max_batch_size: int = 8,
    batch_wait_ms: float = 10.0,
) -> FastAPI:
    """The FastAPI app serving ``engine``.

    Args:
        engine: decodes the batches (called from one worker thread, one batch at a time).
        plugin: builds the model plugin for chat requests (called once per request).
        model_name: the id ``/v1/models`` lists; requests naming another model get 404.
        defaults: sampling settings for fields a request leaves out.
        max_batch_size: most requests per ``generate`` call.
        batch_wait_ms: how long a batch waits for more requests after its first.
    """
    service = _Service(plugin, model_name, defaults or SamplingParams())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service.batcher = BatchingEngine(
            FailureIsolatingEngine(engine), max_batch_size=max_batch_size, max_wait_s=batch_wait_ms / 1000
        )
        try:
            yield
        finally:
            batcher, service.batcher = service.batcher, None
            await asyncio.to_thread(batcher.close)

    app = FastAPI(title="structured-agents", lifespan=lifespan)

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return _error(exc.status, exc.message, exc.param)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'] if p != 'body')}: {err['msg']}" for err in exc.errors()
        )
        return _error(400, f"invalid request: {problems}")

    @app.post("/v1/completions")
    async def completions(body: CompletionBody) -> dict[str, Any]:
        return await service.completions(body)

    @app.post("/v1/chat/completions")
    async def chat_completions(body: ChatBody) -> dict[str, Any]:
        return await service.chat(body)

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return service.models()

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    return app
