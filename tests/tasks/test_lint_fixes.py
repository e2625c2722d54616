"""The fixes a lint job offers as edits of one text, and the tools as each job sees them at
each turn: the next fix to decide, the grammar's enums."""

from __future__ import annotations

import json
from collections.abc import Callable

from structured_agents.grammar import GrammarConfig
from structured_agents.grammar.check import grammar_problem
from structured_agents.plugins import get_plugin
from structured_agents.tasks.lint_fixes import (
    MAX_CANDIDATES,
    Change,
    apply_changes,
    candidates,
    decisions,
    fix_change,
    fixes,
    lint_tool_view,
)
from structured_agents.types import ToolCall, ToolResult, ToolSchema

TEXT = "def f(x):\n    try:\n        return x == None\n    except:\n        pass\n"


def _diagnostic(code: str, row: int, column: int, end: int, content: str | None) -> dict[str, object]:
    fix = None
    if content is not None:
        edit = {
            "content": content,
            "location": {"row": row, "column": column},
            "end_location": {"row": row, "column": end},
        }
        fix = {"applicability": "unsafe", "message": f"fix {code}", "edits": [edit]}
    return {
        "code": code,
        "message": f"{code} message",
        "location": {"row": row, "column": column},
        "fix": fix,
    }


def test_only_findings_with_a_fix_are_offered_by_line_and_numbered() -> None:
    diagnostics = [
        _diagnostic("E722", 4, 5, 11, "except Exception"),
        _diagnostic("E711", 3, 18, 25, "is None"),
        _diagnostic("F821", 3, 16, 17, None),  # no fix: not offered
    ]

    found = candidates(TEXT, diagnostics)

    assert [(f["id"], f["code"], f["line"]) for f in found] == [(1, "E711", 3), (2, "E722", 4)]
    assert found[0]["fix"]["diff"] == "-        return x == None\n+        return x is None"
    assert found[0]["context"].splitlines()[1] == "> 3 |         return x == None"


def test_a_job_offers_at_most_a_few_fixes_and_evidence_sees_them_all() -> None:
    text = "".join(f"x{n} = a == None\n" for n in range(MAX_CANDIDATES + 3))
    diagnostics = [_diagnostic("E711", n + 1, 6, 14, "a is None") for n in range(MAX_CANDIDATES + 3)]

    assert len(candidates(text, diagnostics)) == MAX_CANDIDATES
    changed, applied, _ = apply_changes(text, fixes(text, diagnostics))
    assert len(applied) == MAX_CANDIDATES + 3 and "==" not in changed


def test_a_change_overlapping_an_earlier_one_is_left_out() -> None:
    start = TEXT.index("x == None")
    fix = fix_change({"code": "E711", "line": 3, "fix": {"edits": [[start, start + 9, "x is None"]]}})
    other = fix_change({"code": "E711", "line": 3, "fix": {"edits": [[start + 2, start + 4, "is"]]}})
    bare = fix_change(
        {
            "code": "E722",
            "line": 4,
            "fix": {"edits": [[TEXT.index("except:") + 6, TEXT.index("except:") + 6, " Exception"]]},
        }
    )
    assert fix is not None and other is not None and bare is not None

    text, applied, overlapping = apply_changes(TEXT, [fix, other, bare])

    assert (applied, overlapping) == ([fix, bare], [other])
    assert text == TEXT.replace("x == None", "x is None").replace("except:", "except Exception:")


def test_edits_starting_at_one_place_overlap_and_edits_that_only_touch_do_not() -> None:
    first = Change("a", ((0, 0, "# one\n"),))
    second = Change("b", ((0, 0, "# two\n"),))
    same_start = Change("c", ((0, 3, "async def"),))

    text, applied, overlapping = apply_changes("def f(): pass\n", [first, second, same_start])

    assert (applied, overlapping) == ([first], [second, same_start])
    assert text == "# one\ndef f(): pass\n"
    assert apply_changes("ab", [Change("x", ((0, 1, "A"),)), Change("y", ((1, 2, "B"),))])[0] == "AB"


