"""Submissions that copy a run of words of the prompt's fixed text are refused (the run named and
banned), in a bundle too, unless the run is about the job's own code."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path

import pytest
from bundle_helpers import copy_bundle, edit

from structured_agents.bundles import load_bundle
from structured_agents.bundles.echoes import EchoCheck, Refusal
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
        (  # case, spacing and punctuation aside
            {"doc": "Pop it.\n\n  A last-in,  first-out STACK of items.  "},
            (
                "A last-in,  first",
                "last-in,  first-out",
                "in,  first-out STACK",
                "first-out STACK of",
                "out STACK of items",
            ),
        ),
        (  # a near copy: another word further on does not hide the copied run
            {"doc": "A last-in, first-out pile of plates."},
            ("A last-in, first", "last-in, first-out"),
        ),
        (  # a tool's description
            {"doc": "submit the finished docstring of the target."},
            (
                "submit the finished docstring",
                "the finished docstring of",
                "finished docstring of the",
                "docstring of the target",
            ),
        ),
        (  # an argument's description, copied into a nested argument
            {"doc": "Intro.", "extra": {"deep": ["the text, without any quotes."]}},
            ("the text, without any", "text, without any quotes"),
        ),
        (  # any example call, not only the termination tool's
            {"doc": "Looked at the stack class first."},
            ("Looked at the stack", "at the stack class", "the stack class first"),
        ),
    ],
)
def test_a_copied_run_is_refused_named_and_banned(
    arguments: dict[str, object], copied: tuple[str, ...]
) -> None:
    refusal = CHECK.refusal(ToolCall("submit", arguments))
    assert isinstance(refusal, Refusal)
    assert refusal.message.startswith(f"submit refused: {copied[0]!r} is copied from the examples")
    assert refusal.ban == copied


def test_short_lines_other_tools_own_words_and_own_code_pass() -> None:
    assert CHECK.refusal(ToolCall("submit", {"doc": "Pop an item."})) is None  # under four words
    assert CHECK.refusal(ToolCall("submit", {"doc": "A first-in, first-out queue of items."})) is None
    assert CHECK.refusal(ToolCall("note", {"text": "A last-in, first-out stack of items."})) is None
    # a run whose words all stand in the job's code is about that code, not a copy
    own_code = {"source": "def text_without_quotes(text):\n    return text.strip('\"')\n"}
    assert CHECK.refusal(ToolCall("submit", {"doc": "The text, without any quotes."}), own_code) is None
    other_code = {"source": "def strip_quotes(text):\n    return text.strip('\"')\n"}
    refusal = CHECK.refusal(ToolCall("submit", {"doc": "The text, without any quotes."}), other_code)
    assert refusal is not None and refusal.ban == ("The text, without any", "text, without any quotes")


def _submit(bundle_dir: Path | str, pym_runner: PymRunner, parts: Mapping[str, object]) -> tuple[bool, str]:
    bundle = load_bundle(bundle_dir, runner=pym_runner)
    try:
        call = ToolCall("submit_result", dict(parts), "c")
        result = asyncio.run(bundle.tools.execute(call, RunContext(run_id="r")))
    finally:
        bundle.close()
    return result.is_error, result.output


def test_the_docstring_calls_bundle_refuses_its_own_example_unless_told_not_to(
    tmp_path: Path, pym_runner: PymRunner
) -> None:
    copied = {"description": "Return the kelvin equivalent of a temperature in degrees Celsius."}
    is_error, output = _submit("docstring_calls", pym_runner, copied)
    assert is_error and output.startswith("submit_result refused: 'Return the kelvin equivalent' is copied")
    # a part nested under parameters is checked too
    nested = {"description": "Add a spring.", "parameters": {"n": "How many units were delivered."}}
    is_error, output = _submit("docstring_calls", pym_runner, nested)
    assert is_error and output.startswith("submit_result refused: 'How many units were' is copied")
    own = {"description": "A parser of .env files."}
    assert _submit("docstring_calls", pym_runner, own) == (False, json.dumps(own))

    bundle_dir = copy_bundle("docstring_calls", tmp_path / "docstring_calls")
    edit(bundle_dir / "bundle.yaml", "max_turns: 2\n", "max_turns: 2\nrefuse_copied_lines: false\n")
    assert _submit(bundle_dir, pym_runner, copied) == (False, json.dumps(copied))
