"""A real engine that plays a script: deterministic model turns for tests, examples and dry runs.

Each turn of a script is one of:

* a string: the exact text the "model" writes;
* a sequence of :class:`ToolCall`: rendered with the plugin's ``render_tool_calls``, i.e. the
  text the model would write to make those calls;
* a function of the :class:`GenerationRequest` returning either of the above (as pydantic-ai's
  ``FunctionModel``), for answers that depend on the prompt.

Many runs can share one engine: ``key`` maps each request to the conversation it belongs to
(:func:`by_run_id` reads the run id the kernel puts in request ids) and every key plays the
script from its own position. ``script`` may also be a function of the key returning that
conversation's own script. With ``turn_of`` (for example :func:`request_turn`, the turn the
kernel writes into request ids) the turn is read from the request instead of counted, so the
engine keeps no position: any process, any number of times, answers turn ``n`` with reply
``n`` (what distributed runs need, whose turns any worker may decode, again after a crash).
:func:`~structured_agents.engines.script_file.load_script` builds such an engine from a JSON
file (``SA_ENGINE__NAME=scripted``). With ``validate_grammar=True`` every output is matched
against the request's grammar with XGrammar, and an output the grammar rejects raises
``EngineError``, so a scripted test proves its turns are outputs a constrained model could
produce.

Token usage is estimated at four characters per token (rounded up) for prompt and output, and
``max_new_tokens`` is honoured on that estimate: a longer turn is cut to ``4 * max_new_tokens``
characters with ``finish_reason="length"``, as a model that ran out of tokens would be.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from typing import TypeAlias

from structured_agents.engines.candidates import stable_seed
from structured_agents.errors import ConfigError, EngineError
from structured_agents.grammar.artifacts import GrammarArtifact
from structured_agents.grammar.check import grammar_problem
from structured_agents.kernel.engine import Candidate, Completion, GenerationRequest
from structured_agents.plugins.protocol import ModelPlugin
from structured_agents.types import TokenUsage, ToolCall, ToolSchema

__all__ = ["Script", "ScriptTurn", "ScriptedEngine", "approx_token_count", "by_run_id", "request_turn"]

_Reply: TypeAlias = str | Sequence[ToolCall]
ScriptTurn: TypeAlias = str | Sequence[ToolCall] | Callable[[GenerationRequest], _Reply]
"""One scripted model turn: text, calls to render, or a function of the request."""
Script: TypeAlias = Sequence[ScriptTurn]
"""The turns of one conversation, in order."""


def approx_token_count(text: str) -> int:
    """Estimated tokens of ``text``: four characters per token, rounded up."""
    return (len(text) + 3) // 4


def by_run_id(request: GenerationRequest) -> str:
    """The run a kernel request belongs to: its id without the ``:turn`` suffix."""
    run_id, sep, _ = request.request_id.rpartition(":")
    return run_id if sep else request.request_id


def request_turn(request: GenerationRequest) -> int | None:
    """The turn the kernel writes into a request id (``"{run_id}:{turn}"``); None without one."""
    _, sep, suffix = request.request_id.rpartition(":")
    return int(suffix) if sep and suffix.isdigit() and int(suffix) >= 1 else None


def _same_conversation(request: GenerationRequest) -> str:
    return ""


class ScriptedEngine:
    """An :class:`Engine` whose outputs come from a script instead of a model."""

    def __init__(
        self,
        script: Script | Callable[[Hashable], Script],
        *,
        plugin: ModelPlugin | None = None,
        key: Callable[[GenerationRequest], Hashable] | None = None,
        turn_of: Callable[[GenerationRequest], int | None] | None = None,
        validate_grammar: bool = False,
        delay_s: float = 0.0,
        keep_requests: bool = True,
    ) -> None:
        """
        Args:
            script: the turns every conversation plays, or a function of a conversation's key
                returning its script (called once per key).
            plugin: renders turns given as tool calls; required when the script has any.
            key: which conversation a request belongs to; by default all requests share one.
            turn_of: the 1-based turn a request asks for (None: the conversation's next one);
                by default every request takes its conversation's next turn.
            validate_grammar: match each output against ``request.grammar`` with XGrammar.
            delay_s: seconds each ``generate`` call sleeps (a model's time), once per batch.
            keep_requests: keep every request in :attr:`requests`, for a test to read; False in
                a long-lived process (a worker, ``sa serve``), whose memory must not grow with
                every prompt it is sent.
        """
        if not callable(script) and plugin is None and any(_is_calls(turn) for turn in script):
            raise ConfigError("ScriptedEngine.plugin is required to render scripted tool calls")
        if delay_s < 0:
            raise ConfigError(f"ScriptedEngine.delay_s must be >= 0, got {delay_s}")
        self._script = script
        self.plugin = plugin
        self._key = key if key is not None else _same_conversation
        self._turn_of = turn_of
        self.validate_grammar = validate_grammar
        self.delay_s = delay_s
        self.keep_requests = keep_requests
        self.batch_sizes: list[int] = []
        """Size of every batch ``generate`` was called with, in order."""
        self.requests: list[GenerationRequest] = []
        """Every request received, in order (none unless ``keep_requests``)."""
        self._scripts: dict[Hashable, Script] = {}
        self._positions: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """The next scripted turn of each request's conversation, in request order; a request
        with ``n > 1`` gets ``n`` candidates, its turn played once per candidate seed."""
        started = time.perf_counter()
        with self._lock:
            self.batch_sizes.append(len(requests))
            if self.keep_requests:
                self.requests.extend(requests)
            picked = [self._next_turn(request) for request in requests]
        outputs = [
            [self._render(row, key, index, turn) for row in _candidate_rows(request)]
            for request, (key, index, turn) in zip(requests, picked, strict=True)
        ]
        if self.delay_s:
            time.sleep(self.delay_s)
        latency = time.perf_counter() - started
        return [
            _completion(request, texts, latency, len(requests), index)
            for request, texts, (_, index, _) in zip(requests, outputs, picked, strict=True)
        ]

    def _next_turn(self, request: GenerationRequest) -> tuple[Hashable, int, ScriptTurn]:
        key = self._key(request)
        script = self._scripts.get(key)
        if script is None:
            script = self._script(key) if callable(self._script) else self._script
            self._scripts[key] = script
        asked = self._turn_of(request) if self._turn_of is not None else None
        index = self._positions.get(key, 0) if asked is None else asked - 1
        if index >= len(script):
            raise EngineError(
                f"ScriptedEngine: the script of conversation {key!r} has {len(script)} turns, "
                f"request {request.request_id} asks for turn {index + 1}"
            )
        if asked is None:
            self._positions[key] = index + 1
        return key, index, script[index]

    def _render(
        self, request: GenerationRequest, key: Hashable, index: int, turn: ScriptTurn
    ) -> tuple[str, bool]:
        """The turn's text, cut to the request's token budget, and whether it was cut."""
        reply = turn(request) if callable(turn) else turn
        if isinstance(reply, str):
            text = reply
        elif self.plugin is None:
            raise EngineError(
                f"ScriptedEngine: turn {index} of {key!r} returned tool calls but no plugin is set"
            )
        else:
            tools = [ToolSchema.from_openai_format(tool) for tool in request.tools]
            text = self.plugin.render_tool_calls(list(reply), tools)
        limit = 4 * request.sampling.max_new_tokens
        truncated = len(text) > limit
        text = text[:limit]
        if self.validate_grammar and request.grammar is not None:
            self._check(
                request.grammar, text, f"turn {index} of conversation {key!r}", complete=not truncated
            )
        return text, truncated

    def _check(self, grammar: GrammarArtifact, text: str, where: str, *, complete: bool) -> None:
        """Raise unless the grammar accepts ``text`` (a whole output, or a prefix of one)."""
        problem = grammar_problem(grammar, text, complete=complete)
        if problem is not None:
            raise EngineError(
                f"ScriptedEngine: {where} violates the request's {grammar.kind} grammar: {problem}; "
                f"text={text!r}"
            )


def _candidate_rows(request: GenerationRequest) -> list[GenerationRequest]:
    """The request once per candidate, each with its own seed (see ``engines.candidates``)."""
    if request.sampling.n == 1:
        return [request]
    base = stable_seed(request)
    return [
        replace(request, sampling=replace(request.sampling, n=1, seed=base + i))
        for i in range(request.sampling.n)
    ]


def _completion(
    request: GenerationRequest, texts: list[tuple[str, bool]], latency: float, batch: int, index: int
) -> Completion:
    candidates = tuple(
        Candidate(text, "length" if truncated else "stop", approx_token_count(text))
        for text, truncated in texts
    )
    first = candidates[0]
    return Completion(
        request_id=request.request_id,
        text=first.text,
        usage=TokenUsage(approx_token_count(request.prompt), sum(c.completion_tokens for c in candidates)),
        finish_reason=first.finish_reason,
        latency_s=latency,
        batch_size=batch,
        metadata={"script_turn": index},
        candidates=candidates if request.sampling.n > 1 else (),
        model="scripted",
    )


def _is_calls(turn: ScriptTurn) -> bool:
    return not isinstance(turn, str) and not callable(turn)
