"""The engine seam: a batch of generation requests in, a batch of completions out.

Every request carries its own prompt, sampling settings and grammar artifact, so one call of
``generate`` can decode many agents' turns together, each under its own grammar (as vLLM does
with one ``SamplingParams`` per prompt). Engines are synchronous and not required to be
thread-safe: one engine per process (or per thread), fed by a batcher.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from structured_agents.errors import ConfigError
from structured_agents.grammar.artifacts import GrammarArtifact
from structured_agents.types import JsonDict, TokenUsage

__all__ = [
    "Candidate",
    "Completion",
    "Engine",
    "FinishReason",
    "GenerationRequest",
    "Review",
    "SamplingParams",
    "TokenLogprob",
]

MAX_CANDIDATES = 16
"""Most candidates one request may ask for (``SamplingParams.n``)."""
MAX_LOGPROBS = 20
"""Most alternatives a request may ask to see per token (OpenAI's ``top_logprobs`` bound)."""
MAX_NGRAM = 32
"""Largest ``SamplingParams.no_repeat_ngram_size``."""
MAX_REVIEW_CHARS = 4096
"""Longest :attr:`Review.text` (its tokens are read once per candidate)."""

FinishReason = Literal["stop", "length", "grammar", "error"]


@dataclass(frozen=True, slots=True)
class SamplingParams:
    """Decoding settings of one request."""

    max_new_tokens: int = 256
    """Upper bound on generated tokens (>= 1)."""
    temperature: float = 0.0
    """0 means greedy; > 0 samples."""
    top_p: float = 1.0
    """Nucleus sampling mass in (0, 1]."""
    seed: int | None = None
    """Seed for sampling; with the same seed and inputs an engine returns the same output."""
    stop: tuple[str, ...] = ()
    """Strings that end generation (not included in the output)."""
    frequency_penalty: float = 0.0
    """Subtracted from a token's logit once for each time the request already generated it (the
    meaning OpenAI and vLLM give it), in [-2, 2]; a little breaks the repetition loops a small
    greedy model can fall into (``1000000...`` until the token limit)."""
    n: int = 1
    """Candidates to decode for the request, in [1, 16] (vLLM's and OpenAI's ``n``): each its own
    sample (seeded ``seed + i`` where a seed is given), all in the same batch; the completion
    carries every one (:attr:`Completion.candidates`) and the caller picks."""
    bad_words: tuple[str, ...] = ()
    """Texts the output must not contain (vLLM's ``bad_words``): an engine that supports them
    bans, at each step, the token that would complete one of them (as its tokenizer splits it,
    with and without a leading space). A text that starts with a space is banned only after a
    space (mid-sentence): the transformers engine honours that; vLLM would ban both spellings,
    so its engines leave such texts out."""
    logprobs: int | None = None
    """Report each generated token's log probability with this many most likely alternatives
    (0 to 20; 0: the chosen token alone); None reports none. Log probabilities are the model's
    own (before penalties and grammar masks), as vLLM reports them by default."""
    no_repeat_ngram_size: int = 0
    """Never repeat a run of this many tokens (transformers' ``no_repeat_ngram_size``): a token
    that would complete a run the output already holds is pushed below every other token the
    grammar allows (taken only when the grammar allows nothing else), so a greedy row that
    starts looping ("... pi r squared. The area of ... pi r squared.") must write something
    else, and ends. 0: off. The transformers engine honours it; vLLM and OpenAI-compatible
    servers have no such setting (their ``frequency_penalty`` and ``presence_penalty`` are the
    closest), so those engines ignore it."""

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ConfigError(f"SamplingParams.max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ConfigError(f"SamplingParams.temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"SamplingParams.top_p must be in (0, 1], got {self.top_p}")
        if not -2 <= self.frequency_penalty <= 2:
            raise ConfigError(
                f"SamplingParams.frequency_penalty must be in [-2, 2], got {self.frequency_penalty}"
            )
        if not 1 <= self.n <= MAX_CANDIDATES:
            raise ConfigError(f"SamplingParams.n must be in [1, {MAX_CANDIDATES}], got {self.n}")
        if any(not word.strip() for word in self.bad_words):
            raise ConfigError(f"SamplingParams.bad_words must be non-blank texts, got {self.bad_words!r}")
        if not 0 <= self.no_repeat_ngram_size <= MAX_NGRAM:
            raise ConfigError(
                f"SamplingParams.no_repeat_ngram_size must be in [0, {MAX_NGRAM}], "
                f"got {self.no_repeat_ngram_size}"
            )
        if self.logprobs is not None and not 0 <= self.logprobs <= MAX_LOGPROBS:
            raise ConfigError(f"SamplingParams.logprobs must be in [0, {MAX_LOGPROBS}], got {self.logprobs}")

    def bad_words_anywhere(self) -> list[str]:
        """The ``bad_words`` banned in both spellings (vLLM's semantics): those not limited to
        mid-sentence by a leading space."""
        return [word for word in self.bad_words if not word.startswith(" ")]


@dataclass(frozen=True, slots=True)
class TokenLogprob:
    """One generated token with its log probability and the most likely alternatives."""

    token_id: int
    token: str
    """The token's text (decoded alone; a piece of a multi-byte character may read as U+FFFD)."""
    logprob: float
    top: tuple[tuple[str, float], ...] = ()
    """The most likely tokens at this position as ``(text, logprob)``, best first."""


@dataclass(frozen=True, slots=True)
class Review:
    """Score each candidate by how well it explains a text that would follow it: the log
    likelihood of :attr:`text` after the prompt and the candidate, summed over its tokens (the
    reviewer of Coder-Reviewer reranking, Zhang et al. 2022: a docstring is scored by the
    likelihood of the code it documents). The same text after the prompt and :attr:`empty`
    (what the model writes when it says nothing) is the baseline: a candidate's margin over it
    is how much it tells of the text, a confidence its caller can flag on."""

    text: str
    """What follows a candidate (a definition's body after its docstring)."""
    empty: str = ""
    """The output that says nothing (a docstring closed at once), for the baseline."""

    def __post_init__(self) -> None:
        if not self.text.strip():
            raise ConfigError("Review.text must be a non-blank text")
        if len(self.text) > MAX_REVIEW_CHARS:
            raise ConfigError(
                f"Review.text must be at most {MAX_REVIEW_CHARS} characters, got {len(self.text)}"
            )


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    """One model turn to decode.

    ``prompt`` is the full text in the model's native format, rendered by the plugin; engines
    that decode locally use it. ``messages`` and ``tools`` are the same turn in the OpenAI chat
    format, for engines that talk to a chat endpoint.
    """

    prompt: str
    messages: tuple[JsonDict, ...] = ()
    tools: tuple[JsonDict, ...] = ()
    grammar: GrammarArtifact | None = None
    sampling: SamplingParams = field(default_factory=SamplingParams)
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    review: Review | None = None
    """Score the output(s) as :class:`Review` says; engines that cannot leave the scores None."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One of the ``n`` outputs decoded for a request."""

    text: str
    finish_reason: FinishReason = "stop"
    completion_tokens: int = 0
    review: float | None = None
    """The :class:`Review` score of this candidate (None: not asked, or not measured)."""


@dataclass(frozen=True, slots=True)
class Completion:
    """What an engine produced for one request.

    With ``SamplingParams.n > 1`` it carries every candidate in :attr:`candidates`, the first
    of which is also ``text`` and ``finish_reason``; ``usage`` counts them all.
    """

    request_id: str
    text: str
    usage: TokenUsage = field(default_factory=TokenUsage)
    finish_reason: FinishReason = "stop"
    tool_calls_raw: tuple[JsonDict, ...] = ()
    """Tool calls a remote server already parsed (OpenAI format), if any."""
    latency_s: float = 0.0
    """Wall time of the ``generate`` call that produced this completion."""
    batch_size: int = 1
    """How many requests were decoded together in that call (engines that batch continuously:
    the mean number of rows in the decode steps this request took part in, rounded)."""
    logprobs: tuple[TokenLogprob, ...] = ()
    """Per generated token of ``text``, when the request asked for ``logprobs``."""
    metadata: dict[str, Any] = field(default_factory=dict)
    candidates: tuple[Candidate, ...] = ()
    """Every candidate of a request with ``n > 1``, in order; empty for one."""
    review: float | None = None
    """The :class:`Review` score of ``text`` (None: not asked, or not measured)."""
    review_baseline: float | None = None
    """The :class:`Review` text's log likelihood after :attr:`Review.empty` (the baseline)."""
    model: str = ""
    """The model that decoded it, as its engine names it (empty: not said)."""

    @property
    def review_margin(self) -> float | None:
        """How much more likely ``text`` makes the review text than saying nothing does."""
        if self.review is None or self.review_baseline is None:
            return None
        return self.review - self.review_baseline


@runtime_checkable
class Engine(Protocol):
    """Decodes batches of requests. One required method."""

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Decode every request; the i-th completion answers the i-th request."""
        ...
