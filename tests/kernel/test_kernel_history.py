"""History strategies: whole groups only, head pinned, never an orphaned tool message."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structured_agents.errors import ConfigError
from structured_agents.kernel import HistoryStrategy, KeepAll, SlidingWindow, TokenBudget, approx_tokens
from structured_agents.types import Message, ToolCall, ToolResult


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """A well-formed history: optional system, the task, then answers, calls with results, users."""
    counter = iter(range(10_000))
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append(Message.system(f"system {next(counter)}"))
    messages.append(Message.user(f"task {next(counter)}"))
    for kind in draw(st.lists(st.sampled_from(["calls", "answer", "user"]), max_size=12)):
        n = next(counter)
        if kind == "answer":
            messages.append(Message.assistant(f"answer {n}"))
        elif kind == "user":
            messages.append(Message.user(f"user {n}"))
        else:
            calls = tuple(ToolCall("t", {"i": n}, id=f"c{n}_{k}") for k in range(draw(st.integers(1, 3))))
            messages.append(Message.assistant(None if draw(st.booleans()) else f"thinking {n}", calls))
            messages.extend(
                Message.tool(ToolResult(c.id, "t", "x" * draw(st.integers(0, 80)))) for c in calls
            )
    return messages


def head_len(messages: list[Message]) -> int:
    return 2 if messages[0].role == "system" else 1


def newest_group_len(messages: list[Message]) -> int:
    """Messages in the newest group: the last call and its results, or the last message alone."""
    if not messages:
        return 0
    size = 1
    while messages[-size].role == "tool":
        size += 1
    return size


def check_trim(messages: list[Message], kept: Sequence[Message]) -> None:
    """The invariants every strategy keeps."""
    positions = [messages.index(m) for m in kept]  # messages are unique by construction
    assert positions == sorted(set(positions)), "order kept, nothing duplicated"
    head = head_len(messages)
    assert list(kept[:head]) == messages[:head], "system and task message kept"
    assert kept[-1] == messages[-1], "the newest message is always kept"
    seen_calls: set[str] = set()
    for message in kept:
        seen_calls.update(call.id for call in message.tool_calls)
        if message.role == "tool":
            assert message.tool_call_id in seen_calls, f"orphaned tool message {message.tool_call_id}"


@settings(max_examples=300, deadline=None)
@given(histories(), st.integers(1, 30))
def test_sliding_window_never_orphans_tool_messages(messages: list[Message], window: int) -> None:
    kept = SlidingWindow(window).trim(messages)
    check_trim(messages, kept)
    if len(kept) > window:  # only the head and the newest group, kept whole, may overflow it
        rest = messages[head_len(messages) :]
        assert kept == messages[: head_len(messages)] + rest[-newest_group_len(rest) :]


@settings(max_examples=200, deadline=None)
@given(histories(), st.integers(1, 400))
def test_token_budget_never_orphans_tool_messages(messages: list[Message], budget: int) -> None:
    check_trim(messages, TokenBudget(budget).trim(messages))


def tool_turn(n: int, calls: int = 2) -> list[Message]:
    made = tuple(ToolCall("t", {}, id=f"c{n}_{k}") for k in range(calls))
    return [Message.assistant(None, made), *(Message.tool(ToolResult(c.id, "t", "ok")) for c in made)]


def test_window_drops_whole_oldest_groups() -> None:
    head = [Message.system("s"), Message.user("task")]
    messages = head + tool_turn(1) + tool_turn(2) + [Message.assistant("done")]
    assert SlidingWindow(6).trim(messages) == head + tool_turn(2) + [Message.assistant("done")]
    assert SlidingWindow(5).trim(messages) == [*head, Message.assistant("done")]
    assert SlidingWindow(100).trim(messages) == messages
    assert KeepAll().trim(messages) == messages


def test_the_newest_group_is_kept_even_when_it_overflows() -> None:
    messages = [Message.user("task"), *tool_turn(1, calls=3)]
    assert SlidingWindow(2).trim(messages) == messages


def test_token_budget_counts_estimated_tokens() -> None:
    head = [Message.user("task")]
    old, new = [Message.assistant("a" * 400)], [Message.assistant("b" * 40)]
    messages = head + old + new
    assert approx_tokens(new[0]) == 4 + 10
    assert TokenBudget(approx_tokens(head[0]) + 14).trim(messages) == head + new
    assert TokenBudget(1000).trim(messages) == messages


def test_strategies_validate_and_satisfy_the_protocol() -> None:
    for strategy in (KeepAll(), SlidingWindow(3), TokenBudget(10)):
        assert isinstance(strategy, HistoryStrategy)
    with pytest.raises(ConfigError, match="max_messages must be >= 1, got 0"):
        SlidingWindow(0)
    with pytest.raises(ConfigError, match="max_tokens must be >= 1, got -5"):
        TokenBudget(-5)
