"""``sa serve``: an OpenAI-compatible HTTP endpoint over any :class:`Engine` (a CPU ``vllm serve``).

Routes: ``POST /v1/completions``, ``POST /v1/chat/completions``, ``GET /v1/models`` and
``GET /health``. Requests honour vLLM's ``structured_outputs`` (``grammar``, ``json`` or
``structural_tag``), OpenAI's sampling fields, ``n``, ``logprobs``, ``stream`` (Server-Sent
Events in OpenAI's chunk format, with ``stream_options.include_usage``) and, for chat,
``tools``, ``tool_choice`` and ``parallel_tool_calls`` (:mod:`.tool_choice`). Chat requests
are rendered into the model's prompt by the plugin (a fresh instance per request, since plugins
remember the tools they were given) and its reply is parsed back into ``tool_calls``.

Requests reach the engine through a :class:`BatchingEngine`. An engine that batches
continuously (transformers, vLLM) gets each request at once and admits it between decode
steps; tokens stream as they are decoded. Any other engine is fed in batches (up to
``max_batch_size``, waiting ``batch_wait_ms`` after the first request for more), each failed
batch retried request by request (:class:`~structured_agents.serve.isolation.FailureIsolatingEngine`)
so one client's bad request does not fail the others; its streams get the whole text at once.

Errors come back as OpenAI's ``{"error": {...}}`` body: 400 for requests that cannot be served
(the message names the field: a grammar that does not compile names
``structured_outputs.grammar``, ``.json`` or ``.structural_tag``), 401 without the API key,
404 for an unknown model, 413 for a body over the limit (:mod:`structured_agents.guard`), 500 when the engine
fails.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse

from structured_agents.engines.batching import BatchingEngine
from structured_agents.guard import Guard
from structured_agents.kernel.engine import Engine, SamplingParams
from structured_agents.metrics import CONTENT_TYPE, ServeMetrics, scrape
from structured_agents.plugins.protocol import ModelPlugin
from structured_agents.serve.isolation import FailureIsolatingEngine
from structured_agents.serve.schemas import ApiError, ChatBody, CompletionBody
from structured_agents.serve.service import ClientGone, Service
from structured_agents.types import JsonDict

__all__ = ["create_app"]

_ERROR_TYPES = {
    400: "BadRequestError",
    401: "AuthenticationError",
    413: "RequestTooLarge",
    404: "NotFoundError",
    500: "InternalServerError",
    503: "ServiceUnavailable",
}


def openai_refusal(status: int, message: str, param: str | None = None) -> dict[str, Any]:
    """OpenAI's error body."""
    kind = _ERROR_TYPES.get(status, "Error")
    return {"error": {"message": message, "type": kind, "param": param, "code": status}}


def _error(status: int, message: str, param: str | None = None) -> JSONResponse:
    return JSONResponse(openai_refusal(status, message, param), status_code=status)


def _respond(result: JsonDict | AsyncIterator[str]) -> Any:
    if isinstance(result, dict):
        return result
    return StreamingResponse(result, media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


def create_app(
    engine: Engine,
    *,
    plugin: Callable[[], ModelPlugin] | None = None,
    model_name: str = "structured-agents",
    defaults: SamplingParams | None = None,
    max_batch_size: int = 8,
    batch_wait_ms: float = 10.0,
    api_key: str | None = None,
    max_body_bytes: int = 1 << 20,
    max_tokens: int | None = None,
) -> FastAPI:
    """The FastAPI app serving ``engine``.

    Args:
        engine: decodes the requests (an engine that does not stream is called from one
            worker thread, one batch at a time).
        plugin: builds the model plugin for chat requests (called once per request).
        model_name: the id ``/v1/models`` lists; requests naming another model get 404.
        defaults: sampling settings for fields a request leaves out.
        max_batch_size: most requests per ``generate`` call of an engine that does not stream.
        batch_wait_ms: how long such a batch waits for more requests after its first.
        api_key: the bearer token ``/v1`` routes require (None: no key).
        max_body_bytes: the largest request body accepted.
        max_tokens: the most tokens a request may ask one choice for (None: no bound).
    """
    metrics = ServeMetrics(engine)
    service = Service(plugin, model_name, defaults or SamplingParams(), max_tokens, metrics)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        inner = engine if isinstance(engine, BatchingEngine) else None
        batcher = inner or BatchingEngine(
            FailureIsolatingEngine.around(engine),
            max_batch_size=max_batch_size,
            max_wait_s=batch_wait_ms / 1000,
        )
        service.engine = batcher
        try:
            yield
        finally:
            service.engine = None
            if inner is None:
                await asyncio.to_thread(batcher.close)

    # No /docs, /redoc or /openapi.json: only /health and /metrics answer without the key.
    app = FastAPI(
        title="structured-agents", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )
    app.add_middleware(
        Guard,
        api_key=api_key,
        key_prefix="/v1",
        max_body_bytes=max_body_bytes,
        refusal=openai_refusal,
        limit_name="SA_SERVE__MAX_BODY_BYTES",
    )

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return _error(exc.status, exc.message, exc.param)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'] if p != 'body')}: {err['msg']}" for err in exc.errors()
        )
        return _error(400, f"invalid request: {problems}")

    @app.post("/v1/completions", response_model=None)
    async def completions(body: CompletionBody, request: Request) -> Any:
        return _respond(await service.completions(body, request.is_disconnected))

    @app.post("/v1/chat/completions", response_model=None)
    async def chat_completions(body: ChatBody, request: Request) -> Any:
        return _respond(await service.chat(body, request.is_disconnected))

    @app.exception_handler(ClientGone)
    async def _gone(request: Request, exc: ClientGone) -> JSONResponse:
        return _error(499, str(exc))  # nobody reads it: the connection is closed

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return service.models()

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/metrics")
    async def prometheus() -> Response:
        """Prometheus metrics (vLLM's names; open like ``/health``, as ``vllm serve`` serves them)."""
        return Response(scrape(metrics.registry), media_type=CONTENT_TYPE)

    return app
