"""An idiom's fixes (``%`` to f-string, concatenation to unpacking, implicit ``Optional``) are
offered together or not at all, on ruff's real findings."""

from __future__ import annotations

from pathlib import Path

import pytest
from tasks.ruff_json import ruff_json

from structured_agents.tasks.lint_fixes import Change
from structured_agents.tasks.lint_idioms import FAMILIES, scarce_dropped, twins_dropped
from structured_agents.tasks.lint_rewrites import with_candidates


def _offered(root: Path, text: str, rules: str) -> tuple[list[int], list[int]]:
    """The lines of the findings offered a fix, and of those left."""
    found, left = with_candidates(
        text, ruff_json(root, "m.py", text, rules, "--target-version", "py39"), "m.py"
    )
    return (
        sorted(int(item["location"]["row"]) for item in found),
        sorted(int(item["location"]["row"]) for item in left),
    )


# parse 1.20.1's __repr__ had one of its two returns converted; ruff cannot convert a ``%d``
# whose argument may be a tuple
REPR = (
    "class P:\n"
    "    def __repr__(self):\n"
    "        if self.n > 20:\n"
    "            return '<%s %d>' % (self.__class__.__name__, self.n)\n"
    "        return '<P %d>' % self.n\n"
)
SEPARATE = "def f(a):\n    return '%s!' % (a,)\n\n\ndef g(a):\n    return '%d' % a\n"
UNPACK = "def f(t, o):\n    a = (t + (None,))[:2]\n    return a, o[:] + [t]\n"
OPTIONAL = (
    "class State:\n    pass\n\n\n"
    "def f(lookup: State = None, vertical: int = None, name: str = None, k: int = 0) -> None:\n"
    "    pass\n"
)


def test_a_fix_whose_twin_in_the_same_function_stays_is_not_offered(tmp_path: Path) -> None:
    offered, left = _offered(tmp_path, REPR, "UP031")
    assert left == [4, 5] and offered == []


# jsonpath-ng 1.6.1's Filter: __str__ made an f-string under a __repr__ left in %
TEXT_PAIR = (
    "class Filter:\n"
    "    def __repr__(self):\n"
    "        return '<Filter %d>' % self.n\n"
    "\n"
    "    def __str__(self):\n"
    "        return '[?%s]' % (self.expressions,)\n"
    "\n"
    "    def show(self):\n"
    "        return '%s!' % (self.n,)\n"
    "\n"
    "    def ask(self):\n"
    "        return '%s?' % (self.n,)\n"
)


def test_a_classs_str_is_not_made_an_f_string_while_its_repr_stays(tmp_path: Path) -> None:
    """Two reviewers sent back ``__str__`` in an f-string beside ``__repr__`` in ``%``: the pair
    counts as one function; other methods are on their own."""
    offered, left = _offered(tmp_path, TEXT_PAIR, "UP031")
    assert (offered, left) == ([9, 12], [3, 6])
    kept, dropped = [Change("UP031 line 6", ()), Change("UP031 line 9", ())], [Change("UP031 line 3", ())]
    assert twins_dropped(TEXT_PAIR, kept, dropped) == [kept[0]]


def test_twins_in_other_functions_do_not_hold_a_fix_back_while_most_are_fixed(tmp_path: Path) -> None:
    offered, left = _offered(tmp_path, SEPARATE, "UP031")
    assert (offered, left) == ([2], [6])
    scarce = SEPARATE + "\n\ndef h(a):\n    return '%d!' % a\n"
    assert _offered(tmp_path, scarce, "UP031") == ([], [2, 6, 10])  # one of three: none


def test_a_format_left_because_it_reads_better_is_no_twin_left_behind(tmp_path: Path) -> None:
    """parse's regular expressions: those with a ``{n}`` stay ``%`` (an f-string doubles the
    braces), their brace-free siblings become f-strings, a split the reviewer called sensible."""
    text = "def f(w, t):\n    a = r'.{1,%s}' % (w,)\n    return a + r'(%s)+' % (t,)\n"
    assert _offered(tmp_path, text, "UP031") == ([3], [2])


SCHEDULE_REPR = (
    "class Job:\n"
    "    def __repr__(self):\n"
    "        stats = '(last: %s)' % (self.last,)\n"
    "        if self.at:\n"
    "            return 'Every %s %s' % (self.n, self.unit[:-1] if self.n == 1 else self.unit)\n"
    "        fmt = 'Every %(n)s ' + '%(stats)s'\n"
    "        return fmt % dict(n=self.n, stats=stats)\n"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (SCHEDULE_REPR, ([], [3, 5])),  # both hold it back
        (SCHEDULE_REPR.replace("self.unit[:-1] if self.n == 1 else self.unit", "self.unit"), ([], [3, 5])),
        (SCHEDULE_REPR.replace("fmt % dict(n=self.n, stats=stats)", "fmt"), ([], [3, 5])),
        (
            SCHEDULE_REPR.replace("self.unit[:-1] if self.n == 1 else self.unit", "self.unit").replace(
                "fmt % dict(n=self.n, stats=stats)", "fmt"
            ),
            ([3, 5], []),
        ),
    ],
)
def test_a_format_with_a_conditional_value_or_a_mapping_ruff_skips_holds_its_twins_back(
    tmp_path: Path, text: str, expected: tuple[list[int], list[int]]
) -> None:
    """schedule 1.2.2's ``Job.__repr__``: two of its four ``%`` formats were made f-strings, and
    two reviewers sent it back. The one whose value is a conditional expression stays (no fix),
    and ruff reports no ``fmt % dict(...)``: each is a twin left in the old idiom."""
    assert _offered(tmp_path, text, "UP031") == expected


