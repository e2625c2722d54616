"""The v2 registry document: pydantic models of ``schemaVersion``, tools, schemas, servers, agents.

Fields are snake_case in Python and camelCase on the wire (``serverVersion``, ``hideFields``);
either spelling is accepted when loading, camelCase is written. Unknown keys are errors, so a
typo (or a v1 ``target`` left in a v2 file) is reported where it is. Checks that need the
whole document (references between tools, schemas, servers and agents) are made when a
:class:`~structured_agents.registry.registry.Registry` is built from it.

A JSON schema field (``inputSchema``, ``schema``...) is any JSON schema object; ``$ref``\\ s
in it name registry schemas (see :mod:`structured_agents.registry.schemas`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from structured_agents.registry.errors import RegistryError
from structured_agents.registry.jsonpath import JsonPath
from structured_agents.registry.versions import Version, VersionConstraint

__all__ = [
    "AgentCall",
    "AgentDefinition",
    "AgentDependency",
    "AgentEndpoint",
    "AgentSkill",
    "FieldMapping",
    "OutputTransform",
    "PipelineSpec",
    "PipelineStep",
    "RegistryDocument",
    "SchemaDefinition",
    "ServerCapabilities",
    "ServerDefinition",
    "ServerDependency",
    "ServerEndpoint",
    "ServerTool",
    "SkillExample",
    "SourceTool",
    "StepOperation",
    "ToolCallOp",
    "ToolDefinition",
    "ToolSpec",
]

JsonSchema = dict[str, Any]


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True, serialize_by_alias=True
    )


def _parses(parse: Callable[[str], object], value: str) -> str:
    """``value`` if ``parse`` reads it; its RegistryError as the ValueError pydantic reports."""
    try:
        parse(value)
    except RegistryError as exc:
        raise ValueError(exc.detail) from None
    return value


def _check_version(value: str) -> str:
    return _parses(Version.parse, value)


def _check_constraint(value: str | None) -> str | None:
    return value if value is None else _parses(VersionConstraint.parse, value)


def _check_path(value: str) -> str:
    return _parses(JsonPath.parse, value)


def _exactly_one(model: BaseModel, fields: tuple[str, ...], what: str) -> None:
    given = [name for name in fields if getattr(model, name) is not None]
    if len(given) != 1:
        wire = [to_camel(name) for name in fields]
        raise ValueError(f"{what} needs exactly one of {wire}, got {[to_camel(n) for n in given] or 'none'}")


class SchemaDefinition(_Model):
    """A named, optionally versioned JSON schema that others reference as ``#/schemas/Name``."""

    name: str = Field(pattern=r"^[A-Za-z_][\w.-]*$")
    description: str | None = None
    json_schema: JsonSchema = Field(alias="schema")
    version: str | None = None
    metadata: dict[str, Any] = {}

    @field_validator("version")
    @classmethod
    def _version(cls, value: str | None) -> str | None:
        return value if value is None else _check_version(value)


class ServerCapabilities(_Model):
    """What an MCP server supports (all false unless declared)."""

    streamable_http: bool = False
    stdio: bool = False
    sse: bool = False
    tools: bool = False
    prompts: bool = False
    resources: bool = False
    sampling: bool = False


class ServerTool(_Model):
    """A tool a server provides, with the schemas of its input and output as ``#/schemas/...`` refs."""

    name: str
    input_schema_ref: str | None = None
    output_schema_ref: str | None = None


