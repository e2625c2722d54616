"""A registry tool made ready to run: its model-facing schema, validators, defaults and transform.

What the model sees (:attr:`CompiledTool.schema`) is the tool's input schema with every ``$ref``
inlined, its hidden fields removed, and fields that have a default no longer required. What
the server gets (:meth:`CompiledTool.arguments`) is the model's arguments over the defaults,
hidden fields always taken from the defaults (a model cannot set a field it was not shown),
validated against the full schema. What the model gets back (:meth:`CompiledTool.output`) is
the tool's output reshaped by the output transform (a JSON object of the mapped fields; a path
that selects nothing leaves its field out) and validated against the output schema.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema.exceptions import best_match
from jsonschema.protocols import Validator

from structured_agents.errors import ToolExecutionError
from structured_agents.registry.errors import Loc, RegistryError
from structured_agents.registry.jsonpath import JsonPath
from structured_agents.registry.models import ToolDefinition
from structured_agents.registry.routing import Route
from structured_agents.registry.schemas import JsonSchema, SchemaResolver
from structured_agents.registry.served import ServedTool
from structured_agents.types import JsonDict, ToolSchema

__all__ = ["CompiledTool", "check_value", "compile_tool", "first_error"]

_EMPTY_OBJECT: JsonSchema = {"type": "object", "properties": {}}


@dataclass(frozen=True, slots=True)
class CompiledTool:
    """One tool of a registry, checked and ready to run."""

    definition: ToolDefinition
    """The tool as written."""
    schema: ToolSchema
    """What the model sees: name, description, parameters; ``backend`` and ``server`` say where
    it runs (``pipeline`` for a pipeline)."""
    full_parameters: JsonSchema
    """The inlined input schema before hiding fields (what the server receives)."""
    target: ToolSchema | None = None
    """For a server's tool: the tool as its server runs it (its own name, the backend that runs
    it, its script, its context providers)."""
    route: Route | None = None
    """For a server's tool: the server version it runs on."""
    input_validator: Validator | None = None
    """Checks the arguments before the call; None when the server's own schema is used (the
    server checks its arguments itself)."""
    output_validator: Validator | None = None
    transform: tuple[tuple[str, JsonPath], ...] = ()
    defaults: JsonDict = field(default_factory=dict)
    hidden: frozenset[str] = frozenset()
    bind: tuple[str, ...] = ()
    """Fields taken from the run's inputs."""

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.definition.name

    def arguments(self, given: Mapping[str, Any], inputs: Mapping[str, Any] | None = None) -> JsonDict:
        """The call's arguments as the tool gets them; ToolExecutionError when they are invalid.

        Defaults first, then the model's arguments (never a hidden or bound field), then the
        bound fields from ``inputs`` (a run's inputs)."""
        inputs = inputs or {}
        lacking = [
            name
            for name in self.bind
            if name not in inputs and name in self.full_parameters.get("required", ())
        ]
        if lacking:
            raise ToolExecutionError(
                f"{self.name} needs the job input(s) {', '.join(lacking)}, which this job lacks"
            )
        args = copy.deepcopy(self.defaults)
        args.update((k, v) for k, v in given.items() if k not in self.hidden and k not in self.bind)
        args.update((name, inputs[name]) for name in self.bind if name in inputs)
        check_value(self.input_validator, args, f"invalid arguments for {self.name}")
        return args

    def output(self, text: str) -> str:
        """The output the model sees; ToolExecutionError when it cannot be transformed or is invalid."""
        if not self.transform and self.output_validator is None:
            return text
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            message = f"{self.name} returned no JSON to transform or validate: {text[:200]!r}"
            raise ToolExecutionError(message) from None
        if self.transform:
            value = {key: found for key, path in self.transform for ok, found in [path.first(value)] if ok}
        check_value(self.output_validator, value, f"{self.name} returned an invalid output")
        return json.dumps(value, ensure_ascii=False) if self.transform else text


def first_error(validator: Validator | None, value: Any) -> str | None:
    """``"<JSON path>: <message>"`` of the most relevant error of ``value``, or None when valid."""
    error = best_match(validator.iter_errors(value)) if validator is not None else None
    return f"{error.json_path}: {error.message}" if error is not None else None


def check_value(validator: Validator | None, value: Any, what: str) -> None:
    """Raise ToolExecutionError (``what``, the JSON path and the message) if ``value`` is invalid."""
    error = first_error(validator, value)
    if error is not None:
        raise ToolExecutionError(f"{what}: {error}")


