"""Unused ``typing`` imports of an ``__init__.py`` are removed (ruff offers no fix there);
re-exports and other files' imports are not touched by this candidate."""

from __future__ import annotations

from pathlib import Path

import pytest
from tasks.ruff_json import ruff_json

from structured_agents.tasks.lint_fixes import apply_changes, fixes
from structured_agents.tasks.lint_rewrites import with_candidates
from structured_agents.tasks.lint_settings import lint_settings
from structured_agents.tasks.ruff import ruff_safe_fixes
from structured_agents.tasks.type_comments import type_comment_names

INICONFIG = (
    "from typing import (\n    Callable,\n    NamedTuple,\n    Optional,\n    TypeVar,\n)\n\n"
    "from .parse import iscommentline\n\n__all__ = ['f', 'iscommentline']\n"
    "T = TypeVar('T')\n\n\ndef f(g: Callable[[], T]) -> T:\n    return g()\n"
)


def _removed(root: Path, path: str, text: str) -> str:
    found, _ = with_candidates(text, ruff_json(root, path, text, "F401"), path)
    return apply_changes(text, fixes(text, found))[0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (INICONFIG, INICONFIG.replace("    NamedTuple,\n    Optional,\n", "")),
        ("from typing import Any, Optional\n\nx: Any = 1\n", "from typing import Any\n\nx: Any = 1\n"),
        ("import os\nfrom typing import Optional, cast\n\nx = os.sep\n", "import os\n\nx = os.sep\n"),
        (
            "from collections.abc import Mapping\nfrom typing_extensions import Final\n\nx = 1\n",
            "\nx = 1\n",
        ),
    ],
)
def test_unused_typing_names_of_an_init_are_removed(tmp_path: Path, text: str, expected: str) -> None:
    removed = _removed(tmp_path, "pkg/__init__.py", text)

    assert removed == expected
    compile(removed, "__init__.py", "exec")
    assert ruff_json(tmp_path, "pkg/__init__.py", removed, "F401") == []


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("pkg/__init__.py", "from .core import helper\nfrom os import sep\n\n__all__: list[str] = []\n"),
        ("pkg/__init__.py", "from typing import (\n    Optional,  # kept for users\n    Any,\n)\n"),
    ],
)
def test_re_exports_and_commented_imports_are_left(tmp_path: Path, path: str, text: str) -> None:
    found, left = with_candidates(text, ruff_json(tmp_path, path, text, "F401"), path)

    assert found == [] and left


UNIDECODE = (
    '"""Transliterate."""\nimport warnings\nfrom typing import Dict, Optional, Sequence\n\n'
    "Cache = {}  # type: Dict[int, Optional[Sequence[Optional[str]]]]\n\n\n"
    "def unidecode(string: str, errors: Optional[str] = None) -> str:\n    return string\n"
)


def test_a_name_a_type_comment_uses_is_not_removed(tmp_path: Path) -> None:
    """unidecode 1.3.8's ``__init__.py``: ``Dict`` and ``Sequence`` are used only by a type
    comment, which ruff does not read; their removal made mypy fail on the package."""
    assert _removed(tmp_path, "pkg/__init__.py", UNIDECODE) == UNIDECODE
    mixed = UNIDECODE.replace("Dict, Optional, Sequence", "Any, Dict, Optional, Sequence")
    assert _removed(tmp_path, "pkg/__init__.py", mixed) == UNIDECODE  # ``Any`` goes, the rest stay


@pytest.mark.parametrize(
    ("text", "unfixable"),
    [
        (UNIDECODE, True),
        (
            "import os\nfrom typing import List\n\n\ndef f(a):\n    # type: (List[int]) -> None\n    pass\n",
            True,
        ),
        ("import os\n\nx = []  # type: ignore[var-annotated]\n", False),
        ("import os\n\nx = []  # type: list[int]\n", False),  # a type comment naming no import
    ],
)
def test_ruff_removes_no_import_in_a_file_whose_type_comments_use_one(
    tmp_path: Path, text: str, unfixable: bool
) -> None:
    """Ruff's own F401 fix (safe outside an ``__init__.py``) removes ``List`` from a file whose
    ``# type: (List[int]) -> None`` needs it: in such a file F401 is left unfixed."""
    settings = lint_settings(tmp_path)
    options = settings.file_options(tmp_path, "m.py", text)
    fixed = ruff_safe_fixes(tmp_path, "m.py", text, "--select", "F401", *options)

    assert (fixed == text) is unfixable  # else ``import os`` went
    assert ("List" in type_comment_names(text)) is ("List" in text)


@pytest.mark.parametrize(
    ("text", "unfixable"),
    [
        (
            'from pprint import pprint\n\n\ndef f(v):\n    """\n    >>> pprint(f(1))\n    1\n    """\n',
            True,
        ),
        (
            'import json\n\n\ndef check(v):\n    """\n    >>> x = [\n    ...     json.dumps(v)]\n    """\n',
            True,
        ),
        ('from pprint import pprint\n\n\ndef check(v):\n    """pprint(v) is not an example."""\n', False),
    ],
)
def test_ruff_removes_no_import_in_a_file_whose_doctest_examples_use_one(
    tmp_path: Path, text: str, unfixable: bool
) -> None:
    """configobj 5.0.9's ``validate.py`` imports ``pprint`` only for ``>>> pprint(...)`` in a
    docstring: with the import removed, its doctests failed."""
    options = lint_settings(tmp_path).file_options(tmp_path, "m.py", text)
    fixed = ruff_safe_fixes(tmp_path, "m.py", text, "--select", "F401", *options)

    assert (fixed == text) is unfixable
