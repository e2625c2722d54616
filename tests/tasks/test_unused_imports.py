"""Unused imports ruff gives no fix are removed where nothing could read them: an
``__init__.py``'s ``typing`` imports, and any import of a file whose type comments or doctest
examples use another; re-exports, probes in a ``try`` and what those comments use are left."""

from __future__ import annotations

from pathlib import Path

import pytest
from tasks.ruff_json import ruff_json

from structured_agents.tasks.lint_fixes import apply_changes, fixes
from structured_agents.tasks.lint_rewrites import with_candidates
from structured_agents.tasks.lint_settings import lint_settings
from structured_agents.tasks.lint_verdict import judge
from structured_agents.tasks.ruff import fixable_diagnostics, ruff_safe_fixes
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


UNIDIFF = (
    "import codecs\nimport sys\n\ntry:\n    import win32api\nexcept ImportError:\n    win32api = None\n"
    "from typing import Iterable, Optional, Union\n\n\ndef lines(patch):\n"
    "    # type: (str) -> Iterable[str]\n    return patch.splitlines()\n"
)
"""unidiff 0.7.5's ``patch.py``: its type comments use ``Iterable``, so ruff's F401 fix is
withheld in the file, and ``codecs``, which nothing uses, stayed with it."""


PPRINT = 'from pprint import pformat, pprint\n\n\ndef f(v):\n    """\n    >>> pprint(f(1))\n    1\n    """\n'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            UNIDIFF,
            UNIDIFF.replace("import codecs\nimport sys\n", "").replace(
                "Iterable, Optional, Union", "Iterable"
            ),
        ),
        (PPRINT, PPRINT.replace("pformat, ", "")),  # the doctest example's name stays
    ],
)
def test_where_type_comments_or_doctests_withhold_ruffs_fix_the_other_unused_imports_go(
    tmp_path: Path, text: str, expected: str
) -> None:
    options = lint_settings(tmp_path).file_options(tmp_path, "m.py", text)
    found = ruff_json(tmp_path, "m.py", text, "F401", *options)
    assert found and not any(item.get("fix") for item in found)  # ruff's own fix is withheld

    removed = apply_changes(text, fixes(text, with_candidates(text, found, "m.py")[0]))[0]

    assert removed == expected  # the probe in a ``try`` (``win32api``) is left too
    compile(removed, "m.py", "exec")


def test_a_package_init_keeps_its_other_imports_where_type_comments_use_one(tmp_path: Path) -> None:
    """A name an ``__init__.py`` imports may be a re-export, whatever its type comments say."""
    text = "from .core import helper\nfrom typing import List\n\nx = []  # type: List[int]\n"
    options = lint_settings(tmp_path).file_options(tmp_path, "pkg/__init__.py", text)
    found, left = with_candidates(
        text, ruff_json(tmp_path, "pkg/__init__.py", text, "F401", *options), "pkg/__init__.py"
    )

    assert found == [] and [item["code"] for item in left] == ["F401", "F401"]


SCREENS = '''from __future__ import annotations

import json
from typing import Dict, List, Optional


class Table(Dict[str, int]):
    """
    >>> json.dumps(Table())
    '{}'
    """


def resize(lines: Optional[int] = None) -> List[str]:
    return [str(lines)]
'''
"""pyte 0.8.2's ``screens.py``, whose doctests use ``json``: ruff's removal of unused imports
is withheld in the file, so the ``List`` and ``Optional`` its UP006 and UP045 fixes stop using
were left imported."""


def test_the_typing_imports_a_change_leaves_unused_go_where_ruffs_removal_is_withheld(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nrequires-python = ">=3.8"\n[tool.ruff.lint]\nselect = ["F401", "UP006", "UP045"]\n'
    )
    (tmp_path / "m.py").write_text(SCREENS)
    settings = lint_settings(tmp_path)
    options = settings.file_options(tmp_path, "m.py", SCREENS)
    by_ruff = ruff_safe_fixes(tmp_path, "m.py", SCREENS, *options)
    offered = with_candidates(by_ruff, fixable_diagnostics(tmp_path, "m.py", by_ruff, *options), "m.py")[0]
    assert sorted(item["code"] for item in offered) == ["UP006", "UP045"]

    verdict = judge(tmp_path, "m.py", SCREENS, by_ruff, fixes(by_ruff, offered), None, settings)

    assert len(verdict.kept) == 2 and verdict.left == ["F401"]  # json, which the doctest reads
    assert "from typing import Dict\n" in verdict.text  # Dict is still a base class
    assert "def resize(lines: int | None = None) -> list[str]:" in verdict.text
    assert "import json\n" in verdict.text  # the doctest's import stays