def test_an_edit_two_changes_share_is_applied_once() -> None:
    """Two ClassVar annotations each add the same import: both apply, the import once."""
    text = "class A:\n    X = {}\n    Y = []\n"
    imports = (0, 0, "from typing import ClassVar\n")
    x = Change("RUF012 line 2", (imports, (text.index(" = {}"), text.index(" = {}"), ": ClassVar[dict]")))
    y = Change("RUF012 line 3", (imports, (text.index(" = []"), text.index(" = []"), ": ClassVar[list]")))

    changed, applied, overlapping = apply_changes(text, [x, y])

    assert (applied, overlapping) == ([x, y], [])
    assert (
        changed
        == "from typing import ClassVar\nclass A:\n    X: ClassVar[dict] = {}\n    Y: ClassVar[list] = []\n"
    )


def test_a_candidate_without_a_fix_accepts_to_nothing() -> None:
    assert fix_change({"code": "E722", "line": 4, "fix": None}) is None


def _tool(name: str, **properties: str) -> ToolSchema:
    schema = {"type": "object", "properties": {k: {"type": v} for k, v in properties.items()}}
    return ToolSchema(name, f"the {name} tool", {**schema, "required": list(properties)})


TOOLS = [_tool("accept_fix", id="integer"), _tool("reject_fix", id="integer"), _tool("submit_result")]
INPUTS = {"fix_ids": [1, 2]}


def _done(name: str, output: dict[str, object]) -> ToolResult:
    return ToolResult(f"call-{name}", name, json.dumps(output))


def _allows(tools: list[ToolSchema]) -> Callable[..., bool]:
    plugin = get_plugin("function_gemma")
    grammar = plugin.build_grammar(tools, GrammarConfig(mode="ebnf", args_format="escaped_strings"))

    def allowed(name: str, **arguments: object) -> bool:
        text = plugin.render_tool_calls([ToolCall(name, dict(arguments))], tools)
        return grammar_problem(grammar, text, complete=True) is None

    return allowed


def test_a_job_decides_one_fix_at_a_time_in_order_and_the_grammar_admits_only_that_one() -> None:
    allowed = _allows(lint_tool_view(TOOLS, INPUTS))
    assert allowed("accept_fix", id=1) and allowed("reject_fix", id=1)
    assert not allowed("submit_result")  # nothing is submitted with a decision pending
    assert not allowed("accept_fix", id=2)

    allowed = _allows(lint_tool_view(TOOLS, INPUTS, [_done("reject_fix", {"rejected": 1})]))
    assert allowed("accept_fix", id=2) and not allowed("accept_fix", id=1) and not allowed("reject_fix", id=1)
    assert TOOLS[0].properties["id"] == {"type": "integer"}  # the bundle's own schemas are not changed


def test_a_job_with_nothing_left_to_decide_is_offered_only_the_submission() -> None:
    assert [tool.name for tool in lint_tool_view(TOOLS, {"fix_ids": []})] == ["submit_result"]
    assert [tool.name for tool in lint_tool_view(TOOLS, {"fix_ids": [3]})] == ["accept_fix", "reject_fix"]
    done = [_done("accept_fix", {"accepted": 1}), _done("reject_fix", {"rejected": 2})]
    assert [tool.name for tool in lint_tool_view(TOOLS, INPUTS, done)] == ["submit_result"]
    refused = ToolResult("call-x", "accept_fix", "there is no Fix 9", True)
    assert [tool.name for tool in lint_tool_view(TOOLS, INPUTS, [refused])] == ["accept_fix", "reject_fix"]


def test_decisions_keep_the_last_about_each_fix() -> None:
    results = [
        _done("accept_fix", {"accepted": 1}),
        _done("reject_fix", {"rejected": 1}),
        _done("accept_fix", {"accepted": 2}),
        ToolResult("call-y", "accept_fix", "there is no Fix 9", True),
        _done("submit_result", {"submitted": True}),
    ]
    assert decisions(results) == {1: False, 2: True}
    try:
        decisions([ToolResult("call-z", "accept_fix", "ok")])
    except ValueError as exc:
        assert "accept_fix returned no JSON" in str(exc)
    else:
        raise AssertionError("a decision that is not JSON must be refused")