class ServerEndpoint(_Model):
    """How to reach a server: exactly one of an MCP server (``command`` over stdio, ``url`` over
    streamable HTTP), a folder of ``.pym`` scripts (``pym``) or a Python module (``python``).

    Paths are relative to the registry file's folder, which is also the working folder of a
    ``command``; a ``command`` whose first word is ``python`` (or ``python3``) runs with the
    interpreter running structured-agents, so a server script shipped beside the registry has
    the packages structured-agents has (``mcp`` among them)."""

    command: list[str] | None = Field(default=None, min_length=1)
    """An MCP server started as a subprocess, spoken to over stdio."""
    env: dict[str, str] = {}
    """Environment variables of the ``command`` (over a minimal default environment)."""
    url: str | None = None
    """An MCP server reached over streamable HTTP (``http://127.0.0.1:8000/mcp``)."""
    pym: str | None = None
    """A folder of ``.pym`` scripts, one tool each, run in the sandbox."""
    python: str | None = None
    """An importable module holding a ``PythonRegistry`` named ``registry``."""

    @model_validator(mode="after")
    def _one(self) -> ServerEndpoint:
        _exactly_one(self, ("command", "url", "pym", "python"), "a server endpoint")
        if self.env and self.command is None:
            raise ValueError("env is only for a server started by a command")
        return self


class ServerDefinition(_Model):
    """One version of a server (an MCP server, a ``.pym`` folder, a Python module); tools are
    routed to ``name:version``."""

    name: str = Field(pattern=r"^[^:\s]+$")
    version: str
    description: str | None = None
    endpoint: ServerEndpoint | None = None
    """Where this version runs; a bundle using the registry starts or opens it. Without one, the
    caller supplies the server (``Registry.tool_source(servers)``)."""
    capabilities: ServerCapabilities | None = None
    provided_tools: list[ServerTool] = []
    metadata: dict[str, Any] = {}

    _version = field_validator("version")(_check_version)


class SourceTool(_Model):
    """Where a tool runs: a server's tool, with defaults, hidden fields and a version constraint."""

    server: str
    tool: str
    defaults: dict[str, Any] = {}
    hide_fields: list[str] = []
    server_version: str | None = None
    bind: list[str] = []
    """Fields filled from the run's inputs (``RunContext.inputs``: the job's ``source``,
    ``path``...) on every call, hidden from the model; a run without one leaves the field to
    its default, and a required one is then an error result."""

    _constraint = field_validator("server_version")(_check_constraint)


class FieldMapping(_Model):
    """One field of a transformed output: the value at ``path`` in the tool's JSON output."""

    path: str

    _path = field_validator("path")(_check_path)


class OutputTransform(_Model):
    """Builds the output the model sees: an object of ``mappings`` keys (written ``{"path": ...}``
    or as the path string alone), each the value its path selects in the tool's JSON output."""

    mappings: dict[str, FieldMapping]

    @field_validator("mappings", mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: {"path": v} if isinstance(v, str) else v for k, v in value.items()}
        return value


class ToolCallOp(_Model):
    """A pipeline step that calls a tool by the name the tool source offers it under.

    The seed's direct ``server``/``serverVersion`` override is not supported: a registry tool
    with a ``source`` routes to a server version, and a step calls that tool."""

    name: str


class AgentCall(_Model):
    """A pipeline step that runs an agent (a skill of it), of a version allowed by ``version``."""

    name: str
    skill: str | None = None
    version: str | None = None

    _constraint = field_validator("version")(_check_constraint)


class StepOperation(_Model):
    """Exactly one of ``tool`` or ``agent``."""

    tool: ToolCallOp | None = None
    agent: AgentCall | None = None

    @model_validator(mode="after")
    def _one(self) -> StepOperation:
        _exactly_one(self, ("tool", "agent"), "a step operation")
        return self


class PipelineStep(_Model):
    """One step. ``input`` maps argument names to JSON paths into ``{"input": <pipeline arguments>,
    "steps": {<id>: {"output": <output>}}}`` (or is one path selecting the whole arguments object);
    ``constants`` are literal arguments. A step's output is its result parsed as JSON, or the text."""

    id: str = Field(pattern=r"^[A-Za-z_][\w-]*$")
    operation: StepOperation
    input: str | dict[str, str] = "$.input"
    constants: dict[str, Any] = {}

    @field_validator("input")
    @classmethod
    def _paths(cls, value: str | dict[str, str]) -> str | dict[str, str]:
        for path in [value] if isinstance(value, str) else value.values():
            _check_path(path)
        return value


class PipelineSpec(_Model):
    """Steps run in order; the pipeline's output is the value at ``output`` (default: the last step's)."""

    steps: list[PipelineStep] = Field(min_length=1)
    output: str | None = None

    @field_validator("output")
    @classmethod
    def _output(cls, value: str | None) -> str | None:
        return value if value is None else _check_path(value)


