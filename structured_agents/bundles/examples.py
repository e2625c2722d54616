"""Worked examples: earlier turns that show a small model what a finished job looks like.

A base model such as Gemma 3 270M copies what it sees; one or two examples of a task, its
tool calls and their results, placed before the real task, make it call the tools with
sensible arguments far more often than instructions alone. Examples come from the manifest
(``initial_context.examples``) and from a YAML file (``initial_context.examples_file``); every
call must name a tool of the bundle and only arguments the model is offered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml
from pydantic import RootModel

from structured_agents.bundles.manifest import BundleError, BundleManifest, FewShotExample, validate_located
from structured_agents.types import Message, ToolCall, ToolResult, ToolSchema
from structured_agents.yaml_lines import LocatedYaml, load_located_yaml

__all__ = ["example_messages", "load_examples"]


class _ExampleList(RootModel[list[FewShotExample]]):
    """The content of an examples file."""


def _read_file(path: Path) -> tuple[list[FewShotExample], LocatedYaml]:
    try:
        located = load_located_yaml(path)
    except OSError as exc:
        raise BundleError(
            f"{path}: initial_context.examples_file: cannot read: {exc.strerror or exc}"
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise BundleError(f"{where}: malformed YAML: {getattr(exc, 'problem', exc)}") from None
    return validate_located(_ExampleList, located).root, located


def _check(
    example: FewShotExample,
    located: LocatedYaml,
    loc: tuple[str | int, ...],
    tools: Mapping[str, ToolSchema | None],
) -> None:
    for index, call in enumerate(example.calls):
        where = located.where((*loc, "calls", index))
        if call.name not in tools:
            raise BundleError(
                f"{where}: example calls unknown tool {call.name!r} (tools: {', '.join(tools) or 'none'})"
            )
        schema = tools[call.name]
        unknown = sorted(set(call.arguments) - set(schema.properties)) if schema is not None else []
        if schema is not None and unknown:
            raise BundleError(
                f"{where}: example passes {unknown} to {call.name!r}, which takes "
                f"{sorted(schema.properties) or 'no arguments'}"
            )


def load_examples(
    manifest: BundleManifest, located: LocatedYaml, directory: Path, tools: Mapping[str, ToolSchema | None]
) -> list[FewShotExample]:
    """Every example of the bundle, checked against the tools the model is offered (a tool
    whose schema is not known yet, an MCP one, is mapped to None: only its name is checked)."""
    found: list[tuple[FewShotExample, LocatedYaml, tuple[str | int, ...]]] = [
        (example, located, ("initial_context", "examples", index))
        for index, example in enumerate(manifest.initial_context.examples)
    ]
    if manifest.initial_context.examples_file is not None:
        from_file, file_located = _read_file(directory / manifest.initial_context.examples_file)
        found += [(example, file_located, (index,)) for index, example in enumerate(from_file)]
    for example, where, loc in found:
        _check(example, where, loc, tools)
    return [example for example, _, _ in found]


def example_messages(examples: Sequence[FewShotExample], *, parallel: bool) -> list[Message]:
    """The examples as conversation turns: the task, then the calls and their results.

    With ``parallel`` calls one model turn holds every call, then the results come; without,
    each call is a turn of its own followed by its result, as the grammar will have it.
    """
    messages: list[Message] = []
    for number, example in enumerate(examples):
        calls = [
            ToolCall(call.name, dict(call.arguments), f"example-{number}-{index}")
            for index, call in enumerate(example.calls)
        ]
        messages.append(Message.user(example.user))
        groups = [calls] if parallel else [[call] for call in calls]
        for group in groups:
            messages.append(Message.assistant(None, tuple(group)))
            messages += [Message.tool(ToolResult(call.id, call.name, example.result)) for call in group]
    return messages
