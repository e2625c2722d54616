"""What the routes of ``sa serve`` do: build engine requests, run the choices, shape the answers.

Completions and chat, each whole or streamed (:mod:`.responses` for the shapes, :mod:`.choices`
for the engine side, :mod:`.tool_choice` for chat tools). A stream sends each choice's text as
it is decoded; chat tool calls go out as one ``tool_calls`` delta per call once the choice has
ended and its text parses (content before the call streams as it comes; with a forced
``tool_choice`` the whole output is calls, so no content streams). A failure once a stream has
started is sent as an ``{"error": ...}`` event before ``[DONE]``, as vLLM does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from structured_agents.errors import ParseError, StructuredAgentsError
from structured_agents.kernel.engine import Completion, GenerationRequest, SamplingParams
from structured_agents.kernel.streaming import GenerationStream, StreamDelta, StreamingEngine
from structured_agents.metrics import ServeMetrics
from structured_agents.plugins.protocol import ModelPlugin
from structured_agents.serve.choices import Choice, Choices
from structured_agents.serve.responses import (
    DONE,
    chat_logprobs,
    completion_logprobs,
    envelope,
    finish_reason,
    sse,
    usage,
)
from structured_agents.serve.schemas import (
    MAX_CHOICES,
    ApiError,
    ChatBody,
    CompletionBody,
    constraint_field,
    grammar_from_body,
    messages_from_openai,
    tools_from_openai,
)
from structured_agents.serve.tool_choice import ToolPlan, plan_tools
from structured_agents.types import JsonDict, ToolCall

__all__ = ["ClientGone", "Gone", "Service", "never"]

log = logging.getLogger(__name__)

_Event = tuple[Choice, StreamDelta | Completion | ApiError]
_T = TypeVar("_T")


def _unsettled(text: str, triggers: tuple[str, ...]) -> int:
    """Where free content must stop: before the first trigger, or before a trigger's prefix at the end."""
    cut = min((at for t in triggers if (at := text.find(t)) >= 0), default=len(text))
    for trigger in triggers:
        for size in range(min(len(trigger) - 1, cut), 0, -1):
            if text[:cut].endswith(trigger[:size]):
                return cut - size
    return cut


async def _events(choices: Choices) -> AsyncIterator[_Event]:
    """Every choice's deltas, then its checked completion (or its ApiError), as they come."""
    queue: asyncio.Queue[_Event] = asyncio.Queue()

    async def pump(choice: Choice) -> None:
        try:
            async for delta in choice.deltas():
                await queue.put((choice, delta))
            await queue.put((choice, await choice.completion()))
        except ApiError as exc:
            await queue.put((choice, exc))

    tasks = [asyncio.create_task(pump(choice)) for choice in choices.items]
    try:
        for _ in choices.items:
            while True:
                event = await queue.get()
                yield event
                # let the server's callbacks run between chunks: a burst of queued chunks never
                # suspends otherwise, and a client that left meanwhile is only noticed after it
                await asyncio.sleep(0)
                if not isinstance(event[1], StreamDelta):
                    break
    finally:
        for task in tasks:
            task.cancel()


Gone = Callable[[], Awaitable[bool]]
"""Whether the client of a request has gone away (Starlette's ``Request.is_disconnected``)."""
_WATCH_S = 0.25
"""How often a request that is not streamed checks whether its client has gone."""


async def never() -> bool:
    """A client that never goes (the default :data:`Gone`)."""
    return False


