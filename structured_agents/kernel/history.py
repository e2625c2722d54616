"""History strategies: which part of a run's history the model sees each turn.

The kernel keeps the whole history in the run state and trims only what it sends, so the
record of the run is never lost.

Trimming works on *groups*, never on single messages: an assistant message that made tool
calls and the tool messages answering those calls form one group, and a group is kept or
dropped whole. A tool message therefore never loses the assistant call that produced it
(the seed's window could cut between them, which chat templates and the model both reject).
The head (leading system messages and the first user message, which states the task) is
always kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from structured_agents.errors import ConfigError
from structured_agents.types import Message

__all__ = ["HistoryStrategy", "KeepAll", "SlidingWindow", "TokenBudget", "approx_tokens"]


@runtime_checkable
class HistoryStrategy(Protocol):
    """Chooses the messages the model sees."""

    def trim(self, messages: Sequence[Message]) -> list[Message]:
        """A subsequence of ``messages`` (order kept) to send to the model."""
        ...


@dataclass(frozen=True, slots=True)
class KeepAll:
    """Sends the whole history."""

    def trim(self, messages: Sequence[Message]) -> list[Message]:
        """Every message."""
        return list(messages)


def approx_tokens(message: Message) -> int:
    """A cheap token estimate: about four characters per token, plus a few for the framing."""
    chars = len(message.content or "")
    chars += sum(len(call.name) + len(str(call.arguments)) for call in message.tool_calls)
    return 4 + (chars + 3) // 4


def _split(messages: Sequence[Message]) -> tuple[list[Message], list[list[Message]]]:
    """The pinned head and the groups of the rest, in order."""
    head_len = 0
    while head_len < len(messages) and messages[head_len].role == "system":
        head_len += 1
    if head_len < len(messages) and messages[head_len].role == "user":
        head_len += 1
    groups: list[list[Message]] = []
    open_ids: set[str] = set()
    for message in messages[head_len:]:
        if message.role == "tool" and groups and message.tool_call_id in open_ids:
            groups[-1].append(message)
            continue
        groups.append([message])
        open_ids = {call.id for call in message.tool_calls}
    return list(messages[:head_len]), groups


def _trim_to_budget(
    messages: Sequence[Message], budget: int, cost: Callable[[Message], int]
) -> list[Message]:
    """The head plus the newest groups that fit ``budget``; the newest group is always kept."""
    head, groups = _split(messages)
    remaining = budget - sum(cost(m) for m in head)
    kept: list[list[Message]] = []
    for group in reversed(groups):
        group_cost = sum(cost(m) for m in group)
        if kept and group_cost > remaining:
            break
        kept.append(group)
        remaining -= group_cost
    return head + [m for group in reversed(kept) for m in group]


@dataclass(frozen=True, slots=True)
class SlidingWindow:
    """Keeps the head and the newest whole groups within ``max_messages``.

    The newest group is kept even when it alone overflows the window: the model needs the
    results of its last calls to go on.
    """

    max_messages: int
    """Target number of messages sent (>= 1)."""

    def __post_init__(self) -> None:
        if self.max_messages < 1:
            raise ConfigError(f"SlidingWindow.max_messages must be >= 1, got {self.max_messages}")

    def trim(self, messages: Sequence[Message]) -> list[Message]:
        """The head and the newest groups that fit."""
        return _trim_to_budget(messages, self.max_messages, lambda _: 1)


@dataclass(frozen=True, slots=True)
class TokenBudget:
    """Keeps the head and the newest whole groups within an estimated token budget.

    Tokens are estimated with :func:`approx_tokens` (no tokenizer needed); the newest group is
    always kept.
    """

    max_tokens: int
    """Target estimated tokens of the history sent (>= 1)."""

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ConfigError(f"TokenBudget.max_tokens must be >= 1, got {self.max_tokens}")

    def trim(self, messages: Sequence[Message]) -> list[Message]:
        """The head and the newest groups that fit."""
        return _trim_to_budget(messages, self.max_tokens, approx_tokens)
