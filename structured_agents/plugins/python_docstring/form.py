"""The docstring form of a call: how a tool's arguments read as a Python docstring.

A tool this form serves takes strings, and objects of strings. Its first string property is
the summary line; every other property is a google-style section, headed by the property's
schema ``title`` (else its name, capitalized): a string property is one indented line, an
object property one ``key: line`` per key, in declared order::

    Return the plural form of a word.

        Args:
            word: The word to pluralize.

        Returns:
            The plural form.
        \"\"\"

(the text a model writes after a prompt that ends on an opened docstring, at a body indented
by four spaces). A call with nothing but its summary is written on one line, closed at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from structured_agents.errors import GrammarConfigError, ParseError
from structured_agents.types import JsonDict, ToolCall, ToolSchema

__all__ = ["CLOSE", "ENTRY", "INDENT", "DocstringForm", "Section"]

CLOSE = '"""'
INDENT = "    "
"""The indentation of the docstring's body: a prompt shows its target dedented."""
ENTRY = INDENT * 2
"""The indentation of a section's lines."""


@dataclass(frozen=True, slots=True)
class Section:
    """One property of the tool written as a section: a string, or an object of strings."""

    name: str
    title: str
    schema: JsonDict
    """The property's schema, its ``null`` alternative removed."""
    required: bool = True

    @property
    def keys(self) -> tuple[str, ...]:
        """An object section's declared keys, in order (empty: a string section, or free keys)."""
        properties = self.schema.get("properties")
        return tuple(str(key) for key in properties) if isinstance(properties, Mapping) else ()

    @property
    def free(self) -> bool:
        """An object section whose keys are any names (``additionalProperties``)."""
        return self.schema.get("type") == "object" and _free_keys(self.schema)

    @property
    def is_object(self) -> bool:
        return bool(self.keys) or self.free

    def entry_schema(self, key: str | None) -> JsonDict:
        """The schema of the entry ``key`` of an object section (None: any free key's)."""
        properties = self.schema.get("properties")
        value = properties.get(key) if key is not None and isinstance(properties, Mapping) else None
        if value is None:
            value = self.schema.get("additionalProperties")
        return _unwrap(value)[0] if isinstance(value, Mapping) else {"type": "string"}

    def key_required(self, key: str) -> bool:
        return key in (self.schema.get("required") or ())


def _unwrap(schema: Any) -> tuple[JsonDict, bool]:
    """``schema`` without its ``null`` alternative (``anyOf``/``oneOf`` or a list of types),
    and whether it had one."""
    if not isinstance(schema, Mapping):
        return {}, False
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            others = [b for b in branches if not (isinstance(b, Mapping) and b.get("type") == "null")]
            if len(others) == 1 and len(others) < len(branches):
                inner, _ = _unwrap(others[0])
                return {**{k: v for k, v in schema.items() if k != key}, **inner}, True
    kind = schema.get("type")
    if isinstance(kind, list) and "null" in kind and len(kind) == 2:
        return {**schema, "type": next(k for k in kind if k != "null")}, True
    return dict(schema), False


def _is_string(schema: Any) -> bool:
    return _unwrap(schema)[0].get("type") == "string"


def _free_keys(schema: JsonDict) -> bool:
    """An object whose keys are any names, each holding a string (``additionalProperties``)."""
    extra = schema.get("additionalProperties")
    return not schema.get("properties") and isinstance(extra, Mapping) and _is_string(extra)


def _section(name: str, schema: Any, required: bool, tool: str) -> Section:
    schema, nullable = _unwrap(schema)
    required = required and not nullable
    title = str(schema.get("title") or name[:1].upper() + name[1:])
    if _is_string(schema):
        return Section(name, title, schema, required)
    section = Section(name, title, schema, required)
    if section.free:
        return section
    properties = schema.get("properties")
    if schema.get("type") == "object" and isinstance(properties, Mapping):
        if not all(_is_string(value) for value in properties.values()):
            raise GrammarConfigError(f"tool {tool!r}: property {name!r} holds something other than strings")
        return section
    raise GrammarConfigError(
        f"tool {tool!r}: property {name!r} is neither a string nor an object of strings; "
        "plugin 'python_docstring' writes only those"
    )


@dataclass(frozen=True, slots=True)
class DocstringForm:
    """A tool's arguments as docstring text (see the module docstring)."""

    tool: str
    summary: str
    """The property written as the summary line."""
    summary_schema: JsonDict
    sections: tuple[Section, ...]

    @classmethod
    def of(cls, tools: list[ToolSchema] | tuple[ToolSchema, ...]) -> DocstringForm:
        """The form of the one tool in ``tools``."""
        if len(tools) != 1:
            raise GrammarConfigError(
                f"plugin 'python_docstring' writes a call of exactly one tool; got {len(tools)}"
            )
        tool = tools[0]
        properties = tool.properties
        required = set(tool.required)
        summary = next((name for name, schema in properties.items() if _is_string(schema)), None)
        if summary is None:
            raise GrammarConfigError(f"tool {tool.name!r} has no string property to write as the summary")
        sections = tuple(
            _section(name, schema, name in required, tool.name)
            for name, schema in properties.items()
            if name != summary
        )
        return cls(tool.name, summary, _unwrap(properties[summary])[0], sections)

    def render(self, arguments: Mapping[str, Any]) -> str:
        """The call's arguments as the model writes them (the inverse of :meth:`parse`)."""
        parts = [str(arguments.get(self.summary) or "")]
        for section in self.sections:
            value = arguments.get(section.name)
            if value is None:
                continue
            parts.append(f"\n\n{INDENT}{section.title}:")
            if section.is_object:
                entries = value if isinstance(value, Mapping) else {}
                keys = [key for key in section.keys if key in entries]
                keys += [key for key in entries if key not in keys]  # a worked example's own keys
                parts += [f"\n{ENTRY}{key}: {entries[key]}" for key in keys]
            else:
                parts.append(f"\n{ENTRY}{value}")
        if len(parts) == 1:
            return parts[0] + CLOSE
        return "".join(parts) + f"\n{INDENT}{CLOSE}"

    def parse(self, text: str) -> ToolCall | None:
        """The call ``text`` writes, None when it writes no summary. Sections are found by
        title; an object section's keys are taken as written (the grammar held them to the
        job's)."""
        body = text.split(CLOSE, 1)[0]
        lines = body.split("\n")
        summary = lines[0].strip()
        if not summary:
            return None
        arguments: JsonDict = {self.summary: summary}
        titles = {section.title: section for section in self.sections}
        current: Section | None = None
        for line in lines[1:]:
            stripped = line.strip()
            if not stripped:
                continue
            heading = titles.get(stripped[:-1]) if stripped.endswith(":") else None
            if heading is not None:
                current = heading
                arguments[heading.name] = {} if heading.is_object else ""
            elif current is not None and current.is_object:
                key, colon, value = stripped.partition(":")
                if not colon:
                    raise ParseError(f"{current.title}: {stripped!r} is not a 'name: text' entry")
                arguments[current.name][key.strip()] = value.strip()
            elif current is not None:
                arguments[current.name] = f"{arguments[current.name]} {stripped}".strip()
        return ToolCall(self.tool, arguments)
