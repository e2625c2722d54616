"""The names a codebase's other modules import from one of its modules, read from their files;
a module importing one of them keeps its unused imports (webob 1.8.11's ``compat.py``)."""

from __future__ import annotations

from pathlib import Path

from structured_agents.tasks.imported_from import imported_names
from structured_agents.tasks.lint_settings import lint_settings
from structured_agents.tasks.ruff import ruff_safe_fixes

COMPAT = "from os.path import exists, join\nfrom urllib.parse import quote\n\nPY2 = False\n"


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_names_imported_relatively_absolutely_and_from_src_are_read(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "src/pkg/__init__.py": "from .compat import PY2\n",
            "src/pkg/compat.py": COMPAT,
            "src/pkg/sub/core.py": "from ..compat import join\nfrom . import helpers\n",
            "tests/test_x.py": "from pkg.compat import exists\nfrom pkg import compat\n",
            "other.py": "from compat import quote\n",  # another module named compat: not this one
        },
    )

    assert imported_names(tmp_path, "src/pkg/compat.py") == {"PY2", "join", "exists"}
    assert imported_names(tmp_path, "src/pkg/__init__.py") == {"compat"}
    assert imported_names(tmp_path, "src/pkg/sub/__init__.py") == {"helpers"}


def test_a_link_or_a_hidden_folder_is_not_read(tmp_path: Path) -> None:
    _tree(tmp_path, {"pkg/compat.py": COMPAT, ".tox/x/pkg/use.py": "from pkg.compat import join\n"})
    outside = tmp_path.parent / f"{tmp_path.name}-outside.py"
    outside.write_text("from pkg.compat import exists\n")
    (tmp_path / "linked.py").symlink_to(outside)

    assert imported_names(tmp_path, "pkg/compat.py") == frozenset()


def test_a_module_whose_imports_others_import_keeps_its_unused_imports(tmp_path: Path) -> None:
    """webob 1.8.11: ruff's F401 fix removed ``compat.py``'s re-exports and 20 test modules
    failed to import; a module nothing imports from loses them as before."""
    _tree(tmp_path, {"pkg/compat.py": COMPAT, "pkg/core.py": "from .compat import join\n"})
    (tmp_path / "ruff.toml").write_text('[lint]\nselect = ["F401"]\n')
    settings = lint_settings(tmp_path)

    kept = ruff_safe_fixes(
        tmp_path, "pkg/compat.py", COMPAT, *settings.file_options(tmp_path, "pkg/compat.py", COMPAT)
    )
    alone = ruff_safe_fixes(
        tmp_path, "pkg/alone.py", COMPAT, *settings.file_options(tmp_path, "pkg/alone.py", COMPAT)
    )

    assert kept == COMPAT
    assert alone == "\nPY2 = False\n"
    used = COMPAT + "print(join)\n"  # the name others import is used here: the unused ones go
    fixed = ruff_safe_fixes(
        tmp_path, "pkg/compat.py", used, *settings.file_options(tmp_path, "pkg/compat.py", used)
    )
    assert fixed == "from os.path import join\n\nPY2 = False\nprint(join)\n"
