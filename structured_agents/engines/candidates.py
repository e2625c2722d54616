"""``SamplingParams.n`` for engines that decode one output per row: each request with ``n > 1``
becomes ``n`` rows of one candidate each, decoded in the same batch, and their completions are
gathered back into one :class:`Completion` carrying every :class:`Candidate`.

Candidate ``i`` samples with seed ``seed + i`` (the request's seed, or one derived from its id,
so a run decodes the same candidates again). A greedy request (``temperature == 0``) would
decode ``n`` identical rows: it is decoded once and its output repeated.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace

from structured_agents.kernel.engine import Candidate, Completion, GenerationRequest
from structured_agents.kernel.streaming import GenerationStream
from structured_agents.types import TokenUsage

__all__ = ["decode_candidates", "stable_seed", "submit_candidates"]


def stable_seed(request: GenerationRequest) -> int:
    """The request's seed, or a 31-bit number derived from its id."""
    if request.sampling.seed is not None:
        return request.sampling.seed
    return int.from_bytes(hashlib.sha256(request.request_id.encode()).digest()[:4], "big") >> 1


def _rows(request: GenerationRequest) -> list[GenerationRequest]:
    sampling = request.sampling
    if sampling.n == 1:
        return [request]
    count = 1 if sampling.temperature == 0 else sampling.n
    base = stable_seed(request)
    return [replace(request, sampling=replace(sampling, n=1, seed=base + i)) for i in range(count)]


def _gather(request: GenerationRequest, outputs: list[Completion]) -> Completion:
    if request.sampling.n == 1:
        return outputs[0]
    outputs = outputs * request.sampling.n if len(outputs) == 1 else outputs
    first = outputs[0]
    usage = TokenUsage(first.usage.prompt_tokens, sum(o.usage.completion_tokens for o in outputs))
    candidates = tuple(
        Candidate(o.text, o.finish_reason, o.usage.completion_tokens, o.review) for o in outputs
    )
    return replace(first, request_id=request.request_id, usage=usage, candidates=candidates)


def decode_candidates(
    decode: Callable[[Sequence[GenerationRequest]], list[Completion]], requests: Sequence[GenerationRequest]
) -> list[Completion]:
    """``decode(rows)`` over the requests' candidate rows, gathered back per request."""
    rows = [_rows(request) for request in requests]
    flat = [row for group in rows for row in group]
    outputs = decode(flat)
    gathered: list[Completion] = []
    start = 0
    for request, group in zip(requests, rows, strict=True):
        gathered.append(_gather(request, outputs[start : start + len(group)]))
        start += len(group)
    return gathered


def submit_candidates(
    submit: Callable[[GenerationRequest], GenerationStream], request: GenerationRequest
) -> GenerationStream:
    """``submit(request)`` for one candidate; for ``n > 1`` a stream that completes, with every
    candidate gathered, when each candidate's own stream has (it streams no text itself).
    Cancelling it cancels them all."""
    rows = _rows(request)
    if len(rows) == 1 and request.sampling.n == 1:
        return submit(request)
    streams = [submit(row) for row in rows]
    gathered = GenerationStream(request)

    def cancel_all() -> None:
        for stream in streams:
            stream.cancel()

    gathered.on_cancel(cancel_all)
    left = [len(streams)]
    lock = threading.Lock()

    def done(_stream: GenerationStream) -> None:
        with lock:
            left[0] -= 1
            if left[0]:
                return
        try:
            outputs = [stream.result() for stream in streams]
        except BaseException as exc:  # a candidate failed or was cancelled: so is the request
            gathered.fail(exc)
            return
        gathered.finish(_gather(request, outputs))

    for stream in streams:
        stream.add_done_callback(done)
    return gathered