def compile_tool(
    tool: ToolDefinition,
    loc: Loc,
    schemas: SchemaResolver,
    route: Route | None,
    server: ServedTool | None = None,
    base: Path | None = None,
) -> CompiledTool:
    """Check one tool and build what runs it; RegistryErrors name the field under ``loc``.

    ``server`` is the tool as its server lists it, when the server is known: its schema is the
    input schema when the tool declares none, and it is what the call runs (else a schema for
    the ``mcp`` backend on the route's key). ``base`` is the folder context providers are in."""
    source = tool.source
    provided = None
    if route is not None and route.definition is not None and source is not None:
        provided = next((t for t in route.definition.provided_tools if t.name == source.tool), None)
    validated = True
    if tool.input_schema is not None:
        canonical_in = schemas.canonical(tool.input_schema, (*loc, "inputSchema"))
    elif provided is not None and provided.input_schema_ref is not None:
        canonical_in = schemas.canonical_ref(provided.input_schema_ref, (*loc, "inputSchema"))
    elif server is not None:
        canonical_in, validated = dict(server.schema.parameters), False
    else:
        canonical_in = _EMPTY_OBJECT  # not known yet: the server's, once bound
    canonical_out = None
    if tool.output_schema is not None:
        canonical_out = schemas.canonical(tool.output_schema, (*loc, "outputSchema"))
    elif provided is not None and provided.output_schema_ref is not None:
        canonical_out = schemas.canonical_ref(provided.output_schema_ref, (*loc, "outputSchema"))
    full = schemas.inline(canonical_in, (*loc, "inputSchema")) if validated else canonical_in
    if full.get("type", "object") != "object":
        raise RegistryError(
            f"a tool's input schema must be of type object, got {full['type']!r}", (*loc, "inputSchema")
        )
    full = {"type": "object", **full}
    defaults = dict(source.defaults) if source is not None else {}
    hidden = tuple(source.hide_fields) if source is not None else ()
    bind = tuple(source.bind) if source is not None else ()
    source_loc = (*loc, "source")
    parameters = _model_view(full, defaults, hidden, (*source_loc, "hideFields"))
    known = canonical_in is not _EMPTY_OBJECT
    parameters = _unbound_view(tool.name, parameters, bind, (*source_loc, "bind"), known)
    parameters = _overridden(parameters, tool.inputs_override)
    transform = tuple(
        (key, JsonPath.parse(mapping.path))
        for key, mapping in (tool.output_transform.mappings.items() if tool.output_transform else ())
    )
    target = _target(tool, full, route, server, base) if source is not None else None
    description = tool.description or (server.schema.description if server is not None else None)
    schema = ToolSchema(
        name=tool.name,
        description=description or _describe(tool, route),
        parameters=parameters,
        backend=target.backend if target is not None else "pipeline",
        server=route.key if route is not None else None,
    )
    return CompiledTool(
        definition=tool,
        schema=schema,
        full_parameters=full,
        target=target,
        route=route,
        input_validator=schemas.validator(canonical_in) if validated else None,
        output_validator=schemas.validator(canonical_out) if canonical_out is not None else None,
        transform=transform,
        defaults=defaults,
        hidden=frozenset(hidden),
        bind=bind,
    )


def _target(
    tool: ToolDefinition, full: JsonSchema, route: Route | None, server: ServedTool | None, base: Path | None
) -> ToolSchema:
    """The tool as its server runs it."""
    assert tool.source is not None
    providers = tuple((base or Path()).joinpath(p).resolve() for p in tool.context_providers)
    if server is not None:
        return dataclasses.replace(server.schema, backend=server.backend, context_providers=providers)
    return ToolSchema(
        name=tool.source.tool,
        description=tool.description or "",
        parameters=full,
        backend="mcp",
        server=route.key if route is not None else tool.source.server,
        context_providers=providers,
    )


def _unbound_view(name: str, view: JsonSchema, bind: tuple[str, ...], loc: Loc, known: bool) -> JsonSchema:
    """The schema without the bound fields (which may be required: the run's inputs fill them);
    a bound field must be an input, when the inputs are ``known``."""
    properties = dict(view.get("properties", {}))
    for index, field_name in enumerate(bind):
        if field_name not in properties and not known:
            continue
        if field_name not in properties:
            inputs = ", ".join(properties) or "none"
            raise RegistryError(
                f"tool {name!r} has no input {field_name!r} to bind (inputs: {inputs})", (*loc, index)
            )
        del properties[field_name]
    if not bind:
        return view
    required = [n for n in view.get("required", []) if n in properties]
    return _with_fields(view, properties, required)


def _overridden(view: JsonSchema, overrides: Mapping[str, JsonSchema]) -> JsonSchema:
    """``overrides`` replace (or add) entries of the view's properties; the rest stays."""
    if not overrides:
        return view
    return {**view, "properties": {**view.get("properties", {}), **overrides}}


def _model_view(full: JsonSchema, defaults: JsonDict, hidden: tuple[str, ...], loc: Loc) -> JsonSchema:
    """The schema without hidden fields, and with defaulted fields optional."""
    properties = dict(full.get("properties", {}))
    required = [name for name in full.get("required", []) if name not in defaults]
    for index, name in enumerate(hidden):
        if name not in properties:
            raise RegistryError(f"hidden field {name!r} is not a property of the input schema", (*loc, index))
        if name in required:
            raise RegistryError(f"hidden field {name!r} is required and has no default", (*loc, index))
        del properties[name]
    return _with_fields(full, properties, required)


def _with_fields(schema: JsonSchema, properties: JsonDict, required: list[str]) -> JsonSchema:
    """``schema`` with these ``properties`` and ``required`` (dropped when empty), every key where
    it was (validators report the first failing keyword: the order is the schema's own)."""
    out = {**schema, "properties": properties, "required": required}
    if not required:
        del out["required"]
    return out


def _describe(tool: ToolDefinition, route: Route | None) -> str:
    if tool.source is not None:
        return f"{tool.source.tool} on {route.key if route else tool.source.server}"
    steps = tool.spec.pipeline.steps if tool.spec is not None else []
    return f"pipeline of {len(steps)} steps: " + ", ".join(step.id for step in steps)
