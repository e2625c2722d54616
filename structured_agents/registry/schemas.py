"""Named, versioned schemas and the ``$ref``\\ s to them, resolved with ``referencing``.

Reference syntax
    ``{"$ref": "#/schemas/Name"}`` names the latest version of a schema (or its only,
    unversioned definition); ``#/schemas/Name@1.2.0`` pins a version and ``#/schemas/Name@^1.2``
    takes the highest version a constraint allows (see :mod:`.versions`). A pointer may go on
    into the schema: ``#/schemas/WeatherInput/properties/city``. Any other ``$ref`` (another
    pointer, an external URI) is an error: the registry fetches nothing.

Resolution
    The root resource is the registry document with its ``schemas`` list keyed by name, at
    :data:`ROOT_URI`: ``{"schemas": {"Name@1.0.0": {...}, "Name": <latest>}}``. Every reference
    is rewritten once, at load, to an absolute, pinned URI (``urn:structured-agents:registry#/
    schemas/Name@1.0.0``) and looked up with a :class:`referencing.Registry` holding that
    resource, so a missing name, version or pointer is an error naming the JSON path of the
    ``$ref``. Validators are Draft 2020-12 validators configured with the same registry.

Cycles are errors
    The model sees schemas *inlined* (grammar compilers and plugins read flat ``properties``),
    and a recursive schema cannot be inlined. A reference that, followed, leads back to itself
    raises :class:`SchemaCycleError` naming the cycle (``Node -> Children -> Node``) at the
    ``$ref`` that closes it. References into a schema's own parts that do not recurse
    (``#/schemas/A/$defs/T`` used inside ``A``) are fine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jsonschema
import referencing
import referencing.exceptions
import referencing.jsonschema
from jsonschema.protocols import Validator

from structured_agents.registry.errors import Loc, RegistryError, SchemaCycleError, SchemaRefError
from structured_agents.registry.models import SchemaDefinition
from structured_agents.registry.versions import Version, VersionConstraint

__all__ = ["ROOT_URI", "SchemaResolver"]

ROOT_URI = "urn:structured-agents:registry"
"""Base URI of the registry document, the root resource every ``#/schemas/...`` ref resolves in."""

_PREFIX = "#/schemas/"
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
"""Keywords whose values are data, not schemas: a ``$ref`` key inside them is not a reference."""

JsonSchema = dict[str, Any]


