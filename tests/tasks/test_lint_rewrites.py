"""Candidates for findings ruff has no fix for: each on real ruff output, applied, compiled and
checked again by ruff (the finding is gone, nothing else appears)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from structured_agents.tasks.lint_fixes import apply_changes, fixes
from structured_agents.tasks.lint_rewrites import CANDIDATE_RULES, with_candidates


def _diagnostics(root: Path, path: str, text: str, rules: str) -> list[dict[str, object]]:
    command = [sys.executable, "-m", "ruff", "check", "--isolated", "--select", rules, "--no-cache"]
    command += ["--output-format", "json", "--exit-zero", "--stdin-filename", str(root / path), "-"]
    done = subprocess.run(command, input=text, capture_output=True, text=True, check=True)
    found: list[dict[str, object]] = json.loads(done.stdout)
    return found


RAISES = "def f(d):\n    try:\n        return d['k']\n    except KeyError as e:\n        raise ValueError(e)"
RAISES_ANY = (
    RAISES.replace("'k'", "'é'")
    .replace("KeyError as e:", "(KeyError, IndexError):")
    .replace("ValueError(e)", "ValueError('é')")
)
BOUND = RAISES_ANY.replace("IndexError):", "IndexError) as err:")
LOOP = (
    "def f(lines):\n    out = []\n    for line in lines:\n        line = line.strip()\n"
    "        if line:\n            out.append(line)\n    return out\n"
)
CLASS = '"""Doc."""\n\nimport os\n\n\nclass A:\n    NAMES = ["x"]\n    path = os.sep\n'
ANNOTATED = CLASS.replace("import os\n", "import os\nfrom typing import ClassVar\n").replace(
    "NAMES =", "NAMES: ClassVar[list] ="
)


@pytest.mark.parametrize(
    ("path", "rule", "text", "expected"),
    [
        (
            "m.py",
            "E722",
            "def f(job):\n    try:\n        job()\n    except:  # noisy\n        pass\n",
            ["def f(job):\n    try:\n        job()\n    except Exception:  # noisy\n        pass\n"],
        ),
        ("m.py", "B904", RAISES + "\n", [RAISES + " from e\n", RAISES + " from None\n"]),
        ("m.py", "B904", RAISES_ANY + "\n", [BOUND + " from err\n", RAISES_ANY + " from None\n"]),
        (
            "pkg/__init__.py",
            "F401",
            '"""Pkg."""\n\nfrom pkg.core import Thing, helper\n',
            [
                '"""Pkg."""\n\nfrom pkg.core import Thing as Thing, helper\n',
                '"""Pkg."""\n\nfrom pkg.core import Thing, helper as helper\n',
            ],
        ),
        ("m.py", "RUF012", CLASS, [ANNOTATED]),
        (
            "m.py",
            "PLW2901",
            LOOP,
            [
                LOOP.replace("line = line.strip()", "new_line = line.strip()")
                .replace("if line:", "if new_line:")
                .replace("append(line)", "append(new_line)")
            ],
        ),
        ("m.py", "RUF001", 'DASH = "a–b"  # en dash\n', ['DASH = "a\\u2013b"  # en dash\n']),
    ],
)
def test_each_candidate_clears_its_finding_and_compiles(
    tmp_path: Path, path: str, rule: str, text: str, expected: list[str]
) -> None:
    found, left = with_candidates(text, _diagnostics(tmp_path, path, text, rule), path)

    candidates = [apply_changes(text, [change])[0] for change in fixes(text, found)]

    assert candidates == expected and left == []
    for candidate in candidates:
        compile(candidate, path, "exec")
        assert len(_diagnostics(tmp_path, path, candidate, rule)) < len(
            _diagnostics(tmp_path, path, text, rule)
        )


def test_a_rule_without_candidates_is_left_not_rewritten(tmp_path: Path) -> None:
    text = "def f(x):\n    if x > 42:\n        return 1\n    return 0\n"
    diagnostics = _diagnostics(tmp_path, "m.py", text, "PLR2004")

    found, left = with_candidates(text, diagnostics, "m.py")

    assert "PLR2004" not in CANDIDATE_RULES
    assert found == [] and [item["code"] for item in left] == ["PLR2004"]


@pytest.mark.parametrize(
    "after",
    [
        "    return line\n",  # the loop variable read after the loop
        "    else:\n        print(line)\n",  # or in its else
    ],
)
def test_a_rebound_loop_variable_something_else_could_see_gets_no_new_name(
    tmp_path: Path, after: str
) -> None:
    text = LOOP.replace("    return out\n", after)
    found, left = with_candidates(text, _diagnostics(tmp_path, "m.py", text, "PLW2901"), "m.py")

    assert found == [] and [item["code"] for item in left] == ["PLW2901"]


def test_an_ambiguous_character_in_a_raw_string_or_a_comment_gets_none(tmp_path: Path) -> None:
    text = 'RAW = r"a–b"\nB = "x"  # a–b\n'
    diagnostics = _diagnostics(tmp_path, "m.py", text, "RUF001,RUF003")

    found, left = with_candidates(text, diagnostics, "m.py")

    assert found == [] and sorted(item["code"] for item in left) == ["RUF001", "RUF003"]


def test_an_unused_import_outside_an_init_and_a_text_that_does_not_parse_get_none(tmp_path: Path) -> None:
    broken = "def f(:\n    try:\n        pass\n    except:\n        pass\n"
    bare = [{"code": "E722", "message": "Do not use bare `except`", "location": {"row": 4, "column": 5}}]

    assert with_candidates(broken, bare, "m.py")[0] == []
    unused = [{"code": "F401", "message": "`os` imported but unused", "location": {"row": 1, "column": 8}}]
    assert with_candidates("import os\n", unused, "m.py") == ([], unused)