DPATH = """from __future__ import annotations

from typing import Optional, Union

from .core import helper


def get(path: Union[str, int], separator: Optional[str] = "/") -> None:
    return helper(path, separator)
"""
"""dpath 2.2.0's ``__init__.py``: ruff removes no unused import in a package's ``__init__.py``
(a name there may be a re-export), so ``Union`` stayed imported once UP007 had rewritten its
last use, and UP045's fix was dropped for leaving ``Optional`` unused (a reviewer's EDIT)."""


def test_a_package_init_loses_the_typing_imports_a_change_leaves_unused(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nrequires-python = ">=3.8"\n[tool.ruff.lint]\nselect = ["F401", "UP007", "UP045"]\n'
    )
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(DPATH)
    settings = lint_settings(tmp_path)
    path = "pkg/__init__.py"
    options = settings.file_options(tmp_path, path, DPATH)
    by_ruff = ruff_safe_fixes(tmp_path, path, DPATH, *options)
    offered = with_candidates(by_ruff, fixable_diagnostics(tmp_path, path, by_ruff, *options), path)[0]
    assert sorted(item["code"] for item in offered) == ["UP007", "UP045"]

    verdict = judge(tmp_path, path, DPATH, by_ruff, fixes(by_ruff, offered), None, settings)

    assert len(verdict.kept) == 2 and verdict.left == []
    assert "typing" not in verdict.text and "from .core import helper\n" in verdict.text  # a re-export stays
    assert 'def get(path: str | int, separator: str | None = "/") -> None:' in verdict.text


DEFUSEDXML = (
    "import warnings\n\nfrom xml.etree.cElementTree import parse as _parse\n"
    "from xml.etree.cElementTree import tostring\n\n"
    "from .ElementTree import (\n    XML,\n    XMLParser,\n    fromstring,\n"
    "    tostring,\n    DefusedXMLParser,\n)\n\n"
    "warnings.warn('deprecated', DeprecationWarning, stacklevel=2)\n"
    "XMLParser = DefusedXMLParser\n"
    "fromstring = _parse\nXML = fromstring\n__all__ = ['XML', 'XMLParser', 'fromstring', 'tostring']\n"
)


def test_imported_names_bound_again_before_use_are_removed(tmp_path: Path) -> None:
    """defusedxml 0.7.1's ``cElementTree.py``: ``tostring`` imported twice, and ``XML``,
    ``XMLParser``, ``fromstring`` imported then bound again before anything reads them (F811,
    which ruff does not fix)."""
    found, left = with_candidates(DEFUSEDXML, ruff_json(tmp_path, "pkg/c.py", DEFUSEDXML, "F811"), "pkg/c.py")
    fixed = apply_changes(DEFUSEDXML, fixes(DEFUSEDXML, found))[0]

    assert left == [] and len(found) == 4
    assert "from xml.etree.cElementTree import tostring\n" not in fixed
    assert "from .ElementTree import (\n    tostring,\n    DefusedXMLParser,\n)\n" in fixed
    assert ruff_json(tmp_path, "pkg/c.py", fixed, "F811,F401") == []
    compile(fixed, "c.py", "exec")


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("m.py", "from a import x\nfor x in range(3):\n    pass\nprint(x)\n"),  # the loop may not run
        ("m.py", "from a import x\nif True:\n    x = 1\n"),  # not the import's block
        ("m.py", "from a import x\nwith open('f') as x:\n    pass\n"),
        ("m.py", "from a import (\n    x,  # the old name\n    y,\n)\nx = y\n"),  # a comment among the names
        ("pkg/__init__.py", "from .core import x\nx = 1\n"),  # importing the submodule re-exports it
        ("m.py", "def x():\n    pass\n\n\ndef x():\n    pass\n"),  # not an import: which to keep is a choice
    ],
)
def test_a_binding_that_may_not_run_or_a_statement_that_must_stay_is_left(
    tmp_path: Path, path: str, text: str
) -> None:
    found, _ = with_candidates(text, ruff_json(tmp_path, path, text, "F811"), path)

    assert found == []


def test_an_init_keeps_the_import_of_a_module_it_imports_once(tmp_path: Path) -> None:
    """In an ``__init__.py`` a statement whose every name is bound again goes only where the
    same module is imported again; a name among others goes."""
    text = "from .core import x, y\nfrom .core import z\nx = 1\n\n__all__ = ['x', 'y', 'z']\n"
    found, _ = with_candidates(text, ruff_json(tmp_path, "pkg/__init__.py", text, "F811"), "pkg/__init__.py")

    assert apply_changes(text, fixes(text, found))[0] == text.replace("import x, y", "import y")
