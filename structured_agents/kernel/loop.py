"""The agent loop: format, generate under a grammar, parse, run tools, repeat.

:class:`AgentKernel` exposes the loop as steps over a :class:`RunState` so a distributed worker
can run the model turn on one machine and the tool calls on another, persisting the state in
between; :meth:`AgentKernel.run` composes the steps for a local run::

    state = await kernel.start(messages)            # KernelStart
    while not state.done:
        request = await kernel.build_request(state)     # ModelRequest
        completion = await kernel.generate(request)      # (any engine, anywhere)
        calls = await kernel.apply_completion(state, completion)  # ModelResponse
        if calls:
            results = await kernel.execute_calls(state)  # ToolCallEvent..., ToolResultEvent...
            await kernel.apply_results(state, results)   # TurnComplete (+ KernelEnd)
    result = kernel.result(state)
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from concurrent.futures import Executor
from dataclasses import replace
from pathlib import Path
from typing import Any

from structured_agents.errors import (
    ConfigError,
    KernelError,
    MaxTurnsExceeded,
    ParseError,
    StructuredAgentsError,
)
from structured_agents.grammar.artifacts import GrammarArtifact
from structured_agents.kernel.bans import syntax_safe
from structured_agents.kernel.config import KernelConfig, ParsedTurn
from structured_agents.kernel.engine import Completion, Engine, GenerationRequest, SamplingParams
from structured_agents.kernel.execution import execute_calls
from structured_agents.kernel.generation import EngineCaller
from structured_agents.kernel.repeats import note_repeated_failures
from structured_agents.kernel.result import RunResult
from structured_agents.kernel.state import Phase, RunState
from structured_agents.observer.composite import CompositeObserver
from structured_agents.observer.events import (
    Event,
    KernelEnd,
    KernelStart,
    ModelRequest,
    ModelResponse,
    TerminationReason,
    ToolCallEvent,
    ToolResultEvent,
    TurnComplete,
)
from structured_agents.observer.protocol import Observer
from structured_agents.plugins.protocol import ModelPlugin
from structured_agents.tools.protocol import ToolSource
from structured_agents.types import Message, ToolCall, ToolResult, ToolSchema

__all__ = ["AgentKernel"]

_MAX_GRAMMARS = 64
"""Distinct tool sets whose grammars a kernel keeps, least recently used dropped first (a tool
view gives each job its own set)."""


class AgentKernel:
    """Runs agents: one plugin, one engine, one tool source, one configuration.

    Many runs may go on concurrently on one event loop. The engine is called off the loop (see
    :class:`EngineCaller`): a batching engine is awaited through its futures, so concurrent
    runs share batches; any other engine runs in ``executor``, by default a private thread.
    """

    def __init__(
        self,
        *,
        plugin: ModelPlugin,
        engine: Engine,
        tools: ToolSource,
        config: KernelConfig | None = None,
        observers: Iterable[Observer] = (),
        executor: Executor | None = None,
    ) -> None:
        self.plugin = plugin
        self.engine = engine
        self.tools = tools
        self.config = config if config is not None else KernelConfig()
        self.config.verify(plugin)
        self.observer = CompositeObserver(observers)
        """Every observer, failures isolated from the run."""
        self._caller = EngineCaller(engine, executor)
        self._grammars: OrderedDict[str, GrammarArtifact] = OrderedDict()
        """Grammars by tool set (usually two: every tool, and the termination tool alone)."""

    def close(self) -> None:
        """Stop the kernel's own engine thread, if it started one."""
        self._caller.close()

    def __enter__(self) -> AgentKernel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- a whole run ----------------------------------------------------------------------

    async def run(
        self,
        messages: Sequence[Message],
        *,
        run_id: str | None = None,
        workspace: Path | None = None,
        inputs: dict[str, Any] | None = None,
    ) -> RunResult:
        """Run the loop until the termination tool, an answer without calls, or ``max_turns``.

        Errors end the run with ``KernelEnd(reason="error")`` and are raised as
        :class:`StructuredAgentsError` subclasses (``EngineError``, ``ParseError``,
        ``GrammarError``...; anything else as ``KernelError``). Cancelling the task stops the
        run where it is, without ``KernelEnd``.
        """
        state = await self.start(messages, run_id=run_id, workspace=workspace, inputs=inputs)
        try:
            while not state.done:
                await self.step(state)
        except Exception as exc:
            error = await self.fail(state, exc)
            if error is exc:
                raise
            raise error from exc
        return self.result(state)

    async def step(self, state: RunState) -> None:
        """Advance a run by one turn (or finish the current one when resumed in ``tools``)."""
        if state.phase == "model":
            request = await self.build_request(state)
            await self.apply_completion(state, await self.generate(request))
        if state.phase == "tools":
            await self.apply_results(state, await self.execute_calls(state))

    def result(self, state: RunState) -> RunResult:
        """The result of a finished run; raises ``MaxTurnsExceeded`` for ``max_turns`` in strict mode."""
        if state.termination == "max_turns" and self.config.strict:
            raise MaxTurnsExceeded(
                f"run {state.run_id} reached max_turns={self.config.max_turns} "
                f"without calling {self.config.termination_tool!r}"
            )
        return RunResult.from_state(state)

    # -- steps ----------------------------------------------------------------------------

    async def start(
        self,
        messages: Sequence[Message],
        *,
        run_id: str | None = None,
        workspace: Path | None = None,
        inputs: dict[str, Any] | None = None,
    ) -> RunState:
        """A new run's state; emits ``KernelStart``."""
        if not messages:
            raise KernelError("a run needs at least one message (the task)")
        names = tuple(schema.name for schema in self.tools.tools())
        termination = self.config.termination_tool
        if termination is not None and termination not in names:
            raise ConfigError(
                f"KernelConfig.termination_tool={termination!r} is not among the tools offered "
                f"({', '.join(names) or 'none'}); offer it or set termination_tool=None"
            )
        state = RunState(
            messages=list(messages),
            workspace=str(workspace) if workspace is not None else None,
            inputs=dict(inputs or {}),
        )
        if run_id is not None:
            state.run_id = run_id
        await self._emit(
            KernelStart(
                run_id=state.run_id,
                turn=0,
                plugin=self.plugin.name,
                tools=names,
                max_turns=self.config.max_turns,
                initial_messages=len(state.messages),
            )
        )
        return state

    async def build_request(self, state: RunState) -> GenerationRequest:
        """Start the next turn: the request for the (trimmed) history; emits ``ModelRequest``.

        The request id is ``f"{run_id}:{turn}"``, so engines can tell runs apart.
        """
        _expect(state, "model")
        turn = state.turn + 1
        tools = self.tools_for(state)
        visible = self.config.history.trim(state.messages)
        request = GenerationRequest(
            prompt=self.plugin.render_prompt(visible, tools),
            messages=tuple(self.plugin.format_messages(visible, tools)),
            tools=tuple(self.plugin.format_tools(tools)),
            grammar=self._grammar_for(self._grammar_tools(tools, turn)),
            sampling=self._sampling(state, tools),
            request_id=f"{state.run_id}:{turn}",
            review=self.config.review(state.context()) if self.config.review is not None else None,
        )
        state.turn = turn
        state.turn_started_at = time.time()
        state.request_id = request.request_id
        state.phase = "generating"
        await self._emit(
            ModelRequest(
                run_id=state.run_id,
                turn=turn,
                request_id=request.request_id,
                messages=len(visible),
                prompt_chars=len(request.prompt),
                grammar=request.grammar.kind if request.grammar is not None else None,
            )
        )
        return request

    def _sampling(self, state: RunState, tools: Sequence[ToolSchema]) -> SamplingParams:
        """The configured sampling, with the job's bad words (``KernelConfig.job_bad_words``,
        those the call syntax needs left out) and the texts the run's tools banned added."""
        sampling = self.config.sampling
        job = self.config.job_bad_words
        banned = syntax_safe(job(state.context()), self.plugin, tools) if job is not None else ()
        banned += tuple(text for result in state.tool_results for text in result.ban)
        if not banned:
            return sampling
        return replace(sampling, bad_words=tuple(dict.fromkeys((*sampling.bad_words, *banned))))

    def tools_for(self, state: RunState) -> list[ToolSchema]:
        """The tools as the run sees them at its next turn, or at the turn being decoded once
        its request is built (``KernelConfig.tool_view`` of its inputs and its tool results so
        far); on a forced last turn the termination tool is among them even where the view
        holds it back (until the work is done, say). The turn's output is parsed as calls of
        these: a plugin keeps no tools of its own between requests."""
        tools = self.tools.tools()
        view = self.config.tool_view
        seen = view(tools, state.inputs, state.tool_results) if view is not None else tools
        termination = self.config.termination_tool
        turn = state.turn + 1 if state.phase == "model" else state.turn
        if self._forced_last(turn) and all(schema.name != termination for schema in seen):
            seen = [*seen, *(schema for schema in tools if schema.name == termination)]
        return seen

    def select_candidate(self, state: RunState, completion: Completion) -> Completion:
        """The completion of the candidate the run keeps (``KernelConfig.choose``), usage still
        counting every candidate; the completion itself when it has no candidates."""
        if not completion.candidates:
            state.confidence = completion.review_margin
            return completion
        tools = self.tools_for(state)
        parsed: list[ParsedTurn | None] = []
        for candidate in completion.candidates:
            try:
                content, calls = self.plugin.parse_response(candidate.text, tools)
            except Exception:  # a candidate that does not parse is simply not chosen
                parsed.append(None)
                continue
            parsed.append((content, self._through_termination(calls)))
        baseline = completion.review_baseline
        margins = [
            None if c.review is None or baseline is None else c.review - baseline
            for c in completion.candidates
        ]
        if self.config.choose is not None:
            index = self.config.choose(state.context(), parsed, margins)
        else:
            index = next((i for i, turn in enumerate(parsed) if turn is not None and turn[1]), 0)
        if not 0 <= index < len(completion.candidates):
            raise KernelError(f"KernelConfig.choose picked candidate {index} of {len(completion.candidates)}")
        chosen = completion.candidates[index]
        state.confidence = margins[index]
        metadata = {**completion.metadata, "candidate": index, "candidates": len(completion.candidates)}
        return replace(
            completion,
            text=chosen.text,
            finish_reason=chosen.finish_reason,
            metadata=metadata,
            candidates=(),
            review=chosen.review,
        )

    async def generate(self, request: GenerationRequest) -> Completion:
        """Decode one request off the event loop; engine failures become ``EngineError``."""
        return await self._caller.generate(request)

    async def apply_completion(self, state: RunState, completion: Completion) -> list[ToolCall]:
        """Parse the turn's completion into the history; emits ``ModelResponse``.

        Returns the calls to execute, through the first call of the termination tool (calls
        after it in the same turn are dropped). With none, the turn and the run end (``no_tool_calls``),
        except when the token limit cut a tool call off (``finish_reason="length"``, unparsable)
        with turns left: the model is told so and the run goes on to the next turn. Cut off on
        its last turn, the run fails with a ``ParseError`` that names the limit.
        """
        _expect(state, "generating")
        completion = self.select_candidate(state, completion)
        if completion.request_id != state.request_id:
            raise KernelError(
                f"run {state.run_id} awaits request {state.request_id}, "
                f"got a completion of {completion.request_id}"
            )
        try:
            content, calls = self.plugin.parse_response(
                completion.text, self.tools_for(state), completion.tool_calls_raw
            )
        except Exception as exc:
            where = f"turn {state.turn} of run {state.run_id}"
            if completion.finish_reason == "length":
                if state.turn < self.config.max_turns:
                    await self._cut_off(state, completion)
                    return []
                raise ParseError(
                    f"{where} was cut off at max_new_tokens={self.config.sampling.max_new_tokens} "
                    f"before its tool call ended, and no turn was left to try again ({exc})"
                ) from exc
            if isinstance(exc, ParseError):
                raise
            raise ParseError(f"plugin {self.plugin.name!r} could not parse {where}: {exc}") from exc
        calls = self._through_termination(calls)
        state.messages.append(Message.assistant(content, tuple(calls)))
        await self._responded(state, completion, content, len(calls))
        if calls:
            state.pending_calls = list(calls)
            state.phase = "tools"
        else:
            state.final_output = content
            await self._turn_complete(state, [])
            await self._end(state, "no_tool_calls")
        return list(calls)

    async def execute_calls(self, state: RunState) -> list[ToolResult]:
        """Run the turn's pending calls through the tool source; the state is not changed.

        Emits ``ToolCallEvent`` per call, then ``ToolResultEvent`` per call in call order.
        """
        _expect(state, "tools")
        calls = state.pending_calls
        for call in calls:
            await self._emit(ToolCallEvent(run_id=state.run_id, turn=state.turn, call=call))
        timed = await execute_calls(
            self.tools, calls, state.context(), concurrency=self.config.tool_concurrency
        )
        for result, duration in timed:
            await self._emit(
                ToolResultEvent(
                    run_id=state.run_id,
                    turn=state.turn,
                    call_id=result.call_id,
                    name=result.name,
                    output=result.output,
                    is_error=result.is_error,
                    duration_s=duration,
                )
            )
        return [result for result, _ in timed]

    async def apply_results(self, state: RunState, results: Sequence[ToolResult]) -> None:
        """Add the turn's results to the history and decide whether the run goes on.

        Emits ``TurnComplete``, then ``KernelEnd`` when the termination tool succeeded
        (its output is the run's output) or the turn was the last one allowed. A failed call
        that repeats an earlier failed one word for word reaches the history with a note
        saying so (:mod:`.repeats`).
        """
        _expect(state, "tools")
        by_id = {result.call_id: result for result in results}
        pending = state.pending_calls
        missing = [call.id for call in pending if call.id not in by_id]
        if missing or len(by_id) != len(pending):
            raise KernelError(
                f"run {state.run_id} turn {state.turn}: results {sorted(by_id)} do not answer "
                f"the pending calls {[call.id for call in pending]}"
            )
        ordered = [by_id[call.id] for call in pending]
        state.messages.extend(
            Message.tool(result) for result in note_repeated_failures(state, pending, ordered)
        )
        state.tool_results.extend(ordered)
        state.pending_calls = []
        await self._turn_complete(state, ordered)
        final = next(
            (
                r
                for c, r in zip(pending, ordered, strict=True)
                if c.name == self.config.termination_tool and not r.is_error
            ),
            None,
        )
        if final is not None:
            state.final_output = final.output
            await self._end(state, "termination_tool")
        elif state.turn >= self.config.max_turns:
            await self._end(state, "max_turns")
        else:
            state.phase = "model"

    async def fail(self, state: RunState, error: BaseException) -> StructuredAgentsError:
        """End a run on ``error`` (``KernelEnd`` with reason ``error``); returns it converted."""
        converted = (
            error
            if isinstance(error, StructuredAgentsError)
            else KernelError(
                f"run {state.run_id} failed at turn {state.turn}: {type(error).__name__}: {error}"
            )
        )
        if not state.done:
            state.error = f"{type(error).__name__}: {error}"
            await self._end(state, "error")
        return converted

    # -- internals ------------------------------------------------------------------------

    def _forced_last(self, turn: int) -> bool:
        """Whether ``turn`` may only end the run (``final_turn_termination_only``)."""
        return self.config.final_turn_termination_only and turn >= self.config.max_turns

    def _grammar_tools(self, tools: list[ToolSchema], turn: int) -> list[ToolSchema]:
        """The tools the turn's grammar allows: only the termination tool on a forced last turn."""
        if self._forced_last(turn):
            return [schema for schema in tools if schema.name == self.config.termination_tool]
        return tools

    def _grammar_for(self, tools: Sequence[ToolSchema]) -> GrammarArtifact | None:
        """The grammar for ``tools``, built once per distinct tool set."""
        if self.config.grammar is None or not tools:
            return None
        key = json.dumps([schema.to_openai_format() for schema in tools], sort_keys=True, default=str)
        grammar = self._grammars.pop(key, None)
        if grammar is None:
            grammar = self.plugin.build_grammar(tools, self.config.grammar)
        self._grammars[key] = grammar
        while len(self._grammars) > _MAX_GRAMMARS:
            self._grammars.popitem(last=False)
        return grammar

    async def _cut_off(self, state: RunState, completion: Completion) -> None:
        """End a turn the token limit cut off mid-call: the model is told, and tries again.

        The cut-off text stays out of the history (a small model tends to copy it); the
        ``ModelResponse`` event keeps it.
        """
        state.messages.append(Message.user(_CUT_OFF.format(limit=self.config.sampling.max_new_tokens)))
        await self._responded(state, completion, None, 0)
        await self._turn_complete(state, [])
        state.phase = "model"

    def _through_termination(self, calls: list[ToolCall]) -> list[ToolCall]:
        """The calls up to and including the first call of the termination tool.

        The run ends at that call, so calls after it in the same turn are dropped, neither run
        nor kept in the history (the raw text in ``ModelResponse`` still has them).
        """
        names = [call.name for call in calls]
        if self.config.termination_tool in names:
            return calls[: names.index(self.config.termination_tool) + 1]
        return calls

    async def _responded(
        self, state: RunState, completion: Completion, content: str | None, tool_calls: int
    ) -> None:
        """Count the completion's tokens, close its request, emit ``ModelResponse``."""
        state.usage += completion.usage
        state.request_id = None
        await self._emit(
            ModelResponse(
                run_id=state.run_id,
                turn=state.turn,
                request_id=completion.request_id,
                latency_s=completion.latency_s,
                usage=completion.usage,
                batch_size=completion.batch_size,
                finish_reason=completion.finish_reason,
                text=completion.text,
                content=content,
                tool_calls=tool_calls,
                model=completion.model,
            )
        )

    async def _emit(self, event: Event) -> None:
        await self.observer.on_event(event)

    async def _turn_complete(self, state: RunState, results: Sequence[ToolResult]) -> None:
        await self._emit(
            TurnComplete(
                run_id=state.run_id,
                turn=state.turn,
                duration_s=time.time() - state.turn_started_at,
                tool_calls=len(results),
                tool_errors=sum(result.is_error for result in results),
            )
        )

    async def _end(self, state: RunState, reason: TerminationReason) -> None:
        state.phase = "done"
        state.termination = reason
        state.request_id = None
        await self._emit(
            KernelEnd(
                run_id=state.run_id,
                turn=state.turn,
                reason=reason,
                usage=state.usage,
                duration_s=time.time() - state.started_at,
                error=state.error,
            )
        )


_CUT_OFF = (
    "Your reply was cut off at the {limit}-token limit before the tool call was complete. "
    "Make the call again with shorter arguments."
)
"""What the model is told when the token limit cut its tool call off."""


def _expect(state: RunState, phase: Phase) -> None:
    if state.phase != phase:
        raise KernelError(f"run {state.run_id} is in phase {state.phase!r}, this step needs {phase!r}")
