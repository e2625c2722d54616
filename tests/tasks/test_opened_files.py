"""SIM115: a file the code closes by hand, in a ``finally:`` or after the statements that use
it, is opened in a ``with`` statement; one that may escape or be left open early stays."""

from __future__ import annotations

from pathlib import Path

import pytest
from tasks.ruff_json import ruff_json

from structured_agents.tasks.lint_fixes import apply_changes, fixes
from structured_agents.tasks.lint_rewrites import with_candidates

DEFUSEDXML = (
    "def parse(file, builder):\n"
    "    if isinstance(file, str):\n"
    "        fp = open(file, 'rb')\n"
    "        try:\n"
    "            result = builder.parseFile(fp)\n"
    "        finally:\n"
    "            fp.close()\n"
    "    else:\n"
    "        result = builder.parseFile(file)\n"
    "    return result\n"
)
PLY = (
    "import sys\n\n\ndef runmain(data=None):\n"
    "\tif not data:\n"
    "\t\ttry:\n"
    "\t\t\tfilename = sys.argv[1]\n"
    "\t\t\tf = open(filename)\n"
    "\t\t\tdata = f.read()\n"
    "\n"
    "\t\t\tprint(len(data),\n"
    "\t\t\t      file=sys.stderr)\n"
    "\t\t\tf.close()\n"
    "\t\texcept IndexError:\n"
    "\t\t\tdata = sys.stdin.read()\n"
    "\treturn data\n"
)


def _with(root: Path, text: str) -> tuple[str, int]:
    found, left = with_candidates(text, ruff_json(root, "m.py", text, "SIM115"), "m.py")
    return apply_changes(text, fixes(text, found))[0], len(left)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            DEFUSEDXML,
            DEFUSEDXML.replace(
                "fp = open(file, 'rb')\n        try:\n", "with open(file, 'rb') as fp:\n"
            ).replace("        finally:\n            fp.close()\n", ""),
        ),
        (
            PLY,
            PLY.replace("\t\t\tf = open(filename)\n", "\t\t\twith open(filename) as f:\n")
            .replace("\t\t\tdata = f.read()", "\t\t\t\tdata = f.read()")
            .replace("\t\t\tprint(len(data),\n", "\t\t\t\tprint(len(data),\n")
            .replace("\t\t\t      file", "\t\t\t\t      file")
            .replace("\t\t\tf.close()\n", ""),
        ),
    ],
)
def test_a_file_closed_by_hand_is_opened_with_with(tmp_path: Path, text: str, expected: str) -> None:
    """defusedxml 0.7.1's ``expatbuilder.parse`` (a ``finally:`` closing the file) and ply
    3.11's ``runmain`` (read, then closed; tabs, whose step the new block takes)."""
    fixed, left = _with(tmp_path, text)

    assert fixed == expected and left == 0
    compile(fixed, "m.py", "exec")
    assert ruff_json(tmp_path, "m.py", fixed, "SIM115,E9,F") == []


@pytest.mark.parametrize(
    "text",
    [
        # it may escape open
        "def f(name):\n    f = open(name)\n    if not name:\n        return f\n    f.close()\n",
        # the comment would go
        "def f(name):\n    f = open(name)\n    try:\n        return f.read()\n    finally:\n"
        "        # always\n        f.close()\n",
        "def f(name):\n    f = open(name)\n    try:\n        return f.read()\n    except OSError:\n"
        "        return ''\n    finally:\n        f.close()\n",  # a handler: the block would move
        # the indent enters a string
        "def f(name):\n    f = open(name, 'w')\n    f.write('''\na\n''')\n    f.close()\n",
        "def f(name):\n    f = open(name)\n    f = f.read()\n    f.close()\n",  # rebound
        "def f(name):\n    f = open(name)\n    return f.read()\n",  # never closed
    ],
)
def test_a_file_that_may_escape_or_stay_open_is_left(tmp_path: Path, text: str) -> None:
    fixed, left = _with(tmp_path, text)

    assert fixed == text and left == 1
