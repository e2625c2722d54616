"""Engine for a remote OpenAI-compatible server: ``vllm serve`` or ``sa serve``.

Every request of a batch is sent concurrently (at most ``max_concurrency`` in flight) from a
private event-loop thread, so :meth:`OpenAICompatEngine.generate` works from plain code, from
worker threads and from inside a running event loop alike. The grammar travels the way vLLM's
server reads it: the ``structured_outputs`` field of the body (what the OpenAI client calls
``extra_body``), built by ``artifact.to_vllm_payload()``.

Endpoints: ``completions`` posts the plugin-rendered ``prompt`` to ``/completions``; ``chat``
posts ``messages`` and ``tools`` to ``/chat/completions`` and returns the server's parsed
``tool_calls`` as :attr:`Completion.tool_calls_raw`.

``SamplingParams.bad_words`` travel as vLLM's ``bad_words`` extra parameter (as the grammar
does; those meant for mid-sentence only stay behind, since vLLM bans both spellings):
``vllm serve`` bans them; a server that does not know the field ignores it or refuses the
request, so the bans a bundle's copy check sets (:mod:`structured_agents.bundles.echoes`) hold
only on vLLM-compatible servers; elsewhere the check still refuses the copy after the turn.
``n > 1`` is sent as ``n`` requests with seeds ``seed + i``
(:mod:`structured_agents.engines.candidates`), which every server understands.

Failures: 429, 5xx and connection errors are retried up to ``max_retries`` times with
exponential backoff and jitter, waiting what ``Retry-After`` asks instead when the server sends
it; timeouts and other 4xx are not retried. Every failure is an :class:`EngineError` naming the
request index, the URL, the status and the start of the response body.
"""

from __future__ import annotations

import asyncio
import dataclasses
import email.utils
import random
import threading
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

import httpx

from structured_agents.engines.candidates import decode_candidates
from structured_agents.errors import ConfigError, EngineError
from structured_agents.kernel.engine import Completion, FinishReason, GenerationRequest
from structured_agents.types import JsonDict, TokenUsage

__all__ = ["Endpoint", "OpenAICompatEngine", "RetryPolicy", "build_body", "parse_retry_after"]

Endpoint = Literal["completions", "chat"]
_PATHS: dict[Endpoint, str] = {"completions": "/completions", "chat": "/chat/completions"}
_FINISH_REASONS: dict[str | None, FinishReason] = {
    None: "stop",
    "stop": "stop",
    "tool_calls": "stop",
    "length": "length",
}
_SNIPPET = 500
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When and how long to wait before retrying a failed attempt."""

    max_retries: int = 3
    """Retries after the first attempt (so at most ``max_retries + 1`` attempts)."""
    backoff_base_s: float = 0.5
    """Delay before the first retry; doubles with each retry."""
    backoff_max_s: float = 8.0
    """Cap of the exponential delay."""
    retry_after_max_s: float = 60.0
    """Longest ``Retry-After`` honoured; longer requests are cut to this."""
    retry_statuses: frozenset[int] = frozenset({408, 409, 429, 500, 502, 503, 504})
    """HTTP statuses worth retrying (rate limits, overload, gateway trouble)."""

    def __post_init__(self) -> None:
        for name in ("max_retries", "backoff_base_s", "backoff_max_s", "retry_after_max_s"):
            if getattr(self, name) < 0:
                raise ConfigError(f"RetryPolicy.{name} must be >= 0, got {getattr(self, name)!r}")

    def delay_s(self, retry: int, retry_after_s: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (0-based).

        The server's ``Retry-After`` wins when given; otherwise "equal jitter": half of the
        exponential delay plus a random share of the other half, so clients spread out.
        """
        if retry_after_s is not None:
            return min(retry_after_s, self.retry_after_max_s)
        cap = min(self.backoff_max_s, self.backoff_base_s * 2.0**retry)
        return cap / 2 + random.uniform(0, cap / 2)


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks for (delta-seconds or an HTTP date), or ``None``."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def build_body(request: GenerationRequest, endpoint: Endpoint, model: str | None) -> JsonDict:
    """The JSON body of ``request`` for ``endpoint``, grammar included."""
    sampling = request.sampling
    body: JsonDict = {} if model is None else {"model": model}
    if endpoint == "chat":
        if not request.messages:
            raise EngineError("the chat endpoint needs GenerationRequest.messages; this request has none")
        body["messages"] = list(request.messages)
        if request.tools:
            body["tools"] = list(request.tools)
    else:
        body["prompt"] = request.prompt
    body.update(max_tokens=sampling.max_new_tokens, temperature=sampling.temperature, top_p=sampling.top_p)
    if sampling.seed is not None:
        body["seed"] = sampling.seed
    if sampling.stop:
        body["stop"] = list(sampling.stop)
    if sampling.frequency_penalty:
        body["frequency_penalty"] = sampling.frequency_penalty
    if bad_words := sampling.bad_words_anywhere():
        body["bad_words"] = bad_words
    if request.grammar is not None:
        body.update(request.grammar.to_vllm_payload())
    return body


def _snippet(text: str) -> str:
    return text if len(text) <= _SNIPPET else text[:_SNIPPET] + "..."


