"""recover_original: the content patches were made against, recovered from a file holding them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from structured_agents.jobs import source_hash
from structured_agents.patches import Patch, make_diff
from structured_agents.patches.diff import apply_edits, diff_edits, parse_diff, split_keepends
from structured_agents.patches.reconcile import recover_original

words = st.sampled_from(["x", "def f():", "    pass", "", "    '''Doc.'''"])


@st.composite
def patched_file(draw: st.DrawFn) -> tuple[list[str], list[Patch], list[Patch]]:
    """An original of distinct lines, one patch per changed line, and the applied subset."""
    original = [f"{word}  # {i}\n" for i, word in enumerate(draw(st.lists(words, min_size=1, max_size=15)))]
    text = "".join(original)
    where = draw(st.lists(st.integers(0, len(original) - 1), unique=True, max_size=5))
    patches = []
    for number, index in enumerate(sorted(where)):
        new = [*original[:index], f"new {number}\n", *original[index + 1 :]]
        patches.append(Patch(f"r{number}", "f.py", source_hash(text), make_diff("f.py", text, "".join(new))))
    applied = [p for p in patches if draw(st.booleans())]
    return original, patches, applied


def _apply(original: list[str], patches: list[Patch]) -> list[str]:
    edits = [diff_edits(original, parse_diff(p.diff)) for p in patches]
    return split_keepends(apply_edits(original, edits))


@settings(max_examples=300, deadline=None)
@given(patched_file())
def test_a_file_holding_some_patches_gives_back_its_original(
    case: tuple[list[str], list[Patch], list[Patch]],
) -> None:
    original, patches, applied = case
    current = _apply(original, applied)
    recovered = recover_original("f.py", current, source_hash("".join(original)), patches)
    assert recovered in (None, original)
    if applied:
        assert recovered == original  # the patches not applied are dropped: their new lines are not there


def test_an_untouched_or_edited_file_gives_nothing() -> None:
    original = ["a\n", "b\n", "c\n"]
    text = "".join(original)
    patch = Patch("r", "f.py", source_hash(text), make_diff("f.py", text, "a\nB\nc\n"))
    assert recover_original("f.py", original, source_hash(text), [patch]) is None
    assert recover_original("f.py", ["a\n", "B\n", "c\n", "d\n"], source_hash(text), [patch]) is None
    assert recover_original("f.py", ["a\n", "B\n", "c\n"], source_hash(text), [patch]) == original
    other_file = Patch("r", "g.py", source_hash(text), make_diff("g.py", text, "a\nB\nc\n"))
    assert recover_original("f.py", ["a\n", "B\n", "c\n"], source_hash(text), [other_file]) is None
