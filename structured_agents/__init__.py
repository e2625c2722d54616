"""structured-agents: grammar-constrained tool-calling agents, batched over whole codebases.

The names below are the public API; sub-packages hold the rest (``structured_agents.tools``,
``structured_agents.engines``, ``structured_agents.observer``, ...). Importing this package
imports neither XGrammar/torch nor vLLM, nor any engine: ``BatchingEngine`` and
``ScriptedEngine`` are imported when first used (so importing the kernel loads no engine).
"""

from typing import TYPE_CHECKING, Any

from structured_agents.context import RunContext
from structured_agents.errors import (
    ConfigError,
    EngineError,
    GrammarConfigError,
    GrammarError,
    KernelError,
    MaxTurnsExceeded,
    ParseError,
    PluginNotFoundError,
    StructuredAgentsError,
    ToolError,
    ToolExecutionError,
    ToolNotFoundError,
)
from structured_agents.grammar import (
    EBNFGrammar,
    GrammarArtifact,
    GrammarConfig,
    JsonSchemaGrammar,
    StructuralTagGrammar,
)
from structured_agents.kernel import AgentKernel, KernelConfig, RunResult, RunState
from structured_agents.kernel.engine import Completion, Engine, GenerationRequest, SamplingParams
from structured_agents.kernel.streaming import GenerationStream, StreamingEngine
from structured_agents.observer import Observer, RecordingObserver
from structured_agents.plugins import ModelPlugin, available_plugins, get_plugin, register_plugin
from structured_agents.types import Message, TokenUsage, ToolCall, ToolResult, ToolSchema

if TYPE_CHECKING:
    from structured_agents.engines.batching import BatchingEngine
    from structured_agents.engines.scripted import ScriptedEngine

__version__ = "0.1.0"

_LAZY = {
    "BatchingEngine": "structured_agents.engines.batching",
    "ScriptedEngine": "structured_agents.engines.scripted",
}
"""Exports imported on first use: concrete engines stay out of ``import structured_agents``."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AgentKernel",
    "BatchingEngine",
    "Completion",
    "ConfigError",
    "EBNFGrammar",
    "Engine",
    "EngineError",
    "GenerationRequest",
    "GenerationStream",
    "GrammarArtifact",
    "GrammarConfig",
    "GrammarConfigError",
    "GrammarError",
    "JsonSchemaGrammar",
    "KernelConfig",
    "KernelError",
    "MaxTurnsExceeded",
    "Message",
    "ModelPlugin",
    "Observer",
    "ParseError",
    "PluginNotFoundError",
    "RecordingObserver",
    "RunContext",
    "RunResult",
    "RunState",
    "SamplingParams",
    "ScriptedEngine",
    "StreamingEngine",
    "StructuralTagGrammar",
    "StructuredAgentsError",
    "TokenUsage",
    "ToolCall",
    "ToolError",
    "ToolExecutionError",
    "ToolNotFoundError",
    "ToolResult",
    "ToolSchema",
    "available_plugins",
    "get_plugin",
    "register_plugin",
]