async def _unless_gone(work: Awaitable[_T], gone: Gone) -> _T:
    """``work``'s result; :class:`ClientGone` as soon as ``gone()`` says the client left (the
    caller's ``Choices`` context then cancels the streams: their rows leave the batch)."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=_WATCH_S)
            if done:
                return task.result()
            if await gone():
                raise ClientGone("the client went away before its answer")
    finally:
        task.cancel()


class ClientGone(Exception):
    """The client of a request that is not streamed disconnected while it was decoded."""


def _error_event(exc: ApiError) -> str:
    return sse({"error": {"message": exc.message, "type": "InternalServerError", "code": exc.status}})


class Service:
    """What the routes share: the engine (set while the app runs), the plugin and the defaults."""

    def __init__(
        self,
        plugin: Callable[[], ModelPlugin] | None,
        model_name: str,
        defaults: SamplingParams,
        max_tokens: int | None = None,
        metrics: ServeMetrics | None = None,
    ) -> None:
        self.plugin = plugin
        self.metrics = metrics
        """Where requests are counted (None: nowhere)."""
        self.model_name = model_name
        self.defaults = defaults
        self.max_tokens = max_tokens
        """The most tokens a request may ask one choice for (None: no bound)."""
        self.engine: StreamingEngine | None = None
        self.created = int(time.time())

    def _engine(self) -> StreamingEngine:
        if self.engine is None:
            raise ApiError("the server is not started (lifespan not run)", status=503)
        return self.engine

    def check_model(self, model: str | None) -> None:
        if model is not None and model != self.model_name:
            raise ApiError(
                f"The model `{model}` does not exist; this server serves `{self.model_name}`.", status=404
            )

    # -- completions -----------------------------------------------------------------------------

    async def completions(self, body: CompletionBody, gone: Gone = never) -> JsonDict | AsyncIterator[str]:
        body.check()
        self.check_model(body.model)
        grammar = grammar_from_body(body.structured_outputs)
        sampling = body.sampling(self.defaults, max_tokens=self.max_tokens)
        prompts = [body.prompt] if isinstance(body.prompt, str) else body.prompt
        if not prompts:
            raise ApiError("prompt must not be empty", param="prompt")
        if len(prompts) * body.n > MAX_CHOICES:
            raise ApiError(
                f"{len(prompts)} prompts with n={body.n} ask for {len(prompts) * body.n} choices, "
                f"at most {MAX_CHOICES} a request",
                param="prompt",
            )
        requests = [GenerationRequest(prompt=p, grammar=grammar, sampling=sampling) for p in prompts]
        param = None if grammar is None else constraint_field(grammar)
        choices = self._track(Choices(self._engine(), requests, body.n, param))
        if body.stream:
            return await self._opened(choices, self._stream_completions(choices, body), gone)
        async with choices:
            completions = await _unless_gone(choices.completions(), gone)
        return {
            **envelope("text_completion", self.model_name),
            "choices": [
                {
                    "index": i,
                    "text": c.text,
                    "logprobs": completion_logprobs(c.logprobs) if body.logprobs is not None else None,
                    "finish_reason": finish_reason(c),
                }
                for i, c in enumerate(completions)
            ],
            "usage": usage(completions),
        }

    async def _opened(self, choices: Choices, stream: AsyncIterator[str], gone: Gone) -> AsyncIterator[str]:
        """``stream`` once every choice has started (errors before it are raised as ApiError;
        :class:`ClientGone` where the client leaves first: with more choices than the batch
        holds, the last start only as the first end)."""
        started = time.perf_counter()
        try:
            await _unless_gone(choices.open(), gone)
        except BaseException:
            choices.cancel()
            raise
        if self.metrics is not None:
            self.metrics.first_token.observe(time.perf_counter() - started)
        return stream

    def _track(self, choices: Choices) -> Choices:
        """Count ``choices`` in the metrics: running until each ends, then its tokens, latency
        and finish reason (a cancelled or failed choice only stops running)."""
        metrics = self.metrics
        if metrics is None:
            return choices
        started = time.perf_counter()

        def ended(stream: GenerationStream) -> None:
            metrics.running.dec()
            if stream.cancelled or stream.future.exception() is not None:
                return
            completion = stream.result()
            metrics.prompt_tokens.inc(completion.usage.prompt_tokens)
            metrics.generation_tokens.inc(completion.usage.completion_tokens)
            metrics.requests.labels(finished_reason=finish_reason(completion)).inc()
            metrics.latency.observe(time.perf_counter() - started)

        for choice in choices.items:
            metrics.running.inc()
            choice.stream.add_done_callback(ended)
        return choices

    async def _stream_completions(self, choices: Choices, body: CompletionBody) -> AsyncIterator[str]:
        base = envelope("text_completion", self.model_name)
        extra: JsonDict = {"usage": None} if body.include_usage else {}
        offsets = [0] * len(choices.items)
        done: list[Completion] = []
        async with choices:
            async for choice, event in _events(choices):
                if isinstance(event, ApiError):
                    yield _error_event(event)
                    break
                item: JsonDict = {"index": choice.index, "text": "", "logprobs": None, "finish_reason": None}
                if isinstance(event, StreamDelta):
                    item["text"] = event.text
                    if body.logprobs is not None:
                        item["logprobs"] = completion_logprobs(event.logprobs, offsets[choice.index])
                    offsets[choice.index] += len(event.text)
                else:
                    done.append(event)
                    item["finish_reason"] = finish_reason(event)
                yield sse({**base, "choices": [item], **extra})
            else:
                if body.include_usage:
                    yield sse({**base, "choices": [], "usage": usage(done)})
        yield DONE

    # -- chat ------------------------------------------------------------------------------------

    async def chat(self, body: ChatBody, gone: Gone = never) -> JsonDict | AsyncIterator[str]:
        body.check()
        self.check_model(body.model)
        if self.plugin is None:
            raise ApiError("this server has no model plugin to render chat requests; start it with --plugin")
        plugin = self.plugin()
        structured = grammar_from_body(body.structured_outputs)
        tools = tools_from_openai(body.tools)
        try:
            prompt = plugin.render_prompt(messages_from_openai(body.messages), tools)
        except StructuredAgentsError as exc:
            raise ApiError(
                f"the {plugin.name} plugin cannot render these messages: {exc}", param="messages"
            ) from exc
        plan = plan_tools(
            plugin, tools, body.tool_choice, parallel=body.parallel_tool_calls, structured=structured
        )
        stop = tuple(plugin.request_options(None).get("stop") or ())
        request = GenerationRequest(
            prompt=prompt,
            messages=tuple(body.messages),
            tools=tuple(body.tools or ()),
            grammar=plan.grammar,
            sampling=body.sampling(self.defaults, extra_stop=stop, max_tokens=self.max_tokens),
        )
        param = constraint_field(structured) if structured is not None else "tools"
        choices = self._track(
            Choices(self._engine(), [request], body.n, param if plan.grammar is not None else None)
        )
        if body.stream:
            return await self._opened(choices, self._stream_chat(choices, body, plugin, plan), gone)
        async with choices:
            completions = await _unless_gone(choices.completions(), gone)
        return {
            **envelope("chat.completion", self.model_name),
            "choices": [self._chat_choice(i, c, body, plugin, plan) for i, c in enumerate(completions)],
            "usage": usage(completions),
        }

    @staticmethod
    def _parse(
        completion: Completion, plugin: ModelPlugin, plan: ToolPlan
    ) -> tuple[str | None, list[ToolCall]]:
        if not plan.parse_calls:
            return completion.text, []
        try:
            return plugin.parse_response(completion.text, plan.tools)
        except ParseError as exc:
            log.warning("returning unparsed text: %s", exc)
            return completion.text, []

    def _chat_choice(
        self, index: int, completion: Completion, body: ChatBody, plugin: ModelPlugin, plan: ToolPlan
    ) -> JsonDict:
        content, calls = self._parse(completion, plugin, plan)
        message: JsonDict = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = [call.to_openai_format() for call in calls]
        return {
            "index": index,
            "message": message,
            "logprobs": chat_logprobs(completion.logprobs) if body.logprobs else None,
            "finish_reason": "tool_calls" if calls else finish_reason(completion),
        }

    async def _stream_chat(
        self, choices: Choices, body: ChatBody, plugin: ModelPlugin, plan: ToolPlan
    ) -> AsyncIterator[str]:
        base = envelope("chat.completion.chunk", self.model_name)
        extra: JsonDict = {"usage": None} if body.include_usage else {}
        texts = [""] * len(choices.items)
        sent = [0] * len(choices.items)
        done: list[Completion] = []

        def chunk(choice: Choice, delta: JsonDict, **fields: Any) -> str:
            item = {"index": choice.index, "delta": delta, "logprobs": None, "finish_reason": None, **fields}
            return sse({**base, "choices": [item], **extra})

        async with choices:
            for choice in choices.items:
                yield chunk(choice, {"role": "assistant", "content": ""})
            async for choice, event in _events(choices):
                i = choice.index
                if isinstance(event, ApiError):
                    yield _error_event(event)
                    break
                if isinstance(event, StreamDelta):
                    texts[i] += event.text
                    settled = 0 if plan.calls_only else _unsettled(texts[i], plan.triggers)
                    fresh, sent[i] = texts[i][sent[i] : settled], max(sent[i], settled)
                    scored = chat_logprobs(event.logprobs) if body.logprobs and event.logprobs else None
                    if fresh or scored:
                        yield chunk(choice, {"content": fresh}, logprobs=scored)
                    continue
                done.append(event)
                _, calls = self._parse(event, plugin, plan)
                rest = event.text[sent[i] :] if event.text.startswith(texts[i][: sent[i]]) else ""
                if rest and not calls and not plan.calls_only:
                    yield chunk(choice, {"content": rest})
                for k, call in enumerate(calls):
                    yield chunk(choice, {"tool_calls": [{"index": k, **call.to_openai_format()}]})
                yield chunk(choice, {}, finish_reason="tool_calls" if calls else finish_reason(event))
            else:
                if body.include_usage:
                    yield sse({**base, "choices": [], "usage": usage(done)})
        yield DONE

    def models(self) -> JsonDict:
        card = {
            "id": self.model_name,
            "object": "model",
            "created": self.created,
            "owned_by": "structured-agents",
        }
        return {"object": "list", "data": [card]}
