"""Kernel configuration, validated on construction."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from structured_agents.context import RunContext
from structured_agents.errors import ConfigError, GrammarConfigError
from structured_agents.grammar.config import GrammarConfig
from structured_agents.kernel.engine import Review, SamplingParams
from structured_agents.kernel.history import HistoryStrategy, KeepAll
from structured_agents.plugins.protocol import ModelPlugin
from structured_agents.types import ToolCall, ToolResult, ToolSchema

__all__ = ["BadWords", "Chooser", "KernelConfig", "ParsedTurn", "Reviewer", "ToolView"]

ParsedTurn = tuple[str | None, list[ToolCall]]
"""A candidate output parsed by the plugin: its text content and its tool calls."""


class ToolView(Protocol):
    """How one run sees the tools at its next turn, from its job's inputs and its tool results
    so far (a docstring task narrows its termination tool's schema to the job, so a docstring's
    parameters can only be the target's own; a lint job offers one decision at a time)."""

    def __call__(
        self, tools: Sequence[ToolSchema], inputs: Mapping[str, Any], results: Sequence[ToolResult] = (), /
    ) -> list[ToolSchema]: ...


Chooser = Callable[[RunContext, Sequence["ParsedTurn | None"], Sequence["float | None"]], int]
"""Which of a turn's candidates (``SamplingParams.n``) the run keeps, from the run's context (its
job's inputs, its workspace), each candidate parsed (None where it does not parse) and each
candidate's review margin (:attr:`Completion.review_margin
<structured_agents.kernel.engine.Completion.review_margin>`; None where the engine measured
none): the index of the one kept."""
Reviewer = Callable[[RunContext], "Review | None"]
"""The :class:`~structured_agents.kernel.engine.Review` a run's model turns ask the engine for,
from the run's context (a docstring job: the body of the code it documents); None: none."""
BadWords = Callable[[RunContext], Sequence[str]]
"""Texts one run must never write, from the run's context (a docstring task bans the words of
its worked examples that its target's file, read from the workspace, does not use)."""


@dataclass(frozen=True, slots=True)
class KernelConfig:
    """How the agent loop runs."""

    max_turns: int = 20
    """Model turns a run may take (>= 1); reaching it ends the run with reason ``max_turns``."""
    termination_tool: str | None = "submit_result"
    """Tool whose successful call ends the run, its result becoming the run's output; None: the
    run ends only when the model answers without calls or at ``max_turns``."""
    grammar: GrammarConfig | None = field(default_factory=GrammarConfig)
    """Grammar the plugin builds to constrain each turn; None disables constrained decoding."""
    sampling: SamplingParams = field(default_factory=SamplingParams)
    """Decoding settings of every request."""
    history: HistoryStrategy = field(default_factory=KeepAll)
    """Which part of the history the model sees each turn."""
    tool_concurrency: int = 8
    """Tool calls of one turn that may run at the same time (>= 1)."""
    strict: bool = False
    """Raise ``MaxTurnsExceeded`` (after ``KernelEnd``) instead of returning a ``max_turns`` result."""
    final_turn_termination_only: bool = False
    """On the last allowed turn (``turn == max_turns``) build the grammar for the termination tool
    alone, so a constrained model ends its run with a submission instead of running out of turns.
    The prompt still lists every tool. Needs a ``termination_tool``."""
    tool_view: ToolView | None = None
    """How a run sees the tools (prompt and grammar alike); None: every run sees them as they are."""
    choose: Chooser | None = None
    """Which candidate of a turn decoded with ``sampling.n > 1`` the run keeps; None: the first
    that parses into tool calls (else the first)."""
    job_bad_words: BadWords | None = None
    """Texts each run adds to ``sampling.bad_words``, from its job's inputs; those its call
    syntax needs are left out (:mod:`structured_agents.kernel.bans`). None: none."""
    review: Reviewer | None = None
    """What each run's requests ask the engine to score their candidates by; the margin of the
    candidate kept is the run's :attr:`RunState.confidence
    <structured_agents.kernel.state.RunState.confidence>`. None: no review."""

    def __post_init__(self) -> None:
        if self.max_turns < 1:
            raise ConfigError(f"KernelConfig.max_turns must be >= 1, got {self.max_turns}")
        if self.tool_concurrency < 1:
            raise ConfigError(f"KernelConfig.tool_concurrency must be >= 1, got {self.tool_concurrency}")
        if self.termination_tool is not None and not self.termination_tool.strip():
            raise ConfigError("KernelConfig.termination_tool must be a tool name or None, got ''")
        if self.final_turn_termination_only and self.termination_tool is None:
            raise ConfigError(
                "KernelConfig.final_turn_termination_only=True needs a termination_tool, got None"
            )
        if not isinstance(self.history, HistoryStrategy):
            raise ConfigError(f"KernelConfig.history must have a trim() method, got {self.history!r}")

    def verify(self, plugin: ModelPlugin) -> None:
        """Check that ``plugin`` can build the configured grammar (raises GrammarConfigError)."""
        if self.grammar is None:
            return
        supported = {
            "ebnf": plugin.supports_ebnf,
            "structural_tag": plugin.supports_structural_tags,
            "json_schema": plugin.supports_json_schema,
        }
        if not supported[self.grammar.mode]:
            modes = [mode for mode, ok in supported.items() if ok]
            raise GrammarConfigError(
                f"plugin {plugin.name!r} cannot build a {self.grammar.mode!r} grammar "
                f"(KernelConfig.grammar.mode); it supports {modes or 'no grammar modes'}"
            )
