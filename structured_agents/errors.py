"""The one error tree of structured-agents.

Every error the package raises on purpose derives from :class:`StructuredAgentsError`;
errors of lower libraries (XGrammar, transformers, Monty, SQLAlchemy, Celery, Redis) are
converted at the seam where they enter, so callers catch one root::

    StructuredAgentsError
    ├── ConfigError                 invalid configuration value (names the field and value)
    │   ├── GrammarConfigError      grammar mode/plugin capability mismatch
    │   ├── PluginNotFoundError     unknown plugin name
    │   ├── bundles.BundleError     malformed bundle manifest (file:line:col, field, expected)
    │   ├── registry.RegistryError   malformed registry document (file, line, JSON path)
    │   │   └── VersionError, SchemaRefError, SchemaCycleError, RoutingError, MigrationError
    │   ├── report.QualityFileError     malformed quality file of ``sa report`` (file, field)
    │   └── jobs.JobInputError      jobs a client gave are malformed (each bad job and field)
    ├── GrammarError                a grammar artifact failed to build or compile
    ├── ParseError                  model output could not be parsed into tool calls
    ├── EngineError                 an engine failed to generate (load, decode, transport)
    ├── ToolError                   tool resolution or execution failed
    │   ├── ToolNotFoundError       a tool name no registry provides
    │   ├── ToolExecutionError      a tool ran and failed
    │   │   └── registry.PipelineError   a step of an agent-as-tool pipeline failed
    │   └── pym.PymError            .pym scripts
    │       ├── PymCheckError       (PymParseError) rejected at check time, with diagnostics
    │       ├── PymInputError       arguments do not fit the declared inputs
    │       └── PymRunError         (also a ToolExecutionError) failed in the sandbox:
    │           └── PymExecutionError, PymExternalError, PymLimitError, PymOutputError
    ├── KernelError                 the agent loop cannot continue
    │   └── MaxTurnsExceeded        the run hit max_turns without the termination tool
    ├── store.StoreError            a database operation failed
    │   ├── StoreUnavailableError   the database cannot be reached (transient: retried)
    │   └── RecordNotFoundError     no batch, run or result with that id
    ├── workers.DistributedError    the distributed runner could not do something
    │   ├── BrokerError             a broker operation failed (transient: retried)
    │   └── StepFailedError         a step failed on every attempt of its budget
    ├── tasks.TaskError             a run's output could not be turned into a result
    ├── jobs.DiscoveryError         a codebase could not be walked or parsed for jobs
    ├── patches.PatchError          a patch could not be built or applied
    ├── evaluation.EvaluationError  ``sa eval``: a package could not be fetched or evaluated
    ├── api.AccessDeniedError       an API request names a path outside what the operator allowed
    └── serve.ApiError              ``sa serve``: a request answered with an OpenAI error body

Each error carries a message that says what failed and where (file, line, field, tool,
request index...). Tool failures during a run are *not* raised to the caller: they become
``ToolResult(is_error=True)`` that the model sees.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "EngineError",
    "GrammarConfigError",
    "GrammarError",
    "KernelError",
    "MaxTurnsExceeded",
    "ParseError",
    "PluginNotFoundError",
    "StructuredAgentsError",
    "ToolError",
    "ToolExecutionError",
    "ToolNotFoundError",
]


class StructuredAgentsError(Exception):
    """Root of every error raised by structured-agents."""


class ConfigError(StructuredAgentsError, ValueError):
    """A configuration value is invalid; the message names the field and the value."""


class GrammarConfigError(ConfigError):
    """A grammar configuration cannot be served by the chosen plugin."""


class PluginNotFoundError(ConfigError, KeyError):
    """No model plugin is registered under the requested name."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class GrammarError(StructuredAgentsError):
    """A grammar artifact could not be built or compiled by XGrammar."""


class ParseError(StructuredAgentsError):
    """Model output could not be parsed into content and tool calls."""


class EngineError(StructuredAgentsError):
    """An engine failed to load a model or to generate a batch."""


class ToolError(StructuredAgentsError):
    """A tool could not be resolved or executed."""


class ToolNotFoundError(ToolError, KeyError):
    """No registry provides a tool of the requested name."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ToolExecutionError(ToolError):
    """A tool ran and failed; backends turn this into an error ToolResult."""


class KernelError(StructuredAgentsError):
    """The agent loop cannot continue."""


class MaxTurnsExceeded(KernelError):
    """The run reached ``max_turns`` without calling the termination tool."""
