"""Where an unpacked package keeps its own code, and whether it configures ruff.

The *package files* are the library's modules: the import packages (folders with an
``__init__.py``) at the project root or under ``src/``, or, for a project without any, its
top-level modules; tests, docs, examples and build scripts (``setup.py``, ``conftest.py``...)
are left out. The evaluation writes docstrings and lint fixes only there; the tests run
against them.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from structured_agents.jobs import iter_source_files
from structured_agents.tasks.ruff_config import ruff_config_file

__all__ = ["has_ruff_config", "indents_with_tabs", "is_test_file", "package_files", "source_root"]

_NOT_LIBRARY = frozenset({"tests", "test", "testing", "docs", "doc", "examples", "example", "benchmarks"})
_BUILD_SCRIPTS = frozenset({"setup.py", "conftest.py", "noxfile.py", "fabfile.py", "versioneer.py"})


def source_root(root: Path) -> Path:
    """The folder the package imports from: ``root/src`` when there is one, else ``root``."""
    src = root / "src"
    return src if src.is_dir() else root


def is_test_file(path: PurePosixPath) -> bool:
    """A test module or a file of a test folder (``tests.py`` too: webencodings keeps its tests
    in ``webencodings/tests.py``, inside the package)."""
    name = path.name
    return (
        bool(_NOT_LIBRARY & set(path.parts[:-1]))
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name in ("conftest.py", "tests.py")
    )


def package_files(root: Path) -> list[str]:
    """The library's Python files, relative to ``root`` (POSIX paths, sorted)."""
    base = source_root(root).relative_to(root)
    packages: list[str] = []
    modules: list[str] = []
    for relative in iter_source_files(root):
        path = PurePosixPath(relative.as_posix())
        try:
            inside = path.relative_to(base.as_posix()) if base.parts else path
        except ValueError:
            continue
        if is_test_file(inside):
            continue
        if len(inside.parts) == 1:
            if inside.name not in _BUILD_SCRIPTS:
                modules.append(path.as_posix())
        elif (source_root(root) / inside.parts[0] / "__init__.py").is_file():
            packages.append(path.as_posix())
    return sorted(packages or modules)


def has_ruff_config(root: Path) -> bool:
    """Whether the project configures ruff (``ruff.toml``, ``.ruff.toml``, ``[tool.ruff]``)."""
    return ruff_config_file(root) is not None


def indents_with_tabs(root: Path) -> bool:
    """Whether the library indents with tabs: more of its indented lines start with a tab than
    with a space (pathspec's style), so pycodestyle's W191 counts a choice, not a fault."""
    tabs = spaces = 0
    for relative in package_files(root):
        text = (root / relative).read_text(encoding="utf-8", errors="replace")
        for line in text.splitlines():
            tabs += line.startswith("\t")
            spaces += line.startswith(" ") and bool(line.strip())
    return tabs > spaces
