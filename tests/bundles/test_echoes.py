"""Submissions that copy the prompt's fixed text word for word are refused, in a bundle too."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from bundle_helpers import copy_bundle, edit

from structured_agents.bundles import load_bundle
from structured_agents.bundles.echoes import EchoCheck
from structured_agents.bundles.manifest import FewShotCall, FewShotExample
from structured_agents.context import RunContext
from structured_agents.pym import PymRunner
from structured_agents.types import ToolCall, ToolSchema

EXAMPLES = [
    FewShotExample(
        user="Write the docstring of class Stack.",
        calls=[
            FewShotCall(name="note", arguments={"text": "Looked at the stack class first."}),
            FewShotCall(
                name="submit",
                arguments={"doc": "A last-in, first-out stack of items.\n\nArgs:\n    item: The item."},
            ),
        ],
    )
]
TOOLS = [
    ToolSchema(
        "submit",
        "Submit the finished docstring of the target.",
        {
            "type": "object",
            "properties": {"doc": {"type": "string", "description": "The text, without any quotes."}},
        },
    )
]
CHECK = EchoCheck.of("submit", EXAMPLES, TOOLS)


@pytest.mark.parametrize(
    ("arguments", "copied"),
    [
        (
            {"doc": "Pop it.\n\n  A last-in,  first-out STACK of items.  "},
            "A last-in,  first-out STACK of items.",
        ),
        (
            {"doc": "submit the finished docstring of the target."},
            "submit the finished docstring of the target.",
        ),
        (
            {"doc": "Intro.", "extra": {"deep": ["the text, without any quotes."]}},
            "the text, without any quotes.",
        ),
        ({"doc": "Looked at the stack class first."}, "Looked at the stack class first."),  # any example call
    ],
)
def test_a_copied_line_is_refused_and_named(arguments: dict[str, object], copied: str) -> None:
    refusal = CHECK.refusal(ToolCall("submit", arguments))
    assert refusal is not None and f"{copied!r} is copied word for word" in refusal


def test_short_lines_other_tools_and_own_words_pass() -> None:
    assert CHECK.refusal(ToolCall("submit", {"doc": "Pop an item.\n\nArgs:\n    item: The item."})) is None
    assert CHECK.refusal(ToolCall("submit", {"doc": "A first-in, first-out queue of items."})) is None
    assert CHECK.refusal(ToolCall("note", {"text": "A last-in, first-out stack of items."})) is None


def _submit(bundle_dir: Path | str, pym_runner: PymRunner, docstring: str) -> tuple[bool, str]:
    bundle = load_bundle(bundle_dir, runner=pym_runner)
    try:
        call = ToolCall("submit_result", {"docstring": docstring}, "c")
        result = asyncio.run(bundle.tools.execute(call, RunContext(run_id="r")))
    finally:
        bundle.close()
    return result.is_error, result.output


def test_the_docstring_bundle_refuses_its_own_example_unless_told_not_to(
    tmp_path: Path, pym_runner: PymRunner
) -> None:
    copied = "A last-in, first-out stack of items."
    is_error, output = _submit("docstring", pym_runner, copied)
    assert is_error and output.startswith(f"submit_result refused: {copied!r} is copied word for word")
    assert _submit("docstring", pym_runner, "A parser of .env files.") == (
        False,
        '{"docstring": "A parser of .env files."}',
    )

    own = copy_bundle("docstring", tmp_path / "docstring")
    edit(own / "bundle.yaml", "max_turns: 2\n", "max_turns: 2\nrefuse_copied_lines: false\n")
    assert _submit(own, pym_runner, copied) == (False, f'{{"docstring": "{copied}"}}')
