"""The agent's changes as edits of one text (ruff's fixes it accepted, lines it rewrote), and the
tools as each job sees them at each turn: the next fix or line to decide, the grammar's enums."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from structured_agents.grammar import GrammarConfig
from structured_agents.grammar.check import grammar_problem
from structured_agents.plugins import get_plugin
from structured_agents.tasks.lint_fixes import (
    Change,
    apply_changes,
    candidates,
    decisions,
    fix_change,
    line_change,
    lint_tool_view,
)
from structured_agents.types import ToolCall, ToolResult, ToolSchema

TEXT = "def f(x):\n    try:\n        return x == None\n    except:\n        pass\n"


@pytest.mark.parametrize(
    ("number", "new", "expected"),
    [
        (4, "except Exception:", "    except Exception:\n"),  # the line's indentation is kept
        (4, "  except ValueError:", "  except ValueError:\n"),  # unless the new text has its own
    ],
)
def test_line_change(number: int, new: str, expected: str) -> None:
    change = line_change(TEXT, number, new, "E722")
    assert change is not None and change.label == f"E722 line {number}"

    text, applied, overlapping = apply_changes(TEXT, [change])

    lines = TEXT.splitlines(keepends=True)
    lines[number - 1] = expected
    assert (text, applied, overlapping) == ("".join(lines), [change], [])


def test_a_finding_without_a_fix_names_what_its_lines_code_uses_but_not_what_it_quotes() -> None:
    text = 'def f(a):\n    return reslt + a  # total\n\n\nNOTE = """\n    keep these words\n"""\n'
    diagnostics = [
        {"code": "F821", "message": "Undefined name `reslt`", "location": {"row": 2, "column": 12}},
        {"code": "W291", "message": "Trailing whitespace", "location": {"row": 6, "column": 1}},
    ]

    found = {finding["line"]: finding["names"] for finding in candidates(text, diagnostics)}

    assert found == {2: ["return", "a"], 6: []}  # nothing in a comment or inside a string


def test_a_line_that_does_not_exist_is_no_change() -> None:
    assert line_change(TEXT, 6, "pass", "E722") is None
    assert line_change(TEXT, 0, "pass", "E722") is None


def test_a_change_overlapping_an_earlier_one_is_left_out() -> None:
    start = TEXT.index("x == None")
    fix = fix_change({"code": "E711", "line": 3, "fix": {"edits": [[start, start + 9, "x is None"]]}})
    rewrite = line_change(TEXT, 3, "return x is None", "E711")
    other = line_change(TEXT, 4, "except Exception:", "E722")
    assert fix is not None and rewrite is not None and other is not None

    text, applied, overlapping = apply_changes(TEXT, [fix, rewrite, other])

    assert (applied, overlapping) == ([fix, other], [rewrite])
    assert text == TEXT.replace("x == None", "x is None").replace("except:", "except Exception:")


def test_edits_starting_at_one_place_overlap_and_edits_that_only_touch_do_not() -> None:
    first = Change("a", ((0, 0, "# one\n"),))
    second = Change("b", ((0, 0, "# two\n"),))
    same_start = Change("c", ((0, 3, "async def"),))

    text, applied, overlapping = apply_changes("def f(): pass\n", [first, second, same_start])

    assert (applied, overlapping) == ([first], [second, same_start])
    assert text == "# one\ndef f(): pass\n"
    assert apply_changes("ab", [Change("x", ((0, 1, "A"),)), Change("y", ((1, 2, "B"),))])[0] == "AB"


def test_a_candidate_without_a_fix_accepts_to_nothing() -> None:
    assert fix_change({"code": "E722", "line": 4, "fix": None}) is None


def _tool(name: str, **properties: str) -> ToolSchema:
    schema = {"type": "object", "properties": {k: {"type": v} for k, v in properties.items()}}
    return ToolSchema(name, f"the {name} tool", {**schema, "required": list(properties)})


TOOLS = [
    _tool("accept_fix", id="integer"),
    _tool("reject_fix", id="integer"),
    _tool("replace_line", line="integer", new="string"),
    _tool("skip_line", line="integer"),
    _tool("submit_result"),
]
SOURCE = "def f(x):\n    if x == None:\n        return x == True\n    l = 1\n    (x) < 2\n"
INPUTS = {"source": SOURCE, "fix_ids": [1, 2], "edit_lines": [4, 5]}


def _done(name: str, output: dict[str, object]) -> ToolResult:
    return ToolResult(f"call-{name}", name, json.dumps(output))


def _allows(tools: list[ToolSchema]) -> Callable[..., bool]:
    plugin = get_plugin("function_gemma")
    grammar = plugin.build_grammar(tools, GrammarConfig(mode="ebnf", args_format="escaped_strings"))

    def allowed(name: str, **arguments: object) -> bool:
        text = plugin.render_tool_calls([ToolCall(name, dict(arguments))])
        return grammar_problem(grammar, text, complete=True) is None

    return allowed


def test_a_job_decides_one_fix_at_a_time_in_order_and_the_grammar_admits_only_that_one() -> None:
    allowed = _allows(lint_tool_view(TOOLS, INPUTS))
    assert allowed("accept_fix", id=1) and allowed("reject_fix", id=1)
    assert not allowed("submit_result")  # nothing is submitted with a decision pending
    assert not allowed("accept_fix", id=2) and not allowed("replace_line", line=4, new="length = 1")
    assert not allowed("skip_line", line=4)

    allowed = _allows(lint_tool_view(TOOLS, INPUTS, [_done("reject_fix", {"rejected": 1})]))
    assert allowed("accept_fix", id=2) and not allowed("accept_fix", id=1) and not allowed("reject_fix", id=1)
    assert TOOLS[0].properties["id"] == {"type": "integer"}  # the bundle's own schemas are not changed


def test_after_the_fixes_each_line_is_rewritten_on_its_own_first_word_or_skipped() -> None:
    fixed = [_done("accept_fix", {"accepted": 1}), _done("reject_fix", {"rejected": 2})]
    seen = lint_tool_view(TOOLS, INPUTS, fixed)
    assert [tool.name for tool in seen] == ["replace_line", "skip_line"]
    allowed = _allows(seen)
    assert allowed("replace_line", line=4, new="length = 1") and allowed("skip_line", line=4)
    assert not allowed("replace_line", line=4, new="except Exception:")  # not the line's first word
    assert not allowed("replace_line", line=4, new="l = 1\nm = 2") and not allowed(
        "replace_line", line=5, new="x"
    )
    assert not allowed("accept_fix", id=1)

    assert not allowed("replace_line", line=4, new="l = x < 2")  # no '<' (markup) where the line has none

    # a line holding a '<' (and opening on no word) may be any string; a failed call decides nothing
    refused = ToolResult("call-x", "replace_line", "line 4 is already 'l = 1'", True)
    allowed = _allows(lint_tool_view(TOOLS, INPUTS, [*fixed, refused, _done("skip_line", {"skipped": 4})]))
    assert allowed("replace_line", line=5, new="assert x < 2") and allowed("skip_line", line=5)
    assert not allowed("skip_line", line=4)


def test_a_line_whose_rewrite_is_refused_twice_is_left_and_the_next_one_offered() -> None:
    fixed = [_done("accept_fix", {"accepted": 1}), _done("reject_fix", {"rejected": 2})]
    refused = ToolResult("call-r", "replace_line", "line 4 uses l, which the new line drops", True)
    assert _allows(lint_tool_view(TOOLS, INPUTS, [*fixed, refused]))("skip_line", line=4)  # one more try

    allowed = _allows(lint_tool_view(TOOLS, INPUTS, [*fixed, refused, refused]))

    assert allowed("skip_line", line=5) and not allowed("skip_line", line=4)
    after = [*fixed, refused, refused, refused, refused]  # line 5 given up too: only the submission
    assert [tool.name for tool in lint_tool_view(TOOLS, INPUTS, after)] == ["submit_result"]
    assert decisions(after) == ({1: True, 2: False}, {})  # a given-up line changes nothing


def test_a_job_with_nothing_left_to_decide_is_offered_only_the_submission() -> None:
    assert [tool.name for tool in lint_tool_view(TOOLS, {"fix_ids": [], "edit_lines": []})] == [
        "submit_result"
    ]
    assert [tool.name for tool in lint_tool_view(TOOLS, {"fix_ids": [3]})] == ["accept_fix", "reject_fix"]
    done = [_done("accept_fix", {"accepted": 1}), _done("reject_fix", {"rejected": 2})]
    done += [_done("replace_line", {"line": 4, "new": "n = 1"}), _done("skip_line", {"skipped": 5})]
    assert [tool.name for tool in lint_tool_view(TOOLS, INPUTS, done)] == ["submit_result"]


def test_decisions_keep_the_last_about_each_fix_and_line() -> None:
    results = [
        _done("accept_fix", {"accepted": 1}),
        _done("reject_fix", {"rejected": 1}),
        _done("replace_line", {"line": 4, "new": "n = 1"}),
        _done("skip_line", {"skipped": 5}),
        ToolResult("call-y", "accept_fix", "there is no Fix 9", True),
        _done("submit_result", {"submitted": True}),
    ]
    assert decisions(results) == ({1: False}, {4: "n = 1", 5: None})
    with pytest.raises(ValueError, match="accept_fix returned no JSON"):
        decisions([ToolResult("call-z", "accept_fix", "ok")])