TRANSPOSE = (
    "class D:\n"
    "    def transpose(self, index, column):\n"
    "        new_headers = [self.headers[0]] + self[self.headers[0]]\n"
    "        return new_headers, [column] + self.get_col(index)\n"
)
RESERVED = (
    "class V:\n"
    "    def reserved(self, common_keywords):\n"
    "        if self.macos:\n"
    "            return common_keywords + self._MACOS_RESERVED\n"
    "        return common_keywords + ('/',)\n"
)


@pytest.mark.parametrize(
    ("text", "twin", "alone", "row"),
    [
        # tablib 3.6.1's Dataset.transpose: a concatenation with a display ruff does not report
        (TRANSPOSE, "[self.headers[0]] + self[self.headers[0]]", "self.headers", 4),
        # pathvalidate 3.2.0: one onto the same sequence ("now differs from the line above it")
        (RESERVED, "common_keywords + self._MACOS_RESERVED", "self._MACOS_RESERVED", 5),
    ],
)
def test_a_concatenation_ruff_does_not_report_is_a_twin_of_an_unpacking(
    tmp_path: Path, text: str, twin: str, alone: str, row: int
) -> None:
    """Ruff reports one concatenation and not its twin beside it, and a reviewer sent back the one
    made an unpacking: change both or neither."""
    assert _offered(tmp_path, text, "RUF005") == ([], [row])
    assert _offered(tmp_path, text.replace(twin, alone), "RUF005") == ([row], [])


def test_a_conditional_expression_is_not_written_beside_an_if_that_stays(tmp_path: Path) -> None:
    """pyparsing's ``__mul__``: of two parallel ``if``/``else``, one could not follow (here its
    test is an ``or``, which is declined)."""
    text = (
        "def f(a, b, c):\n    if a:\n        x = 1\n    else:\n        x = 2\n"
        "    if b or c:\n        y = 1\n    else:\n        y = 2\n    return x, y\n"
    )
    assert _offered(tmp_path, text, "SIM108") == ([], [2, 6])
    alone = text.replace("b or c", "b")
    assert _offered(tmp_path, alone, "SIM108") == ([2, 6], [])


def test_an_if_else_ruff_does_not_report_is_a_twin_of_a_ternary(tmp_path: Path) -> None:
    """pyparsing's ``__mul__``: ruff reports no SIM108 where the conditional expression would
    pass the line length, and that ``if``/``else`` stays beside the one it reports."""
    long = "And([self] * minElements) + makeOptionalList(optElements, and_more)"
    text = (
        f"def f(self, m, optElements, and_more):\n    if m == 1:\n        r = self\n    else:\n"
        f"        r = {long}\n    if m == 2:\n        q = self\n    else:\n        q = None\n"
        "    return r, q\n"
    )
    assert _offered(tmp_path, text, "SIM108") == ([], [6])


def test_unpacking_is_not_written_beside_the_concatenation_it_parallels(tmp_path: Path) -> None:
    offered, left = _offered(tmp_path, UNPACK, "RUF005")
    assert offered == [] and left == [2, 3]
    alone = "def f(t, o):\n    return o + [t]\n"
    assert _offered(tmp_path, alone, "RUF005") == ([2], [])


@pytest.mark.parametrize(
    ("text", "offered"), [(OPTIONAL, []), (OPTIONAL.replace(": State = None", "=None"), [5, 5])]
)
def test_optional_is_written_for_every_none_default_of_a_signature_or_none(
    tmp_path: Path, text: str, offered: list[int]
) -> None:
    """ruff does not flag ``lookup: State = None`` (pyparsing's ``ConverterState``); fixing its
    two neighbours alone left the signature half explicit."""
    assert _offered(tmp_path, text, "RUF013")[0] == offered


def test_one_line_blocks_split_go_together_or_not_at_all() -> None:
    """ply 3.11's ``cpp.py``: with no tests to decide, the model split one of five
    ``if not tok: break`` and left four; a reviewer asked for all of them or none."""
    split = [Change(f"E701 line {line}", ()) for line in (187, 579)]
    left = [Change(f"E701 line {line}", ()) for line in (639, 895, 913)]

    assert FAMILIES["E701"] == "one-line block"
    assert scarce_dropped(split[:1], [*split[1:], *left]) == split[:1]
    assert scarce_dropped([*split, *left[:1]], left[1:]) == []


def test_the_inner_if_of_three_nested_is_no_twin_left_behind(tmp_path: Path) -> None:
    """ply 3.11's ``_lr_table`` nests three ``if`` statements: ruff joins the outer two and has
    no fix for the inner pair until then. That finding held back the outer join, and with it
    every join of the file's other functions as scarce; a twin that stays in the same function
    still holds it back."""
    b, c = "b" * 30, "c" * 45  # the inner pair joined would pass 88 columns: ruff has no fix for it
    nested = f"def f(a, {b}, {c}):\n    if a:\n        if {b}:\n            if {c}:\n                g()\n"
    twin = "    if a:\n        if (g() and\n                a):\n            g()\n"  # a test over lines: left

    assert _offered(tmp_path, nested, "SIM102") == ([2], [3])
    assert _offered(tmp_path, nested + twin, "SIM102") == ([], [2, 3, 6])
