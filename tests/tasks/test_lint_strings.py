"""A string literal too long for its line, split into implicitly concatenated parts that fit
and parse to the same string."""

from __future__ import annotations

import ast

import pytest

from structured_agents.tasks.lint_strings import reflow_strings, split_strings


def _call(*arguments: str) -> list[str]:
    return ["def f(self, name, plugin):\n", "    raise ValueError(\n", *arguments, "    )\n"]


def _value(lines: list[str]) -> str:
    tree = ast.parse("".join(lines))
    raised = next(node for node in ast.walk(tree) if isinstance(node, ast.Call))
    return ast.dump(raised.args[0])


PLUGGY = '        f"Plugin name already registered: {name}={plugin}\\n{self._name2plugin}"\n'


def test_a_long_f_string_is_split_after_its_newline_escape_where_that_fits() -> None:
    lines = _call(PLUGGY)

    split = split_strings(lines, 0, len(lines), 72, set())

    assert split[2:4] == [
        '        f"Plugin name already registered: {name}={plugin}\\n"\n',
        '        f"{self._name2plugin}"\n',
    ]
    assert _value(split) == _value(lines)


def test_else_after_the_last_space_that_fits_and_a_part_without_a_field_is_no_f_string() -> None:
    lines = _call('        f"the {{literal}} braces are kept and then the {name} comes after them",\n')

    split = split_strings(lines, 0, len(lines), 50, set())

    assert split[2:4] == [
        '        "the {literal} braces are kept "\n',
        '        f"and then the {name} comes after them",\n',  # the parts as even as can be
    ]
    assert _value(split) == _value(lines)


@pytest.mark.parametrize(
    "line",
    [
        '        f"{name}{plugin}{self._name2plugin}{self._hookcallers_of_all_those}"\n',  # no space
        '        b"bytes are left as they are, however long the literal is written"\n',
        '        "two literals on one line", "the second of them long enough to pass"\n',
        '        f"a field {plugin!r:>{width}} with a format spec whose space: {name:{fill}}"\n',
    ],
)
def test_a_literal_with_no_place_to_split_or_not_alone_is_left_as_it_is(line: str) -> None:
    lines = _call(line)
    if "{width}" in line:  # split, but never inside a field
        split = split_strings(lines, 0, len(lines), 60, set())
        assert _value(split) == _value(lines)
        assert all(part.count("{") == part.count("}") for part in split[2:-1])
        return
    assert split_strings(lines, 0, len(lines), 50, set()) == lines


def test_a_string_standing_as_a_statement_or_a_line_known_before_is_not_split() -> None:
    statement = ["def f():\n", '    "a docstring long enough to pass the width of forty columns"\n']
    assert split_strings(statement, 0, 2, 40, set()) == statement
    lines = _call(PLUGGY)
    assert split_strings(lines, 0, len(lines), 72, {PLUGGY.rstrip("\n")}) == lines


SCHEDULE = (
    '        timestats = f"(last run: {format_time(self.last_run)}, next run: {format_time(self.next_run)})"'
    "\n"
)


@pytest.mark.parametrize("head", ["timestats = ", "timestats: str = ", "timestats += ", "return "])
def test_the_whole_value_of_an_assignment_or_return_is_put_in_parentheses_and_split(head: str) -> None:
    """schedule 1.2.2's ``Job.__repr__``: UP031 and then UP032 made a 102-column f-string."""
    lines = ["def f(self):\n", "    if self:\n", SCHEDULE.replace("timestats = ", head)]

    split = split_strings(lines, 0, len(lines), 88, set())

    assert split[2:] == [
        f"        {head}(\n",
        '            f"(last run: {format_time(self.last_run)}, "\n',
        '            f"next run: {format_time(self.next_run)})"\n',
        "        )\n",
    ]
    before, after = ast.parse("".join(lines)), ast.parse("".join(split))
    assert ast.dump(before) == ast.dump(after)


@pytest.mark.parametrize(
    "line",
    [
        SCHEDULE.replace('"\n', '" + suffix\n'),  # the string is not the whole value
        SCHEDULE.replace('"\n', '"  # a comment\n'),  # it does not end the line
        SCHEDULE.replace("timestats = ", "print("),  # a call's argument, not alone on its line
        '        timestats = "a string that fits once it stands in parentheses alone"\n',
        '        timestats = "a string with no place to split it:' + "x" * 60 + '"\n',
    ],
)
def test_a_value_that_is_not_the_whole_string_or_fits_or_cannot_be_split_stays(line: str) -> None:
    if line.startswith("        print("):
        line = line.rstrip("\n") + ")\n"
    lines = ["def f(self):\n", "    if self:\n", line]

    assert split_strings(lines, 0, len(lines), 70, set()) == lines


def _string(lines: list[str]) -> str:
    tree = ast.parse("".join(lines))
    found = next(node for node in ast.walk(tree) if isinstance(node, ast.JoinedStr))
    return ast.dump(found)


ALIGNED = [  # pyasn1 0.6.0's codec/native/decoder.py once UP031 and UP032 are made
    "def decode(LOG, valueDecoder, pyObject):\n",
    "    if LOG:\n",
    "        LOG(f'calling decoder {type(valueDecoder).__name__} "
    "on Python type {type(pyObject).__name__} '\n",
    "            f'<{pyObject!r}>')\n",
    "    return pyObject\n",
]


