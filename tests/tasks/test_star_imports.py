"""Explicit imports for star imports: what each name comes from, read from the files under the
root, and where none is written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tasks.ruff_json import ruff_json

from structured_agents.tasks.lint_fixes import apply_changes, fixes
from structured_agents.tasks.lint_rewrites import with_candidates

CORE = (
    "from enum import Enum\n"
    "import warnings\n"
    "from .exc import ParseError\n\n"
    "__all__ = ['Word', 'Literal', 'Enum', 'ParseError', 'warnings']\n\n\n"
    "class Word:\n    pass\n\n\n"
    "class Literal:\n    pass\n"
)
EXC = "class ParseError(Exception):\n    pass\n\n\nclass _Hidden:\n    pass\n"
ACTIONS = "from .exc import *\n\n\ndef replace_with(s):\n    return s\n"
HELPERS = (
    "from .core import *\n"
    "from .actions import *\n\n\n"
    "def f():\n"
    "    warnings.warn('x')\n"
    "    return Word(), Literal, Enum, ParseError, replace_with\n"
)
"""``ParseError`` is bound by both star imports, ``actions`` last, and comes from ``exc``;
``Enum`` and ``warnings`` are core's imports, from the standard library."""


def _package(root: Path, **modules: str) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("from .core import *\n")
    for name, text in modules.items():
        (root / "pkg" / f"{name}.py").write_text(text)
    return root


def _explicit(root: Path, path: str) -> tuple[str, list[dict[str, object]]]:
    """The file with every explicit import applied, and the findings given one."""
    text = (root / path).read_text()
    found, _ = with_candidates(text, ruff_json(root, path, text, "F403,F405"), path, root)
    return apply_changes(text, fixes(text, found))[0], found


def test_each_name_is_imported_from_where_it_comes_from(tmp_path: Path) -> None:
    root = _package(tmp_path, core=CORE, exc=EXC, actions=ACTIONS, _helpers=HELPERS)

    text, found = _explicit(root, "pkg/_helpers.py")

    assert len(found) == 2
    assert text.startswith(
        "import warnings\nfrom enum import Enum\nfrom .core import Literal, Word\n"
        "from .actions import replace_with\nfrom .exc import ParseError\n\n\ndef f():\n"
    )
    assert ruff_json(root, "pkg/_helpers.py", text, "F403,F405") == []
    (root / "pkg" / "_helpers.py").write_text(text)
    run = "import pkg._helpers as h, pkg.exc as e; assert h.f()[3] is e.ParseError"
    subprocess.run([sys.executable, "-c", run], cwd=root, check=True)


def test_names_join_the_files_own_imports_and_absolute_ones_go_with_them(tmp_path: Path) -> None:
    user = (
        "import os\n\nfrom .exc import ParseError as PE\nfrom .core import *\n\n\n"
        "def f():\n    return os, PE, Word, Enum, ParseError\n"
    )
    root = _package(tmp_path, core=CORE, exc=EXC, _user=user)

    text, _ = _explicit(root, "pkg/_user.py")

    assert text.startswith(
        "import os\nfrom enum import Enum\n\nfrom .exc import ParseError as PE, ParseError\n"
        "from .core import Word\n\n\ndef f():\n"
    )


def test_two_stars_that_join_one_statement_are_one_change(tmp_path: Path) -> None:
    """pyparsing's core: ``from .exceptions import *`` and ``from .actions import *`` both give
    names of ``util``, which core already imports from; one change takes both stars out."""
    util = "def line():\n    pass\n\n\ndef col():\n    pass\n"
    user = "from .util import line as _line\nfrom .a import *\nfrom .b import *\n\nx = line, col\n"
    root = _package(
        tmp_path, util=util, a="from .util import line\n", b="from .util import col\n", _user=user
    )

    text, found = _explicit(root, "pkg/_user.py")

    assert len(found) == 2 and found[0]["fix"] == found[1]["fix"]
    assert text == "from .util import line as _line, col, line\n\nx = line, col\n"


def test_a_name_bound_two_ways_is_imported_from_the_module_that_chose(tmp_path: Path) -> None:
    """``loads`` depends on which import succeeded: it comes from ``compat``, as the star gave it."""
    compat = "try:\n    from simplejson import loads\nexcept ImportError:\n    from json import loads\n"
    root = _package(tmp_path, compat=compat, _user="from .compat import *\n\nparse = loads\n")

    text, _ = _explicit(root, "pkg/_user.py")

    assert text == "from .compat import loads\n\nparse = loads\n"


@pytest.mark.parametrize(
    ("modules", "path"),
    [
        ({"core": CORE, "exc": EXC}, "pkg/__init__.py"),  # a package's re-exports
        ({"_user": "from elsewhere import *\n\nx = thing\n"}, "pkg/_user.py"),  # not under the root
        (
            {"gen": "for k in 'ab':\n    globals()[k] = 1\n", "_user": "from .gen import *\n\nx = a\n"},
            "pkg/_user.py",
        ),  # names bound through globals()
        (
            {"core": CORE, "exc": EXC, "_user": "from .core import *\n\nx = Word, undefined_name\n"},
            "pkg/_user.py",
        ),  # one name no star binds: the file keeps its stars
        (
            {"core": CORE, "exc": EXC, "helpers": HELPERS},
            "pkg/helpers.py",
        ),  # a public module: its namespace holds what the stars bind (pyparsing.helpers.Each)
    ],
)
def test_no_explicit_import_where_what_a_star_binds_cannot_be_read(
    tmp_path: Path, modules: dict[str, str], path: str
) -> None:
    root = _package(tmp_path, **modules)

    text, found = _explicit(root, path)

    assert found == [] and text == (root / path).read_text()


def test_a_module_reached_through_a_symbolic_link_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("thing = 1\n")
    root = _package(tmp_path / "code", _user="from .linked import *\n\nx = thing\n")
    (root / "pkg" / "linked.py").symlink_to(outside)

    assert _explicit(root, "pkg/_user.py")[1] == []
