"""structured-agents: grammar-constrained tool-calling agents, batched over whole codebases.

The names below are the public API; sub-packages hold the rest (``structured_agents.tools``,
``structured_agents.engines``, ``structured_agents.observer``, ...). Importing this package
imports neither XGrammar/torch nor vLLM: engines and grammar compilation load them on use.
"""

from structured_agents.context import RunContext
from structured_agents.engines.batching import BatchingEngine
from structured_agents.engines.protocol import Completion, Engine, GenerationRequest, SamplingParams
from structured_agents.engines.scripted import ScriptedEngine
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
from structured_agents.observer import Observer, RecordingObserver
from structured_agents.plugins import ModelPlugin, available_plugins, get_plugin, register_plugin
from structured_agents.types import Message, TokenUsage, ToolCall, ToolResult, ToolSchema

__version__ = "0.1.0"

__all__ = [
    "AgentKernel",
    "BatchingEngine",
    "Completion",
    "ConfigError",
    "EBNFGrammar",
    "Engine",
    "EngineError",
    "GenerationRequest",
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