class OpenAICompatEngine:
    """An :class:`Engine` over HTTP to an OpenAI-compatible server with vLLM's structured outputs."""

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        endpoint: Endpoint = "completions",
        api_key: str | None = None,
        timeout_s: float = 120.0,
        retry: RetryPolicy | None = None,
        max_concurrency: int = 8,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"OpenAICompatEngine.base_url must start with http:// or https://, got {base_url!r}"
            )
        if endpoint not in _PATHS:
            raise ConfigError(
                f"OpenAICompatEngine.endpoint must be one of {sorted(_PATHS)}, got {endpoint!r}"
            )
        if timeout_s <= 0:
            raise ConfigError(f"OpenAICompatEngine.timeout_s must be > 0, got {timeout_s!r}")
        if max_concurrency < 1:
            raise ConfigError(f"OpenAICompatEngine.max_concurrency must be >= 1, got {max_concurrency!r}")
        self.model = model
        self.endpoint: Endpoint = endpoint
        self.url = base_url.rstrip("/") + _PATHS[endpoint]
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(timeout_s),
            limits=httpx.Limits(max_connections=max_concurrency),
        )
        self._semaphore = asyncio.Semaphore(max_concurrency)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._closed = False

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Send every request concurrently; raise the failure of the lowest failing index."""
        if not requests:
            return []
        return decode_candidates(lambda rows: self._run(self._generate(list(rows))), requests)

    def close(self) -> None:
        """Close the HTTP client and stop the private event loop."""
        with self._start_lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
            self._closed = True
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._client.aclose(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()

    def __enter__(self) -> OpenAICompatEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        with self._start_lock:
            if self._closed:
                coro.close()
                raise EngineError(f"OpenAICompatEngine for {self.url} is closed")
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=self._loop.run_forever, name="openai-compat", daemon=True
                )
                self._thread.start()
            loop = self._loop
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    async def _generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        start = time.perf_counter()
        results = await asyncio.gather(
            *(self._send(index, request) for index, request in enumerate(requests)), return_exceptions=True
        )
        latency = time.perf_counter() - start
        failures = [(i, r) for i, r in enumerate(results) if isinstance(r, BaseException)]
        if failures:
            index, first = failures[0]
            others = (
                f" ({len(failures) - 1} more of {len(requests)} requests failed)" if len(failures) > 1 else ""
            )
            if isinstance(first, EngineError):
                raise EngineError(f"{first}{others}") from first
            raise EngineError(f"request {index} to {self.url} failed: {first!r}{others}") from first
        return [
            dataclasses.replace(result, latency_s=latency, batch_size=len(requests))
            for result in results
            if isinstance(result, Completion)
        ]

    async def _send(self, index: int, request: GenerationRequest) -> Completion:
        try:
            body = build_body(request, self.endpoint, self.model)
        except EngineError as exc:
            raise EngineError(f"request {index} to {self.url}: {exc}") from exc
        where = f"request {index} to {self.url}"
        for attempt in range(self.retry.max_retries + 1):
            retry_after: float | None = None
            async with self._semaphore:
                try:
                    response = await self._client.post(self.url, json=body)
                except (httpx.ReadTimeout, httpx.WriteTimeout, httpx.PoolTimeout) as exc:
                    raise EngineError(
                        f"{where} timed out after {self.timeout_s} s ({type(exc).__name__})"
                    ) from exc
                except httpx.UnsupportedProtocol as exc:
                    raise EngineError(f"{where} failed: {exc}") from exc
                except httpx.TransportError as exc:  # connect errors, resets: worth retrying
                    failure = f"connection error {type(exc).__name__}: {exc}"
                else:
                    if response.is_success:
                        return self._completion(where, request, response)
                    failure = f"HTTP {response.status_code}: {_snippet(response.text)}"
                    if response.status_code not in self.retry.retry_statuses:
                        raise EngineError(f"{where} failed with {failure}")
                    retry_after = parse_retry_after(response.headers.get("retry-after"))
            if attempt < self.retry.max_retries:
                await asyncio.sleep(self.retry.delay_s(attempt, retry_after))
        raise EngineError(f"{where} failed after {self.retry.max_retries + 1} attempts; last: {failure}")

    def _completion(self, where: str, request: GenerationRequest, response: httpx.Response) -> Completion:
        try:
            data = response.json()
            choice = data["choices"][0]
            if self.endpoint == "chat":
                message = choice["message"]
                text = message.get("content") or ""
                tool_calls = tuple(message.get("tool_calls") or ())
            else:
                text, tool_calls = choice["text"], ()
            usage = data.get("usage") or {}
            finish = choice.get("finish_reason")
            return Completion(
                request_id=request.request_id,
                text=str(text),
                usage=TokenUsage(
                    prompt_tokens=int(usage.get("prompt_tokens", 0)),
                    completion_tokens=int(usage.get("completion_tokens", 0)),
                ),
                finish_reason=_FINISH_REASONS.get(finish, "error"),
                tool_calls_raw=tool_calls,
                metadata={"server_finish_reason": finish} if finish not in _FINISH_REASONS else {},
                model=str(data.get("model") or self.model or ""),
            )
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise EngineError(
                f"{where} returned an unexpected body ({type(exc).__name__}: {exc}): "
                f"{_snippet(response.text)}"
            ) from exc
