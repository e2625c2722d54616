"""A package's own names imported by an ``__init__.py`` without an ``__all__`` (F401, which
ruff does not fix there) are declared in one; foreign imports, private names and modules whose
namespace is declared or computed are left (real ruff)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tasks.ruff_json import ruff_json

from structured_agents.tasks.lint_fixes import apply_changes, fixes
from structured_agents.tasks.lint_rewrites import with_candidates

COLORAMA = (
    "# Copyright Jonathan Hartley 2013. BSD 3-Clause license, see LICENSE file.\n"
    "from .initialise import init, deinit, reinit, colorama_text, just_fix_windows_console\n"
    "from .ansi import Fore, Back, Style, Cursor\n"
    "from .ansitowin32 import AnsiToWin32\n"
    "\n"
    "__version__ = '0.4.6'\n"
)
DECLARED = (
    "\n__all__ = [\n    'AnsiToWin32',\n    'Back',\n    'Cursor',\n    'Fore',\n    'Style',\n"
    "    'colorama_text',\n    'deinit',\n    'init',\n    'just_fix_windows_console',\n    'reinit',\n]\n"
)
MIXED = (
    '"""A package."""\n'
    "import os\n"
    "from pkg.core import Reader as Reader2, helper\n"
    "from . import plugins\n"
    "from ._impl import _private\n\n"
    "MAX_SIZE = 10\n"
    "VERSION2 = 2\n"
    "VERSION10 = 10\n"
    "_cache = {}\n\n\n"
    "def load(name):\n    return os.path.join(name, helper.SEP)\n\n\n"
    "class Loader:\n    pass\n"
)


def _changed(root: Path, path: str, text: str) -> tuple[str, int]:
    found, _ = with_candidates(text, ruff_json(root, path, text, "F401"), path)
    return apply_changes(text, fixes(text, found))[0], len(found)


def test_colorama_declares_its_ten_re_exports(tmp_path: Path) -> None:
    changed, findings = _changed(tmp_path, "colorama/__init__.py", COLORAMA)

    assert findings == 10
    assert changed == COLORAMA.replace("AnsiToWin32\n", "AnsiToWin32\n" + DECLARED)
    compile(changed, "__init__.py", "exec")
    assert ruff_json(tmp_path, "colorama/__init__.py", changed, "F401,RUF022") == []


def test_every_public_name_the_module_binds_is_declared_and_nothing_foreign(tmp_path: Path) -> None:
    changed, findings = _changed(tmp_path, "pkg/__init__.py", MIXED)

    assert findings == 1  # Reader2: helper is used, os foreign, plugins a submodule, _private private
    declared = changed.split("__all__ = [\n")[1].split("]")[0].split()
    assert declared == [
        '"MAX_SIZE",',
        '"VERSION2",',
        '"VERSION10",',
        '"Loader",',
        '"Reader2",',
        '"helper",',
        '"load",',
    ]
    assert changed.startswith(MIXED.split("\n\nMAX_SIZE")[0] + "\n\n__all__ = [\n")  # after the imports
    left = ruff_json(tmp_path, "pkg/__init__.py", changed, "F401,RUF022")
    assert [str(finding["message"]).split(" imported")[0] for finding in left] == [
        "`.plugins`",
        "`._impl._private`",
    ]


def test_a_short_list_is_one_line_and_a_long_one_takes_the_modules_indentation(tmp_path: Path) -> None:
    short = "from .core import Reader\n\n\ndef read():\n\treturn 1\n"
    changed, _ = _changed(tmp_path, "pkg/__init__.py", short)
    assert changed == short.replace("Reader\n\n", 'Reader\n\n__all__ = ["Reader", "read"]\n\n', 1)
    long = "from .extra import a_rather_long_name\n" + short.replace(
        "Reader", "ReaderOfVeryLongNamesThatGoOnAndOnAndOn"
    )
    changed, findings = _changed(tmp_path, "pkg/__init__.py", long)
    listed = '\t"ReaderOfVeryLongNamesThatGoOnAndOnAndOn",\n\t"a_rather_long_name",\n\t"read",\n'
    assert findings == 2 and f"\n\n__all__ = [\n{listed}]\n\n\ndef read" in changed


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("pkg/__init__.py", "from .core import helper\n\n__all__ = ['other']\n"),  # declared on purpose
        ("pkg/__init__.py", "from .core import helper\n\n\ndef __getattr__(name):\n    return name\n"),
        ("pkg/__init__.py", "from ._core import _helper\n"),  # a private name
        ("pkg/__init__.py", "from other.core import helper\n"),  # another package's
        ("pkg/__init__.py", "x = 1\nfrom .core import helper\n"),  # no imports at the top to follow
        ("pkg/__init__.py", "from . import gitwildmatch\n"),  # a submodule, for its side effects
        (  # xlrd 2.0.1: what the star binds would be left out of the __all__ (61 names to 25)
            "pkg/__init__.py",
            "from .book import Book\nfrom .formula import *  # is constrained by __all__\n",
        ),
        (  # pathspec 0.12.1's patterns/__init__.py
            "pkg/__init__.py",
            "# DEPRECATED: Expose the `GitWildMatchPattern` class in this module for\n"
            "# backward compatibility with v0.5.\nfrom .gitwildmatch import GitWildMatchPattern\n",
        ),
    ],
)
def test_no_candidate_where_the_namespace_is_not_the_packages_own_to_declare(
    tmp_path: Path, path: str, text: str
) -> None:
    found, left = with_candidates(text, ruff_json(tmp_path, path, text, "F401"), path)

    assert found == [] and left


def test_a_module_that_is_not_a_package_keeps_ruffs_own_fix(tmp_path: Path) -> None:
    text = "from .util import helper\n"
    found, _ = with_candidates(text, ruff_json(tmp_path, "pkg/core.py", text, "F401"), "pkg/core.py")

    assert [f["fix"]["message"] for f in found] == ["Remove unused import: `.util.helper`"]
