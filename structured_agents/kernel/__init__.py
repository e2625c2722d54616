"""The agent kernel: the loop, its configuration, history strategies, state and result."""

from structured_agents.kernel.config import KernelConfig
from structured_agents.kernel.history import (
    HistoryStrategy,
    KeepAll,
    SlidingWindow,
    TokenBudget,
    approx_tokens,
)
from structured_agents.kernel.loop import AgentKernel
from structured_agents.kernel.result import RunResult
from structured_agents.kernel.state import Phase, RunState

__all__ = [
    "AgentKernel",
    "HistoryStrategy",
    "KeepAll",
    "KernelConfig",
    "Phase",
    "RunResult",
    "RunState",
    "SlidingWindow",
    "TokenBudget",
    "approx_tokens",
]
