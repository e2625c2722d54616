"""The bundle manifest (``bundle.yaml``): one agent's model, prompts, tools and limits.

Validated with pydantic; :func:`load_manifest` turns every validation problem into a
``BundleError`` naming the file, the line, the field and what was expected.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from structured_agents.errors import ConfigError
from structured_agents.grammar.config import GrammarConfig
from structured_agents.tasks import available_tasks
from structured_agents.yaml_lines import LocatedYaml, load_located_yaml

__all__ = [
    "BundleError",
    "BundleManifest",
    "FewShotCall",
    "FewShotExample",
    "GrailRegistrySpec",
    "GrammarSettings",
    "InitialContext",
    "MCPRegistrySpec",
    "ModelSettings",
    "PythonRegistrySpec",
    "RegistryFileSpec",
    "RegistrySpec",
    "SamplingSettings",
    "ToolReference",
    "load_located_manifest",
    "load_manifest",
    "validate_located",
]

M = TypeVar("M", bound=BaseModel)


class BundleError(ConfigError):
    """A bundle manifest is malformed; the message starts with ``file:line:col``."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GrammarSettings(_Strict):
    """Grammar settings, mapped one to one onto :class:`GrammarConfig`."""

    enabled: bool = True
    mode: Literal["ebnf", "structural_tag", "json_schema"] = "ebnf"
    allow_parallel_calls: bool = False
    args_format: Literal["permissive", "escaped_strings", "json"] = "escaped_strings"

    def to_config(self) -> GrammarConfig | None:
        """The grammar config, or None when constrained decoding is switched off."""
        if not self.enabled:
            return None
        return GrammarConfig(
            mode=self.mode, allow_parallel_calls=self.allow_parallel_calls, args_format=self.args_format
        )


class SamplingSettings(_Strict):
    max_new_tokens: Annotated[int, Field(ge=1, le=8192)] = 256
    temperature: Annotated[float, Field(ge=0)] = 0.0
    top_p: Annotated[float, Field(gt=0, le=1)] = 1.0
    seed: int | None = 0
    frequency_penalty: Annotated[float, Field(ge=-2, le=2)] = 0.0
    n: Annotated[int, Field(ge=1, le=16)] = 1
    """Candidates decoded per turn (in one batch); the bundle's task keeps the best."""
    no_repeat_ngram_size: Annotated[int, Field(ge=0, le=32)] = 0
    """Never repeat a run of this many tokens (``SamplingParams.no_repeat_ngram_size``); 0: off."""


class ModelSettings(_Strict):
    plugin: str = "function_gemma"
    grammar: GrammarSettings = GrammarSettings()
    sampling: SamplingSettings = SamplingSettings()


class FewShotCall(_Strict):
    """One tool call of a worked example."""

    name: str
    arguments: dict[str, Any] = {}


class FewShotExample(_Strict):
    """A worked example shown to the model as earlier turns: a task, the calls, their result."""

    user: str
    """The example task, as a user message."""
    calls: list[FewShotCall]
    """What the model did (rendered in the plugin's native call format)."""
    result: str = "accepted"
    """The tools' answer to each call."""
    variant: str | None = None
    """Shown only when ``example_variant`` renders to this value; None: always shown."""


