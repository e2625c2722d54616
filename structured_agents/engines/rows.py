"""Per-request decoding state of the transformers engine and its stop rules.

A :class:`Row` is one request inside a decoding batch. After each sampled token,
:meth:`Row.advance` decides whether the row goes on or finishes, and why:

* ``grammar``: the row's grammar is complete and accepted a stop token (an EOS or end-of-turn
  token, which the grammar only allows once it is complete);
* ``stop``: an unconstrained row sampled a stop token, or the text reached one of the
  request's stop strings (the text is cut before it);
* ``length``: ``max_new_tokens`` tokens were sampled, or the model's context is full;
* ``error``: the grammar rejected the token (the text is then the error message).

Stop tokens are never part of the text. ``sampled`` counts every sampled token, stop token
included: that is the request's completion token count.

For streaming, :meth:`Row.delta` gives the text that became settled since the last call: text
that may still turn into a stop string, or that ends inside a multi-byte character, waits.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from structured_agents.kernel.engine import Completion, FinishReason, GenerationRequest, TokenLogprob
from structured_agents.types import TokenUsage

if TYPE_CHECKING:
    import torch
    import xgrammar

    from structured_agents.kernel.streaming import GenerationStream

__all__ = ["Row", "find_stop", "unsettled"]

Decode = Callable[[Sequence[int]], str]
"""Token ids to text (the tokenizer's ``decode``, special tokens kept)."""


def find_stop(text: str, stops: Sequence[str]) -> tuple[int, str] | None:
    """The earliest occurrence of any of ``stops`` in ``text`` as ``(offset, stop)``, or None."""
    found = [(at, stop) for stop in stops if stop and (at := text.find(stop)) >= 0]
    return min(found) if found else None


def unsettled(text: str, stops: Sequence[str]) -> int:
    """How many trailing characters of ``text`` may still change: the longest end of it that
    starts one of ``stops``, or an unfinished multi-byte character (decoded as U+FFFD)."""
    held = len(text) - len(text.rstrip("\ufffd"))
    for stop in stops:
        for size in range(min(len(stop) - 1, len(text)), held, -1):
            if text.endswith(stop[:size]):
                held = size
                break
    return held


@dataclass(slots=True)
class Row:
    """One request being decoded."""

    index: int
    """Position of the request in the list given to ``generate``."""
    request: GenerationRequest
    prompt_ids: list[int]
    """The tokenized prompt (special tokens the tokenizer adds included)."""
    budget: int | None = None
    """Most tokens the row may sample: ``max_new_tokens``, or less where the context ends."""
    generator: torch.Generator | None = None
    """The row's own random generator when it samples (``temperature > 0``)."""
    tokens: list[int] = field(default_factory=list)
    """Generated tokens that are part of the text (no stop token)."""
    sampled: int = 0
    text: str = ""
    finish_reason: FinishReason | None = None
    stop: str | None = None
    """The stop string that ended the row, if one did."""
    stream: GenerationStream | None = None
    """Where the row's deltas and completion go (rows of the engine's step loop)."""
    grammar: xgrammar.CompiledGrammar | None = None
    """The request's compiled grammar (None: unconstrained)."""
    stop_token_ids: tuple[int, ...] = ()
    """The engine's stop tokens when the row was submitted."""
    banned: tuple[tuple[int, ...], ...] = ()
    """Token sequences of the request's ``bad_words`` (:mod:`structured_agents.engines.bad_words`)."""
    streams_text: bool = True
    """Whether :meth:`delta` text is wanted (``generate`` callers read only the completion)."""
    logprobs: list[TokenLogprob] = field(default_factory=list)
    steps: int = 0
    """Decode steps the row took part in."""
    rows_seen: int = 0
    """Sum over those steps of the rows decoded together (for the mean batch size)."""
    submitted: float = 0.0
    """``time.perf_counter()`` when the request was submitted."""
    emitted: str = ""
    """Text already handed out by :meth:`delta`."""
    error: dict[str, object] = field(default_factory=dict)
    """Metadata of an ``error`` row (``error``, ``grammar_error``, ``request_error``)."""
    review_ids: tuple[int, ...] = ()
    """The request's review text, tokenized (empty: no review asked)."""
    empty_ids: tuple[int, ...] = ()
    """The request's :attr:`Review.empty <structured_agents.kernel.engine.Review.empty>`, tokenized."""
    review: float | None = None
    """The review score of the row's output, once it ended (:mod:`structured_agents.engines.review`)."""
    review_baseline: float | None = None
    """The review text's score after the empty output, once the prompt was prefilled."""
    model: str = ""
    """The engine's name for its model (stamped on the completion)."""

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    def fail(self, message: str, *, grammar: bool = False, request: str | None = None) -> None:
        """End the row as an ``error``; the message becomes its text (``grammar``: its grammar
        could not be compiled; ``request``: what of the request itself cannot be served,
        ``"prompt"`` over the model's context or a ``"grammar"`` too slow to decode)."""
        self.finish_reason = "error"
        self.text = message
        self.error = {"error": message, "grammar_error": grammar}
        if request is not None:
            self.error["request_error"] = request

    def delta(self, decode: Decode) -> str:
        """The text settled since the previous call (all of what is left once the row ended)."""
        if self.finish_reason == "error":
            return ""
        if self.finished:
            text = self.text
        else:
            text = self.text if self.request.sampling.stop else decode(self.tokens)
            text = text[: len(text) - unsettled(text, self.request.sampling.stop)]
        if not text.startswith(self.emitted):  # a decoder that rewrote earlier text: wait for the end
            return ""
        fresh, self.emitted = text[len(self.emitted) :], text
        return fresh

    def advance(
        self,
        token: int,
        *,
        accepted: bool,
        terminated: bool,
        constrained: bool,
        stop_token_ids: Collection[int],
        decode: Decode,
    ) -> None:
        """Record ``token``; ``accepted``/``terminated`` are the grammar's verdict on it."""
        self.sampled += 1
        if not accepted:
            self.fail(
                f"request {self.index} ({self.request.request_id}): the grammar rejected token {token} "
                f"after {self.sampled - 1} tokens"
            )
            return
        if terminated or (not constrained and token in stop_token_ids):
            self.finish_reason = "grammar" if constrained else "stop"
            self.text = decode(self.tokens)
            return
        self.tokens.append(token)
        if self.request.sampling.stop:
            self.text = decode(self.tokens)
            match = find_stop(self.text, self.request.sampling.stop)
            if match is not None:
                self.text, self.stop = self.text[: match[0]], match[1]
                self.finish_reason = "stop"
                return
        budget = self.request.sampling.max_new_tokens if self.budget is None else self.budget
        if self.sampled >= budget:
            self.finish_reason = "length"
            self.text = decode(self.tokens)

    def completion(self, *, latency_s: float, batch_size: int | None = None) -> Completion:
        """The finished row as a :class:`Completion` (``batch_size`` None: the mean number of
        rows of the steps the row took part in)."""
        metadata: dict[str, object] = dict(self.error)
        if self.stop is not None:
            metadata["stop"] = self.stop
        if batch_size is None:
            batch_size = max(1, round(self.rows_seen / self.steps)) if self.steps else 1
        return Completion(
            request_id=self.request.request_id,
            text=self.text,
            usage=TokenUsage(prompt_tokens=len(self.prompt_ids), completion_tokens=self.sampled),
            finish_reason=self.finish_reason or "error",
            latency_s=latency_s,
            batch_size=batch_size,
            logprobs=tuple(self.logprobs[: len(self.tokens)]),
            metadata=metadata,
            review=self.review,
            review_baseline=self.review_baseline,
            model=self.model,
        )
