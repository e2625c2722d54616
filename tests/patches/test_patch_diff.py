"""Unified diffs: a/ b/ headers, missing final newlines, CRLF, several diffs of one original."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structured_agents.patches import PatchError, make_diff, parse_diff
from structured_agents.patches.diff import apply_edits, diff_edits, split_keepends


def apply_one(original: str, diff: str) -> str:
    """``original`` with ``diff`` applied."""
    lines = split_keepends(original)
    return apply_edits(lines, [diff_edits(lines, parse_diff(diff))])


def test_headers_and_missing_final_newline() -> None:
    diff = make_diff("pkg/m.py", "a\nb", "a\nc")
    assert diff == (
        "--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1,2 +1,2 @@\n a\n-b\n"
        "\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
    )
    parsed = parse_diff(diff)
    assert (parsed.old_path, parsed.new_path) == ("pkg/m.py", "pkg/m.py")
    assert apply_one("a\nb", diff) == "a\nc"
    assert apply_one("x\n", make_diff("f", "x\n", "x")) == "x"
    assert make_diff("f", "same\n", "same\n") == ""


def test_crlf_and_lone_cr_survive() -> None:
    original, new = "a\r\nb\r\nc\rd\r\n", "a\r\nB\r\nc\rd\r\n"
    assert apply_one(original, make_diff("f", original, new)) == new


lines = st.lists(st.sampled_from(["x\n", "y\n", "def f():\n", "    pass\n", "\n", "z"]), max_size=12)


@settings(max_examples=200, deadline=None)
@given(lines, lines)
def test_any_diff_applies_back(old: list[str], new: list[str]) -> None:
    original, changed = "".join(old), "".join(new)
    diff = make_diff("f.py", original, changed)
    if original != changed:
        assert apply_one(original, diff) == changed


def test_diffs_of_one_original_apply_together_unless_they_overlap() -> None:
    original = "".join(f"line {i}\n" for i in range(1, 21))
    first = original.replace("line 3\n", "line three\n")
    second = original.replace("line 6\n", "line 6\nextra\n")
    third = original.replace("line 4\n", "line four\n")
    base = split_keepends(original)
    edits = [diff_edits(base, parse_diff(make_diff("f", original, text))) for text in (first, second, third)]
    merged = apply_edits(base, edits)
    assert merged == original.replace("line 3\n", "line three\n").replace(
        "line 6\n", "line 6\nextra\n"
    ).replace("line 4\n", "line four\n")
    clash = diff_edits(base, parse_diff(make_diff("f", original, original.replace("line 3\n", "LINE 3\n"))))
    with pytest.raises(PatchError, match="overlap"):
        apply_edits(base, [edits[0], clash])
    same_place = diff_edits(
        base, parse_diff(make_diff("f", original, original.replace("line 6\n", "line 6\nx\n")))
    )
    with pytest.raises(PatchError, match="overlap"):
        apply_edits(base, [edits[1], same_place])


@pytest.mark.parametrize(
    ("diff", "message"),
    [
        ("", "empty"),
        ("garbage\n", "not a unified diff"),
        ("--- a/f\n+++ b/f\nno hunk\n", "expected a '@@'"),
        ("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n", "fewer lines"),
        ("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n--- a/g\n+++ b/g\n", "several files"),
        ("--- a/f\n+++ b/f\n@@ -1 +1 @@\n?a\n", "unexpected"),
    ],
)
def test_malformed_diffs_are_refused(diff: str, message: str) -> None:
    with pytest.raises(PatchError, match=message):
        parse_diff(diff)


def test_a_hunk_that_does_not_match_the_file_is_refused() -> None:
    diff = make_diff("f", "a\nb\n", "a\nc\n")
    with pytest.raises(PatchError, match="does not match"):
        apply_one("a\nB\n", diff)
