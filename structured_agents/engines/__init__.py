"""Engines: decode batches of generation requests (scripted, batching, local and remote models)."""

from structured_agents.engines.batching import BatchingEngine
from structured_agents.engines.function import BatchInfo, FunctionEngine
from structured_agents.engines.scripted import (
    Script,
    ScriptedEngine,
    ScriptTurn,
    approx_token_count,
    by_run_id,
)
from structured_agents.kernel.engine import (
    Completion,
    Engine,
    FinishReason,
    GenerationRequest,
    SamplingParams,
)

__all__ = [
    "BatchInfo",
    "BatchingEngine",
    "Completion",
    "Engine",
    "FinishReason",
    "FunctionEngine",
    "GenerationRequest",
    "SamplingParams",
    "Script",
    "ScriptTurn",
    "ScriptedEngine",
    "approx_token_count",
    "by_run_id",
]