def test_a_long_string_a_fix_wrote_in_aligned_code_is_split_under_its_first_literal() -> None:
    split = reflow_strings(ALIGNED, 0, len(ALIGNED), 79, before="")

    assert split[2:4] == [
        "        LOG(f'calling decoder {type(valueDecoder).__name__} on '\n",
        "            f'Python type {type(pyObject).__name__} <{pyObject!r}>')\n",
    ]
    assert split[4:] == ALIGNED[4:] and _string(split) == _string(ALIGNED)


@pytest.mark.parametrize(
    ("body", "width", "written"),
    [
        (  # glom 23.5.0: a returned string takes parentheses, as the `%` format had them
            ["        return f'could not access {path_part!r}, part {self.part_idx!r} of {self.path!r}'\n"],
            72,
            [
                "        return (f'could not access {path_part!r}, '\n",
                "                f'part {self.part_idx!r} of {self.path!r}')\n",
            ],
        ),
        (  # pyasn1 0.6.0: the bracket the fix left alone on its line closes after the string
            [
                "        raise ValueError(f'{self.__class__.__name__}: "
                "screwed constraint values {self.start}'\n",
                "                )\n",
            ],
            72,
            [
                "        raise ValueError(f'{self.__class__.__name__}: '\n",  # after the label's colon
                "                         f'screwed constraint values {self.start}')\n",
            ],
        ),
        (  # a plain literal joins a formatted one with its braces doubled, then undoubled
            [
                "        return g('a {literal} brace before a field and then several words more '\n",
                "                 f'{x} then the end')\n",
            ],
            64,
            [
                "        return g('a {literal} brace before a field and '\n",
                "                 f'then several words more {x} then the end')\n",
            ],
        ),
    ],
)
def test_a_string_is_written_again_in_literals_under_its_first(
    body: list[str], width: int, written: list[str]
) -> None:
    head = ["def message(self, path_part, x):\n", "    if path_part:\n"]

    split = reflow_strings([*head, *body], 0, len(head) + len(body), width, before="")

    assert split == [*head, *written]
    compile("".join(split), "m.py", "exec")


@pytest.mark.parametrize(
    ("lines", "before"),
    [
        (ALIGNED, "".join(ALIGNED)),  # the string was there before the fix: not the fix's to split
        ([ALIGNED[0], "    g(a, f'{valueDecoder} is the decoder of {pyObject} that we call now')\n"], ""),
        ([ALIGNED[0], "    f'{valueDecoder} is the decoder of {pyObject} that we call now today'\n"], ""),
        ([ALIGNED[0], "    g(f'{valueDecoder} is the decoder of {pyObject}' + ' that we call now')\n"], ""),
        ([ALIGNED[0], "    g(f'{valueDecoder} is the decoder of {pyObject} that we call' \"now\")\n"], ""),
        ([ALIGNED[0], "    g(f'{valueDecoder}{pyObject}{valueDecoder}{pyObject}{valueDecoder}')\n"], ""),
        ([ALIGNED[0], "    g(x, y)  # a comment long enough to pass the width of sixty columns\n"], ""),
    ],
)
def test_a_string_mid_list_beside_more_code_or_not_the_fixs_is_left_as_it_is(
    lines: list[str], before: str
) -> None:
    assert reflow_strings(lines, 0, len(lines), 60, before=before) == lines


@pytest.mark.parametrize(
    ("string", "parts"),
    [  # webtest 3.0.7's lint.py, each cut at the furthest space before, which a reviewer sent back
        (
            'f"No fields found matching {name!r} (and no default given), so none is"',
            ['f"No fields found matching {name!r} "', '"(and no default given), so none is"'],
        ),  # forms.py: not "given)" alone
        (
            'f"wsgi.input ({wsgi_input!r}) doesn\'t have the attribute {attr}"',
            ['f"wsgi.input ({wsgi_input!r}) "', 'f"doesn\'t have the attribute {attr}"'],
        ),
        (
            'f"Individual headers ({item!r}) must be of type tuple: {type(item)!r}"',
            ['f"Individual headers ({item!r}) "', 'f"must be of type tuple: {type(item)!r}"'],
        ),
        (
            'f"Bad header value: {value!r} (bad char: {bad_header_value_re.search(value).group(0)!r})"',
            [
                'f"Bad header value: {value!r} "',
                'f"(bad char: {bad_header_value_re.search(value).group(0)!r})"',
            ],
        ),
        (
            'f"Environmental variable {key} is not a string: '
            '{type(environ[key])!r} (value: {environ[key]!r})"',
            [
                'f"Environmental variable {key} is not a string: "',
                'f"{type(environ[key])!r} (value: {environ[key]!r})"',
            ],
        ),
    ],
)
def test_a_string_is_cut_between_its_phrases_into_parts_as_even_as_can_be(
    string: str, parts: list[str]
) -> None:
    lines = ["def f():\n", "    raise AssertionError(\n", f"{' ' * 16}{string}\n", "    )\n"]

    split = reflow_strings(lines, 0, len(lines), 79, before="")

    assert split[2:-1] == [f"{' ' * 16}{part}\n" for part in parts]
