"""A failed call made again, word for word: the model is told, whichever tool and bundle.

A small model that gets an error back often makes the very same call on every turn left (an
outside user saw twelve jobs each repeat one failing ``apply_fix`` until their turns ran out).
When a call fails and the run already made an identical call (same tool, same arguments) that
failed too, the result the model reads says so, with the earlier error, and asks for a
different call. Only the history the model reads from carries the note: the run's tool results
(``RunState.tool_results``, what a task reads), the ``tool_calls`` rows and the
``ToolResultEvent`` keep what the tool returned.

Telling rather than banning: a grammar cannot in general exclude one exact argument text (free
strings), a tool's answer may rightly change between turns, and a note works with every plugin
and engine, with or without a grammar.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from structured_agents.kernel.state import RunState
from structured_agents.types import ToolCall, ToolResult

__all__ = ["REPEATED_CALL", "note_repeated_failures"]

REPEATED_CALL = (
    "You made this exact call already and it failed: {earlier} Do not repeat it; make a different call."
)
"""What replaces the result of a failed call that repeats an earlier failed one."""
_EARLIER_CHARS = 300
"""Characters of the earlier error quoted in the note."""


def _key(call: ToolCall) -> str:
    return json.dumps([call.name, call.arguments], sort_keys=True, default=str)


def _failed_before(state: RunState) -> dict[str, str]:
    """Each failed call of the run so far (its tool and arguments) -> its first error."""
    calls = {call.id: call for message in state.messages for call in message.tool_calls}
    failed: dict[str, str] = {}
    for result in state.tool_results:
        call = calls.get(result.call_id)
        if result.is_error and call is not None:
            failed.setdefault(_key(call), result.output)
    return failed


def note_repeated_failures(
    state: RunState, calls: Sequence[ToolCall], results: Sequence[ToolResult]
) -> list[ToolResult]:
    """``results`` (of ``calls``, in order) with the note on each failure that repeats a failed
    call of an earlier turn."""
    failed = _failed_before(state)
    noted = []
    for call, result in zip(calls, results, strict=True):
        earlier = failed.get(_key(call)) if result.is_error else None
        if earlier is not None:
            quoted = earlier.strip()[:_EARLIER_CHARS]
            result = ToolResult(result.call_id, result.name, REPEATED_CALL.format(earlier=quoted), True)
        noted.append(result)
    return noted