class ToolSpec(_Model):
    """A tool implemented by the registry itself."""

    pipeline: PipelineSpec


class ToolDefinition(_Model):
    """A tool the model can call: a server's tool (``source``) or a pipeline (``spec``)."""

    name: str = Field(min_length=1)
    description: str | None = None
    source: SourceTool | None = None
    spec: ToolSpec | None = None
    input_schema: JsonSchema | None = None
    """What the server receives (validated before the call); default: the server's own schema."""
    inputs_override: dict[str, JsonSchema] = {}
    """Replaces entries of the input schema's ``properties`` in what the model sees only (the
    server still checks its own schema)."""
    output_schema: JsonSchema | None = None
    output_transform: OutputTransform | None = None
    context_providers: list[str] = []
    """``.pym`` scripts (relative to the registry file) run before the tool; their outputs are
    prepended to its output."""
    metadata: dict[str, Any] = {}

    @model_validator(mode="after")
    def _one(self) -> ToolDefinition:
        _exactly_one(self, ("source", "spec"), f"tool {self.name!r}")
        return self


class AgentEndpoint(_Model):
    """How to reach an agent: ``{"a2a": {"url": ...}}`` or ``{"mcp": {"url"|"command": ...}}``."""

    a2a: dict[str, Any] | None = None
    mcp: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _one(self) -> AgentEndpoint:
        _exactly_one(self, ("a2a", "mcp"), "an agent endpoint")
        transport = self.a2a if self.a2a is not None else self.mcp
        if not isinstance(transport, dict) or not ({"url", "command"} & transport.keys()):
            raise ValueError("an agent endpoint needs a 'url' (or, for mcp, a 'command')")
        return self


class SkillExample(_Model):
    """An example input (checked against the skill's input schema) and, optionally, its output."""

    input: Any
    output: Any = None
    description: str | None = None


class AgentSkill(_Model):
    """Something an agent does, with the schemas of what it takes and returns."""

    name: str
    description: str | None = None
    input_schema: JsonSchema | None = None
    output_schema: JsonSchema | None = None
    examples: list[SkillExample] = []


class ServerDependency(_Model):
    """A dependency on (some versions of) a server: every tool routed to them."""

    name: str
    version_constraint: str | None = None

    _constraint = field_validator("version_constraint")(_check_constraint)


class AgentDependency(_Model):
    """Exactly one of a tool name, an agent name or a server."""

    tool: str | None = None
    agent: str | None = None
    server: ServerDependency | None = None

    @model_validator(mode="after")
    def _one(self) -> AgentDependency:
        _exactly_one(self, ("tool", "agent", "server"), "a dependency")
        return self


class AgentDefinition(_Model):
    """An agent: who it is, where it runs, what it can do and what it may use."""

    name: str = Field(min_length=1)
    version: str
    description: str | None = None
    endpoint: AgentEndpoint | None = None
    """None for an agent of this project run in process (by a ``KernelAgentRunner``, or by the
    bundle named in ``bundle``)."""
    bundle: str | None = None
    """The bundle that is this agent (a folder relative to the registry file, or a shipped
    bundle's name): a bundle using the registry runs it, with its own prompts, plugin and
    tools, on the engine of the bundle's own agent."""
    skills: list[AgentSkill] = []
    dependencies: list[AgentDependency] = []
    metadata: dict[str, Any] = {}

    _version = field_validator("version")(_check_version)

    @model_validator(mode="after")
    def _runs_somewhere_once(self) -> AgentDefinition:
        if self.endpoint is not None and self.bundle is not None:
            raise ValueError("an agent runs at its endpoint or as its bundle, not both")
        return self


class RegistryDocument(_Model):
    """A whole v2 registry file."""

    schema_version: Literal["2.0"]
    tools: list[ToolDefinition] = []
    schemas: list[SchemaDefinition] = []
    servers: list[ServerDefinition] = []
    agents: list[AgentDefinition] = []
