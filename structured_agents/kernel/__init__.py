"""The agent kernel: the loop, its configuration, the engine seam it calls (and its optional
streaming capability), history strategies, state and result. Engines implement :class:`Engine`
from below; the kernel imports none of them."""

from structured_agents.kernel.config import KernelConfig
from structured_agents.kernel.engine import (
    Completion,
    Engine,
    FinishReason,
    GenerationRequest,
    SamplingParams,
    TokenLogprob,
)
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
from structured_agents.kernel.streaming import GenerationStream, StreamDelta, StreamingEngine

__all__ = [
    "AgentKernel",
    "Completion",
    "Engine",
    "FinishReason",
    "GenerationRequest",
    "GenerationStream",
    "HistoryStrategy",
    "KeepAll",
    "KernelConfig",
    "Phase",
    "RunResult",
    "RunState",
    "SamplingParams",
    "SlidingWindow",
    "StreamDelta",
    "StreamingEngine",
    "TokenBudget",
    "TokenLogprob",
    "approx_tokens",
]