class InitialContext(_Strict):
    """The first messages of a run: system prompt, worked examples, and the user's task.

    Prompts and templates are Jinja, rendered with StrictUndefined from the job's inputs (as
    top-level names and as ``inputs``) and the outputs of ``context_providers`` (as
    ``context.NAME``). ``*_file`` fields name files relative to the bundle directory and
    replace the inline text.
    """

    system_prompt: str = ""
    system_prompt_file: Path | None = None
    user_template: str = "{{ input }}"
    """Jinja template of the first user message."""
    user_template_file: Path | None = None
    examples: list[FewShotExample] = []
    examples_file: Path | None = None
    """A YAML list of examples (the schema of ``examples``), added after the inline ones."""
    example_variant: str | None = None
    """Jinja template choosing which examples to show (those whose ``variant`` it renders to)."""
    context_providers: dict[str, Path] = {}
    """``.pym`` scripts run before the first turn (with the job inputs they declare); their
    values are ``context.NAME`` in the templates."""

    @model_validator(mode="after")
    def _inline_or_file(self) -> InitialContext:
        if self.system_prompt and self.system_prompt_file is not None:
            raise ValueError("give system_prompt or system_prompt_file, not both")
        if self.user_template_file is not None and "user_template" in self.model_fields_set:
            raise ValueError("give user_template or user_template_file, not both")
        if not self.system_prompt and self.system_prompt_file is None:
            raise ValueError("a bundle needs a system_prompt or a system_prompt_file")
        return self


class GrailRegistrySpec(_Strict):
    type: Literal["grail"] = "grail"
    name: str = "grail"
    path: Path = Path("tools")
    """Folder of ``.pym`` scripts, relative to the bundle directory."""


class PythonRegistrySpec(_Strict):
    type: Literal["python"]
    name: str = "python"
    module: str
    """Importable module holding a ``PythonRegistry`` named ``registry``."""


class MCPRegistrySpec(_Strict):
    type: Literal["mcp"]
    name: str
    command: list[str] | None = None
    """Started as a subprocess in the bundle directory; ``python`` as the first word is the
    interpreter running structured-agents."""
    url: str | None = None

    @model_validator(mode="after")
    def _one_transport(self) -> MCPRegistrySpec:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                "an mcp registry needs exactly one of 'command' (stdio) or 'url' (streamable HTTP)"
            )
        return self


class RegistryFileSpec(_Strict):
    """A registry file (:mod:`structured_agents.registry`) as a tool source: its server tools
    (``.pym``, Python, versioned MCP servers it starts) and its pipelines, agents as tools among
    them, which run on the engine of the bundle's own agent."""

    type: Literal["registry"]
    name: str
    path: Path
    """The registry file (JSON or YAML), relative to the bundle directory."""
    agent: str | None = None
    """Offer only what this agent of the registry may use (its declared dependencies)."""


RegistrySpec = Annotated[
    GrailRegistrySpec | PythonRegistrySpec | MCPRegistrySpec | RegistryFileSpec, Field(discriminator="type")
]


class ToolReference(_Strict):
    name: str
    registry: str = "grail"
    description: str | None = None
    inputs_override: dict[str, Any] | None = None
    """Replaces entries of the tool's JSON-schema ``properties`` (the rest of the schema, its
    ``type: object`` included, is kept)."""
    context_providers: list[Path] = []
    limits: str | dict[str, float] | None = None
    """A limits preset name (strict, default, permissive) or per-limit overrides."""
    bind: list[str] = []
    """Tool inputs filled from the job's inputs (``path``, ``source``...), hidden from the model."""


