"""The checker: every rejected construct with its code and location, and what valid scripts yield."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from structured_agents.pym import PymCheckError, PymParseError, load_source
from structured_agents.pym.checker import check_source
from structured_agents.pym.loader import runnable_code

FIXTURES = Path(__file__).parent / "fixtures"

REJECTED = [
    ("PYM001", 2, 5, "x = 1\ny = (\n"),
    ("PYM002", 2, 1, "x = 1\nclass A:\n    pass\n"),
    ("PYM003", 2, 5, "def gen():\n    yield 1\n"),
    ("PYM003", 2, 5, "def gen():\n    yield from [1]\n"),
    ("PYM004", 1, 1, "with ctx() as c:\n    pass\n"),
    ("PYM004", 2, 5, "async def f():\n    async with ctx() as c:\n        pass\n"),
    ("PYM005", 1, 1, "match 1:\n    case 1:\n        pass\n"),
    ("PYM006", 3, 5, "g = 1\ndef f():\n    global g\n"),
    ("PYM006", 4, 9, "def f():\n    a = 1\n    def g():\n        nonlocal a\n"),
    ("PYM007", 2, 1, "a = 1\ndel a\n"),
    ("PYM008", 1, 5, "f = lambda x: x\n"),
    ("PYM009", 1, 1, "import os\n"),
    ("PYM009", 1, 1, "from os import path\n"),
    ("PYM009", 2, 5, "def f():\n    from grail import Input\n"),
    ("PYM010", 1, 1, "from grail import Input, Output\n"),
    ("PYM010", 1, 1, "from grail import Input as In\n"),
    ("PYM011", 1, 10, 'x: int = Input("y")\n'),
    ("PYM012", 1, 5, 'x = Input("x")\n'),
    ("PYM012", 2, 14, 'if True:\n    x: int = Input("x")\n'),
    ("PYM012", 1, 10, 'x: int = Input("x", 3)\n'),
    ("PYM012", 1, 30, 'x: int = Input("x", required=True)\n'),
    ("PYM012", 1, 33, 'x: int = Input("x", description=1)\n'),
    ("PYM013", 1, 29, 'x: int = Input("x", default=len("ab"))\n'),
    ("PYM013", 1, 30, 'x: list = Input("x", default={1, 2})\n'),
    ("PYM014", 1, 1, 'x: int = Input("x", default="three")\n'),
    ("PYM015", 1, 4, 'x: set[int] = Input("x")\n'),
    ("PYM015", 1, 4, 'x: dict[int, str] = Input("x")\n'),
    ("PYM016", 2, 1, 'x: int = Input("x")\nx: str = Input("x")\n'),
    ("PYM017", 1, 1, "try:\n    pass\nexcept* ValueError:\n    pass\n"),
    ("PYM018", 2, 5, "async def f(y):\n    async for x in y:\n        pass\n"),
    ("PYM018", 2, 25, "async def f(y):\n    return [x async for x in y]\n"),
    ("PYM019", 1, 1, 'exec("import os")\n'),
    ("PYM019", 1, 5, "e = eval\n"),
    ("PYM019", 2, 12, 'def f(code):\n    return compile(code, "f", "exec")\n'),
    ("PYM019", 1, 5, 'm = __import__("os")\n'),
    ("PYM019", 1, 5, 'f = getattr(obj, "exec")\n'),
    ("PYM019", 1, 5, "b = x.__builtins__\n"),
    ("PYM020", 3, 5, "@external\nasync def f(a: int) -> int:\n    return a\n"),
    ("PYM021", 2, 1, "@external\ndef f(a: int) -> int: ...\n"),
    ("PYM021", 2, 6, "def outer():\n    @external\n    async def f(a: int) -> int: ...\n"),
    ("PYM022", 2, 13, "@external\nasync def f(a) -> int: ...\n"),
    ("PYM022", 2, 1, "@external\nasync def f(*a: int) -> int: ...\n"),
    ("PYM023", 3, 5, "@external\nasync def f(a: int) -> int: ...\nx = f(1)\n"),
    ("PYM023", 3, 5, "@external\nasync def f(a: int) -> int: ...\ng = f\n"),
    ("PYM030", 1, 22, 'x: int = Input("x"); y = x\n'),
]


@pytest.mark.parametrize(("code", "line", "column", "source"), REJECTED, ids=[r[0] for r in REJECTED])
def test_rejected_construct(code: str, line: int, column: int, source: str) -> None:
    diagnostics = check_source(source, "t.pym").diagnostics
    assert [(d.code, d.line, d.column) for d in diagnostics][:1] == [(code, line, column)], diagnostics
    assert str(diagnostics[0]).startswith(f"t.pym:{line}:{column}: {code} ")


def test_every_code_is_documented() -> None:
    import structured_agents.pym.checker as checker

    for code, *_ in REJECTED:
        assert code in (checker.__doc__ or "")


def test_load_raises_with_all_diagnostics_in_file_order(tmp_path: Path) -> None:
    path = tmp_path / "multi.pym"
    path.write_text("import os\nf = lambda: 1\ndel f\n")
    with pytest.raises(PymCheckError) as info:
        load_source(path.read_text(), path)
    assert [d.code for d in info.value.diagnostics] == ["PYM009", "PYM008", "PYM007"]
    assert str(info.value).splitlines()[0] == f"{path}:1:1: PYM009 'import os': only typing may be imported"


def test_syntax_error_is_a_parse_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.pym"
    with pytest.raises(PymParseError) as info:
        load_source("x = (\n", path)
    assert info.value.diagnostics[0].code == "PYM001"
    assert "never closed" in str(info.value)


def test_fixture_files_report_file_line_col() -> None:
    for name, expected in [("uses_class.pym", "PYM002"), ("wrong_name.pym", "PYM011")]:
        path = FIXTURES / "broken" / name
        with pytest.raises(PymCheckError) as info:
            load_source(path.read_text(), path)
        (diagnostic,) = info.value.diagnostics
        assert diagnostic.code == expected and diagnostic.path == str(path)
    assert info.value.diagnostics[0].line == 3


def test_valid_script_declarations() -> None:
    path = FIXTURES / "tools" / "count_lines.pym"
    script = load_source(path.read_text(), path)
    assert [(i.name, i.required, i.line) for i in script.inputs] == [("path", True, 5), ("limit", False, 6)]
    (external,) = script.externals
    assert (external.name, external.line, [p.name for p in external.params]) == ("read_file", 10, ["path"])
    assert script.description == "Count the lines of a workspace file, up to a limit."


def test_declarations_are_blanked_and_other_lines_kept() -> None:
    source = textwrap.dedent(
        """\
        from grail import Input, external
        x: int = Input(
            "x",
            default=1,
        )
        @external
        async def f(a: int) -> int: ...
        y = await f(x)
        y
        """
    )
    result = check_source(source)
    assert result.diagnostics == []
    code = runnable_code(source, result.removed)
    assert code.split("\n") == ["", "", "", "", "", "", "", "y = await f(x)", "y", ""]


def test_allowed_constructs_pass() -> None:
    source = textwrap.dedent(
        '''\
        """Doc."""
        from __future__ import annotations
        import typing
        from typing import Any
        def helper(items: list[Any]) -> int:
            total = 0
            for item in items:
                try:
                    total += int(item)
                except ValueError:
                    continue
            return total
        async def twice(n):
            return n * 2
        squares = [i * i for i in range(3)] + [await twice(1)]
        {"total": helper(squares), "ok": isinstance(squares, list)}
        '''
    )
    assert check_source(source).diagnostics == []


def test_dynamic_code_names_only_where_they_are_used_as_such() -> None:
    source = 'note = "exec and eval"\nvalue = record.eval\nname = getattr(record, "compile_all")\n'
    assert check_source(source, "t.pym").diagnostics == []
