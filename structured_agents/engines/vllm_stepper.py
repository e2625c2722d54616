"""Drive vLLM's step-level engine (``LLMEngine``) from the step loop: continuous batching on vLLM.

vLLM schedules its own batch (``max_num_seqs`` rows, paged KV cache); this stepper only feeds
it. ``admit`` calls ``LLMEngine.add_request(request_id, prompt, params)`` for each new request
(its ``SamplingParams`` carry the grammar and ``output_kind=RequestOutputKind.DELTA``), ``step``
calls ``LLMEngine.step()`` and hands each ``RequestOutput``'s new text, token ids and logprobs
to the request's stream; a finished output (``RequestOutput.finished``) ends the stream with its
completion, and a cancelled stream is dropped with ``LLMEngine.abort_request([request_id])``.

Only the method and attribute names of vLLM 0.33 are used (checked against the snapshot in
``tests/data/vllm_api.json``); vLLM itself is imported by :class:`~.vllm_engine.VLLMEngine`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from structured_agents.errors import EngineError
from structured_agents.kernel.engine import Completion, FinishReason, GenerationRequest, TokenLogprob
from structured_agents.kernel.streaming import GenerationStream, StreamDelta
from structured_agents.types import TokenUsage

__all__ = ["VLLMPending", "VLLMStepper", "refusal", "to_logprobs"]

_FINISH_REASONS: dict[str | None, FinishReason] = {None: "stop", "stop": "stop", "length": "length"}
"""vLLM's finish reasons (stop, length, abort, error, repetition) as ours; the rest are errors."""


def refusal(request: GenerationRequest, message: str) -> Completion:
    """The ``error`` completion of a request vLLM would not take (its grammar, when it has one,
    is taken to be why: vLLM validates little else of a request)."""
    metadata = {"error": message, "grammar_error": request.grammar is not None}
    return Completion(request.request_id, message, finish_reason="error", metadata=metadata)


class LLMEngineLike(Protocol):
    """The methods of ``vllm.v1.engine.llm_engine.LLMEngine`` the stepper calls."""

    def add_request(self, request_id: str, prompt: Any, params: Any) -> str: ...
    def step(self) -> list[Any]: ...
    def abort_request(self, request_ids: list[str]) -> None: ...


def to_logprobs(logprobs: Sequence[Mapping[int, Any]] | None, token_ids: Sequence[int]) -> list[TokenLogprob]:
    """vLLM's per-token ``{token_id: Logprob(logprob, rank, decoded_token)}`` as :class:`TokenLogprob`."""
    out: list[TokenLogprob] = []
    for token, ranked in zip(token_ids, logprobs or (), strict=False):
        chosen = ranked.get(token)
        others = sorted((lp for lp in ranked.values() if lp.rank is not None), key=lambda lp: lp.rank)
        top = tuple((str(lp.decoded_token or ""), float(lp.logprob)) for lp in others)
        text = str(chosen.decoded_token or "") if chosen is not None else ""
        out.append(TokenLogprob(int(token), text, float(chosen.logprob) if chosen else 0.0, top))
    return out


@dataclass
class VLLMPending:
    """One request on its way through vLLM, with what its deltas added up to."""

    stream: GenerationStream
    params: Any
    """The request's ``vllm.SamplingParams``."""
    submitted: float = field(default_factory=time.perf_counter)
    text: str = ""
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[TokenLogprob] = field(default_factory=list)
    prompt_tokens: int = 0


class VLLMStepper:
    """A :class:`~structured_agents.engines.step_loop.Stepper` over an ``LLMEngine``."""

    def __init__(self, core: LLMEngineLike, *, max_num_seqs: int) -> None:
        self.core = core
        self.max_num_seqs = max_num_seqs
        self._live: dict[str, VLLMPending] = {}

    def room(self) -> int:
        # vLLM queues what its batch cannot take yet; twice its batch keeps it fed between steps
        return 2 * self.max_num_seqs - len(self._live)

    def full(self) -> bool:
        return self.room() <= 0

    def live(self) -> int:
        return len(self._live)

    def admit(self, pending: list[VLLMPending]) -> None:
        for item in pending:
            request = item.stream.request
            try:  # vLLM validates the request here (its grammar included)
                self.core.add_request(request.request_id, request.prompt, item.params)
            except Exception as exc:
                message = f"vLLM refused request {request.request_id}: {type(exc).__name__}: {exc}"
                item.stream.finish(refusal(request, message))
                continue
            self._live[request.request_id] = item

    def step(self) -> None:
        cancelled = [rid for rid, item in self._live.items() if item.stream.cancelled]
        if cancelled:
            self.core.abort_request(cancelled)
            for rid in cancelled:
                del self._live[rid]
        for output in self.core.step():
            item = self._live.get(output.request_id)
            if item is None or not output.outputs:
                continue
            sample = output.outputs[0]
            added = [int(t) for t in sample.token_ids]
            scored = to_logprobs(sample.logprobs, added)
            item.text += sample.text
            item.token_ids += added
            item.logprobs += scored
            item.prompt_tokens = len(output.prompt_token_ids or ()) or item.prompt_tokens
            if sample.text or added:
                item.stream.push(StreamDelta(sample.text, tuple(added), tuple(scored)))
            if output.finished:
                del self._live[output.request_id]
                item.stream.finish(self._completion(item, sample.finish_reason))

    def abort(self, error: EngineError) -> None:
        if self._live:
            self.core.abort_request(list(self._live))
        for item in self._live.values():
            item.stream.fail(error)
        self._live.clear()

    def _completion(self, item: VLLMPending, reason: str | None) -> Completion:
        request: GenerationRequest = item.stream.request
        finish = _FINISH_REASONS.get(reason, "error")
        return Completion(
            request_id=request.request_id,
            text=item.text,
            usage=TokenUsage(prompt_tokens=item.prompt_tokens, completion_tokens=len(item.token_ids)),
            finish_reason=finish,
            latency_s=time.perf_counter() - item.submitted,
            batch_size=1,
            logprobs=tuple(item.logprobs),
            metadata={} if finish != "error" else {"vllm_finish_reason": reason},
        )