class BundleManifest(_Strict):
    name: str
    version: str = "1.0"
    description: str = ""
    task: str | None = None
    """The task (``structured_agents.tasks``: ``docstring``, ``lint``, or one registered) whose
    discovery feeds this bundle when it runs over a codebase, and which turns its runs into
    changes; none for a bundle whose jobs are given explicitly."""
    model: ModelSettings = ModelSettings()
    initial_context: InitialContext
    max_turns: Annotated[int, Field(ge=1, le=100)] = 8
    termination_tool: str = "submit_result"
    final_turn_termination_only: bool = True
    """On the last allowed turn the grammar allows only the termination tool (see KernelConfig)."""
    review: bool = False
    """Ask the engine to score each candidate by how likely it makes the code its job is about
    (the task's reviewer, Coder-Reviewer reranking): a turn's candidates are then ranked by it,
    and the kept one's margin is the run's confidence. Costs a forward pass over the code per
    candidate; engines that cannot score (vLLM, OpenAI-compatible servers) leave it unmeasured."""
    refuse_copied_lines: bool = True
    """Refuse a submission that copies a line of the worked examples or tool descriptions word
    for word (see ``structured_agents.bundles.echoes``); turn off for a bundle whose answers
    may rightly repeat them."""
    registries: list[RegistrySpec] = [GrailRegistrySpec()]
    tools: list[ToolReference]
    externals: list[str] = []
    """Host functions granted to this bundle's ``.pym`` tools (read_file, list_files, ...)."""

    @field_validator("task")
    @classmethod
    def _known_task(cls, task: str | None) -> str | None:
        if task is not None and task.strip().lower() not in available_tasks():
            raise ValueError(f"unknown task {task!r}; known tasks: {', '.join(available_tasks())}")
        return task

    @field_validator("tools")
    @classmethod
    def _unique_tools(cls, tools: list[ToolReference]) -> list[ToolReference]:
        seen: set[str] = set()
        for tool in tools:
            if tool.name in seen:
                raise ValueError(f"tool {tool.name!r} is listed twice")
            seen.add(tool.name)
        if not tools:
            raise ValueError("a bundle needs at least one tool")
        return tools

    @model_validator(mode="after")
    def _references_resolve(self) -> BundleManifest:
        registries = {r.name for r in self.registries}
        for tool in self.tools:
            if tool.registry not in registries:
                raise ValueError(
                    f"tool {tool.name!r} names registry {tool.registry!r}; "
                    f"the bundle declares {sorted(registries)}"
                )
        if self.termination_tool not in {t.name for t in self.tools}:
            raise ValueError(f"termination_tool {self.termination_tool!r} is not one of the bundle's tools")
        return self


def load_manifest(path: Path) -> BundleManifest:
    """Read and validate a ``bundle.yaml``; every problem is a BundleError with file:line:col."""
    return load_located_manifest(path)[0]


def load_located_manifest(path: Path) -> tuple[BundleManifest, LocatedYaml]:
    """:func:`load_manifest`, plus where each value of the file is (for later errors)."""
    try:
        located = load_located_yaml(path)
    except FileNotFoundError as exc:
        raise BundleError(f"{path}: no such bundle manifest") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise BundleError(f"{where}: malformed YAML: {getattr(exc, 'problem', exc)}") from exc
    if not isinstance(located.data, dict):
        kind = type(located.data).__name__
        raise BundleError(f"{path}:1:1: a bundle manifest must be a mapping, got {kind}")
    return validate_located(BundleManifest, located), located


def _field_names(model: type[BaseModel], seen: set[type[BaseModel]]) -> set[str]:
    """Every field name of ``model`` and of the models its fields hold."""
    if model in seen:
        return set()
    seen.add(model)
    names = set(model.model_fields)
    for field in model.model_fields.values():
        for arg in _type_args(field.annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                names |= _field_names(arg, seen)
    return names


def _type_args(annotation: Any) -> list[Any]:
    args = [annotation]
    for arg in getattr(annotation, "__args__", ()) or ():
        args += _type_args(arg)
    for meta in getattr(annotation, "__metadata__", ()) or ():
        args += _type_args(meta)
    return args


def validate_located(model: type[M], located: LocatedYaml) -> M:
    """``model`` validated from ``located.data``; a BundleError with ``file:line:col`` per problem.

    An unknown key (a typo) gets the closest known field name as a suggestion.
    """
    try:
        return model.model_validate(located.data)
    except ValidationError as exc:
        known = _field_names(model, set())
        problems = []
        for err in exc.errors():
            loc = [part for part in err["loc"] if not (isinstance(part, str) and "[" in part)]
            field = ".".join(str(p) for p in loc) or "(manifest)"
            message = err["msg"]
            if err["type"] == "extra_forbidden" and loc:
                close = difflib.get_close_matches(str(loc[-1]), sorted(known), n=1)
                message += f" (did you mean {close[0]!r}?)" if close else ""
            problems.append(f"{located.where(loc)}: {field}: {message}")
        raise BundleError("\n".join(problems)) from None
