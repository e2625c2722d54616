"""An import inside a function that repeats the module's own top-level import (PLC0415)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tasks.ruff_json import ruff_json

from structured_agents.tasks.lint_fixes import apply_changes, fixes
from structured_agents.tasks.lint_rewrites import with_candidates

MAIN = '''"""A table printer."""
import io
import textwrap
from os import path as op


def _main():
    """Usage: table [FILE]."""
    import getopt
    import textwrap
    from os import path as op  # again

    return getopt, textwrap.dedent(io.__name__), op
'''


def _candidates(root: Path, text: str) -> tuple[list[str], list[int]]:
    found, left = with_candidates(text, ruff_json(root, "m.py", text, "PLC0415"), "m.py")
    results = [apply_changes(text, [change])[0] for change in fixes(text, found)]
    return results, [int(item["location"]["row"]) for item in left]  # type: ignore[index]


def test_an_import_the_module_ran_at_its_top_is_removed_and_a_lazy_one_stays(tmp_path: Path) -> None:
    """tabulate 0.9.0's ``_main`` repeats ``import textwrap``; its ``import getopt`` is lazy on
    purpose (only the command line needs it)."""
    results, left = _candidates(tmp_path, MAIN)

    assert results == [
        MAIN.replace("    import textwrap\n", "", 1),
        MAIN.replace("    from os import path as op  # again\n", ""),
    ]
    assert results[0].count("import textwrap") == 1 and "    import getopt\n" in results[0]
    assert left == [9]  # getopt
    for result in results:
        compile(result, "m.py", "exec")
        assert len(ruff_json(tmp_path, "m.py", result, "PLC0415")) == 2


TOP = "import json\n\n\n"
INNER = "    import json\n"
BACK = "    return json\n"


@pytest.mark.parametrize(
    ("why", "text"),
    [
        ("another form", "import os.path\n\n\ndef f():\n    import os\n    return os\n"),
        ("an alias", TOP + "def f():\n    import json as j\n    return j\n"),
        ("under an if", "import sys\nif sys:\n    import json\n\n\ndef f():\n" + INNER + BACK),
        ("after the def", "def f():\n" + INNER + BACK + "\n\nimport json\n"),
        ("rebound at the top", TOP + "def f():\n" + INNER + BACK + "\n\njson = None\n"),
        ("assigned in the function", TOP + "def f():\n" + INNER + "    json = json.loads\n" + BACK),
        ("a parameter", TOP + "def f(json=None):\n" + INNER + BACK),
        ("a loop target", TOP + "def f(xs):\n" + INNER + "    for json in xs:\n        pass\n"),
        ("declared global", TOP + "def f():\n    global json\n" + INNER + BACK),
        ("the block's only statement", TOP + "def f():\n" + INNER),
        ("shares its line", TOP + "def f():\n    import json; return json\n"),
        ("another name too", TOP + "def f():\n    import json, re\n    return json, re\n"),
        (
            "bound by an enclosing function",
            TOP + "def f():\n    json = 1\n\n    def g():\n    " + INNER + "    " + BACK + "    return g\n",
        ),
        (
            "rebound by a global elsewhere",
            TOP + "def f():\n" + INNER + BACK + "\n\ndef g(x):\n    global json\n    json = x\n",
        ),
    ],
)
def test_an_import_that_might_bind_another_object_stays(tmp_path: Path, why: str, text: str) -> None:
    results, left = _candidates(tmp_path, text)

    assert results == [], why
    assert left, why


def test_a_nested_functions_binding_does_not_count_but_its_own_import_is_the_functions(
    tmp_path: Path,
) -> None:
    text = (
        "import json\n\n\ndef f():\n    import json\n\n    def g(json):\n        return json\n\n"
        "    return g(json.dumps(1))\n"
    )

    results, left = _candidates(tmp_path, text)

    assert results == [text.replace("    import json\n", "", 1)] and left == []
    compile(results[0], "m.py", "exec")
