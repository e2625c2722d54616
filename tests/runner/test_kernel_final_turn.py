"""``KernelConfig.final_turn_termination_only``: the last allowed turn can only terminate.

The runner relies on it so every job of a small model ends with a submission; it is a kernel
option, tested here with the real FunctionGemma plugin, grammar-checked scripted turns and
Python tools.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from structured_agents.engines import ScriptedEngine, by_run_id
from structured_agents.errors import ConfigError
from structured_agents.kernel import AgentKernel, KernelConfig
from structured_agents.kernel.config import ToolView
from structured_agents.plugins.registry import get_plugin
from structured_agents.tools import PythonBackend, PythonRegistry, RegistryBackendToolSource
from structured_agents.types import Message, ToolCall, ToolSchema

registry = PythonRegistry()


@registry.tool
def look(path: str) -> str:
    """Look at a file.

    Args:
        path: The file.
    """
    return f"looked at {path}"


@registry.tool
def submit_result(answer: str) -> str:
    """Submit the answer.

    Args:
        answer: The answer.
    """
    return answer


def _grammars(final_only: bool, view: ToolView | None = None) -> tuple[list[str], str]:
    plugin = get_plugin("function_gemma")
    look_call = [ToolCall("look", {"path": "a.py"})]
    engine = ScriptedEngine([look_call, look_call], plugin=plugin, key=by_run_id)
    kernel = AgentKernel(
        plugin=plugin,
        engine=engine,
        tools=RegistryBackendToolSource(registry, PythonBackend(registry)),
        config=KernelConfig(max_turns=2, final_turn_termination_only=final_only, tool_view=view),
    )
    with kernel:  # the engine does not check its turns against the grammar: both turns run
        result = asyncio.run(kernel.run([Message.user("look at a.py")]))
    texts = [str(r.grammar.to_vllm_payload()) for r in engine.requests if r.grammar is not None]
    return texts, result.termination


def test_the_last_turn_grammar_offers_only_the_termination_tool() -> None:
    texts, _ = _grammars(final_only=True)

    assert len(texts) == 2
    assert "look" in texts[0] and "submit_result" in texts[0]
    assert "look" not in texts[1] and "submit_result" in texts[1]


def test_the_last_turn_offers_the_termination_tool_a_view_holds_back() -> None:
    """A view may hold the submission back until the work is done (the lint task does); when
    the budget is spent, the run may still submit."""

    def work_first(
        tools: Sequence[ToolSchema], inputs: Mapping[str, Any], results: Sequence[Any]
    ) -> list[ToolSchema]:
        return [tool for tool in tools if tool.name != "submit_result"]

    texts, _ = _grammars(final_only=True, view=work_first)

    assert "look" in texts[0] and "submit_result" not in texts[0]
    assert "look" not in texts[1] and "submit_result" in texts[1]


def test_without_the_option_every_turn_offers_every_tool() -> None:
    texts, termination = _grammars(final_only=False)

    assert all("look" in text for text in texts) and termination == "max_turns"


def test_the_option_needs_a_termination_tool() -> None:
    with pytest.raises(ConfigError, match="final_turn_termination_only=True needs a termination_tool"):
        KernelConfig(termination_tool=None, final_turn_termination_only=True)