class SchemaResolver:
    """The registry's schemas: rewrites, checks and inlines refs, and builds validators."""

    def __init__(self, definitions: Sequence[SchemaDefinition]) -> None:
        self._where: dict[str, int] = {}  # schema key -> index in the schemas list
        self._versions: dict[str, dict[Version | None, str]] = {}
        for index, definition in enumerate(definitions):
            self._add(index, definition)
        latest = {
            name: versions[max(v for v in versions if v is not None)] if None not in versions else name
            for name, versions in self._versions.items()
        }
        pending: list[tuple[str, Loc]] = []
        keyed: dict[str, JsonSchema] = {}
        for key, index in self._where.items():
            loc: Loc = ("schemas", index, "schema")
            keyed[key] = self._rewrite(definitions[index].json_schema, loc, pending)
        for name, key in latest.items():
            keyed.setdefault(name, keyed[key])
        resource = referencing.jsonschema.DRAFT202012.create_resource({"schemas": keyed})
        self.registry: referencing.Registry[Any] = referencing.Registry().with_resource(ROOT_URI, resource)
        """The ``referencing`` registry holding the root resource."""
        self._resolver = self.registry.resolver(ROOT_URI)
        self._inlined: dict[str, JsonSchema] = {}
        for uri, ref_loc in pending:
            self._lookup(uri, ref_loc)
        for key, index in self._where.items():
            self._check(definitions[index].json_schema, ("schemas", index, "schema"))
            self._expand(f"{ROOT_URI}{_PREFIX}{key}", ("schemas", index, "schema"), ())

    def _add(self, index: int, definition: SchemaDefinition) -> None:
        version = Version.parse(definition.version) if definition.version else None
        versions = self._versions.setdefault(definition.name, {})
        if version in versions or (versions and (version is None or None in versions)):
            raise RegistryError(
                f"schema {definition.name!r} is defined more than once"
                + (f" at version {version}" if version in versions else " (versioned and unversioned)"),
                ("schemas", index, "name"),
            )
        key = definition.name if version is None else f"{definition.name}@{version}"
        versions[version] = key
        self._where[key] = index

    def canonical(self, schema: JsonSchema, loc: Loc) -> JsonSchema:
        """``schema`` with every ``$ref`` pinned and checked; errors name the ref's path under ``loc``."""
        pending: list[tuple[str, Loc]] = []
        out: JsonSchema = self._rewrite(schema, loc, pending)
        for uri, ref_loc in pending:
            self._lookup(uri, ref_loc)
        self._check(schema, loc)
        return out

    def canonical_ref(self, ref: str, loc: Loc) -> JsonSchema:
        """A schema that is just ``{"$ref": ref}`` (as written in ``inputSchemaRef``), canonical."""
        return self.canonical({"$ref": ref}, loc)

    def inline(self, canonical: JsonSchema, loc: Loc) -> JsonSchema:
        """A canonical schema with every ref replaced by what it points at (a self-contained schema)."""
        result = self._inline(canonical, loc, ())
        if not isinstance(result, dict):
            raise RegistryError("a schema must be a JSON object", loc)
        return result

    def validator(self, canonical: JsonSchema) -> Validator:
        """A Draft 2020-12 validator of a canonical schema, resolving refs in :attr:`registry`."""
        return jsonschema.Draft202012Validator(canonical, registry=self.registry)

    # -- internals ------------------------------------------------------------------------

    def _rewrite(self, node: Any, loc: Loc, pending: list[tuple[str, Loc]]) -> Any:
        if isinstance(node, list):
            return [self._rewrite(item, (*loc, i), pending) for i, item in enumerate(node)]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                out[key] = self._pin(value, (*loc, key))
                pending.append((out[key], (*loc, key)))
            elif key in _DATA_KEYWORDS:
                out[key] = value
            else:
                out[key] = self._rewrite(value, (*loc, key), pending)
        return out

    def _pin(self, ref: str, loc: Loc) -> str:
        """``#/schemas/Name@constraint/rest`` as ``ROOT_URI#/schemas/Name@x.y.z/rest``."""
        if not ref.startswith(_PREFIX):
            raise SchemaRefError(
                f"unsupported $ref {ref!r}: references must name registry schemas ('{_PREFIX}Name')", loc
            )
        head, sep, rest = ref[len(_PREFIX) :].partition("/")
        name, at, wanted = head.partition("@")
        name = name.replace("~1", "/").replace("~0", "~")
        versions = self._versions.get(name)
        if versions is None:
            known = ", ".join(sorted(self._versions)) or "none"
            raise SchemaRefError(f"$ref {ref!r} names no schema {name!r} (schemas: {known})", loc)
        concrete = [v for v in versions if v is not None]
        if not at:
            key = versions[max(concrete)] if concrete else name
        else:
            pick = VersionConstraint.parse(wanted).best(concrete)
            if pick is None:
                have = ", ".join(str(v) for v in sorted(concrete)) or "no versions"
                raise SchemaRefError(f"$ref {ref!r}: schema {name!r} has no version {wanted!r} ({have})", loc)
            key = versions[pick]
        return f"{ROOT_URI}{_PREFIX}{key}{sep}{rest}"

    def _lookup(self, uri: str, loc: Loc) -> Any:
        try:
            return self._resolver.lookup(uri).contents
        except referencing.exceptions.Unresolvable:
            where = uri.partition(_PREFIX)[2]
            raise SchemaRefError(
                f"$ref points at nothing: the registry schemas have no {where!r}", loc
            ) from None

    def _check(self, schema: JsonSchema, loc: Loc) -> None:
        """The schema must be a valid Draft 2020-12 schema; the error names the bad keyword."""
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise RegistryError(f"not a valid JSON schema: {exc.message}", (*loc, *exc.path)) from None

    def _expand(self, uri: str, loc: Loc, stack: tuple[str, ...]) -> Any:
        if uri in stack:
            cycle = [*stack[stack.index(uri) :], uri]
            raise SchemaCycleError([u.removeprefix(f"{ROOT_URI}{_PREFIX}") for u in cycle], loc)
        cached = self._inlined.get(uri)
        if cached is not None:
            return cached
        key, _, pointer = uri.removeprefix(f"{ROOT_URI}{_PREFIX}").partition("/")
        target_loc: Loc = ("schemas", self._where[key], "schema", *_segments(pointer))
        result = self._inline(self._lookup(uri, loc), target_loc, (*stack, uri))
        if isinstance(result, dict):
            self._inlined[uri] = result
        return result

    def _inline(self, node: Any, loc: Loc, stack: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [self._inline(item, (*loc, i), stack) for i, item in enumerate(node)]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            is_data = key in _DATA_KEYWORDS or key == "$ref"
            out[key] = value if is_data else self._inline(value, (*loc, key), stack)
        ref = out.pop("$ref", None)
        if not isinstance(ref, str):
            return out
        target = self._expand(ref, (*loc, "$ref"), stack)
        if not out:
            return target
        if isinstance(target, dict) and not (target.keys() & out.keys()):
            return {**target, **out}
        return {"allOf": [target], **out}  # siblings of $ref apply together with the target


def _segments(pointer: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/") if p]
