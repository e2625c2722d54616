"""The choices of one request: submitted to the engine, opened, read as deltas, checked for errors.

Every choice is one :class:`~structured_agents.kernel.streaming.GenerationStream` of the
server's batcher (``n`` per prompt; with a seed, sample ``j`` gets ``seed + j``, as vLLM seeds
its parallel samples). A request is *opened* before its response starts: each choice has
either decoded its first token or ended, so a grammar the engine cannot compile is answered
with a 400 (not a stream that breaks off), while the other requests of the batch go on.
Leaving a :class:`Choices` context cancels every stream still running: a client that
disconnects frees its batch slots at the engine's next step.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Sequence
from types import TracebackType

from structured_agents.errors import StructuredAgentsError
from structured_agents.kernel.engine import Completion, GenerationRequest
from structured_agents.kernel.streaming import GenerationStream, StreamDelta, StreamingEngine
from structured_agents.serve.isolation import is_grammar_failure
from structured_agents.serve.schemas import ApiError

__all__ = ["Choice", "Choices", "check_completion"]


def _failure(
    message: str, *, grammar: bool, grammar_param: str | None, request: str | None = None
) -> ApiError:
    """A 400 naming ``grammar_param`` when the engine rejected the grammar, a 400 when the
    request itself cannot be served (a prompt over the model's context; a grammar too slow to
    decode, naming ``grammar_param``), else a 500 (as vLLM)."""
    if grammar:
        param = grammar_param or "structured_outputs"
        return ApiError(f"{param} does not compile: {message}", param=param)
    if request is not None:
        return ApiError(message, param=grammar_param if request == "grammar" else None)
    return ApiError(f"the engine failed: {message}", status=500)


def check_completion(completion: Completion, grammar_param: str | None) -> Completion:
    """``completion``, or the :class:`ApiError` its ``error`` finish stands for."""
    if completion.finish_reason != "error":
        return completion
    message = completion.metadata.get("error") or completion.text or f"request {completion.request_id} failed"
    raise _failure(
        str(message),
        grammar=bool(completion.metadata.get("grammar_error")),
        grammar_param=grammar_param,
        request=str(found) if (found := completion.metadata.get("request_error")) else None,
    )


class Choice:
    """One choice's stream, with the deltas read while opening it."""

    def __init__(self, index: int, stream: GenerationStream, grammar_param: str | None) -> None:
        self.index = index
        self.stream = stream
        self._grammar_param = grammar_param
        self._deltas = stream.__aiter__()
        self._first: list[StreamDelta] = []

    async def open(self) -> None:
        """Wait for the first token (or the end); raise the ApiError of a failed request."""
        try:
            self._first = [await anext(self._deltas)]
        except StopAsyncIteration:
            pass
        except StructuredAgentsError as exc:
            raise _failure(
                str(exc), grammar=is_grammar_failure(exc), grammar_param=self._grammar_param
            ) from exc
        if self.stream.done() and not self.stream.cancelled:
            check_completion(self.stream.result(), self._grammar_param)

    async def deltas(self) -> AsyncIterator[StreamDelta]:
        """Every delta, the ones read while opening first."""
        for delta in self._first:
            yield delta
        async for delta in self._deltas:
            yield delta

    async def completion(self) -> Completion:
        """The checked completion (waits for the end)."""
        try:
            completion = await asyncio.wrap_future(self.stream.future)
        except StructuredAgentsError as exc:
            raise _failure(
                str(exc), grammar=is_grammar_failure(exc), grammar_param=self._grammar_param
            ) from exc
        return check_completion(completion, self._grammar_param)


class Choices:
    """The choices of one request, cancelled on leaving the context unless they ended."""

    def __init__(
        self,
        engine: StreamingEngine,
        requests: Sequence[GenerationRequest],
        n: int,
        grammar_param: str | None,
    ) -> None:
        self.items: list[Choice] = []
        for request in requests:
            for j in range(n):
                sample = request
                if j:
                    seed = request.sampling.seed
                    sampling = dataclasses.replace(request.sampling, seed=None if seed is None else seed + j)
                    sample = dataclasses.replace(
                        request, sampling=sampling, request_id=f"{request.request_id}-{j}"
                    )
                self.items.append(Choice(len(self.items), engine.submit(sample), grammar_param))

    async def __aenter__(self) -> Choices:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.cancel()

    def cancel(self) -> None:
        """Cancel every stream that has not ended."""
        for choice in self.items:
            choice.stream.cancel()

    async def open(self) -> None:
        """Open every choice (see :meth:`Choice.open`)."""
        await asyncio.gather(*(choice.open() for choice in self.items))

    async def completions(self) -> list[Completion]:
        """Every choice's checked completion."""
        return list(await asyncio.gather(*(choice.completion() for choice in self.items)))
