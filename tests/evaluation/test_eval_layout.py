"""Which files are the library's, whether a project configures ruff, and how it indents."""

from __future__ import annotations

from pathlib import Path

from structured_agents.evaluation.layout import has_ruff_config, indents_with_tabs, package_files, source_root


def _tree(root: Path, files: list[str]) -> Path:
    for relative in files:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text("")
    return root


def test_a_src_layout_gives_its_packages_without_tests(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        [
            "setup.py",
            "src/pkg/__init__.py",
            "src/pkg/core.py",
            "src/pkg/tests/test_core.py",
            "tests/test_x.py",
        ],
    )
    assert source_root(root) == root / "src"
    assert package_files(root) == ["src/pkg/__init__.py", "src/pkg/core.py"]


def test_a_flat_layout_leaves_out_docs_tests_and_build_scripts(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        [
            "setup.py",
            "conftest.py",
            "test_pkg.py",
            "benchmark.py",
            "docs/conf.py",
            "pkg/__init__.py",
            "pkg/util.py",
            "pkg/conftest.py",
            "pkg/tests.py",
            "notapackage/helper.py",
        ],
    )
    assert source_root(root) == root
    assert package_files(root) == ["pkg/__init__.py", "pkg/util.py"]


def test_a_project_without_packages_gives_its_top_level_modules(tmp_path: Path) -> None:
    root = _tree(tmp_path, ["setup.py", "six.py", "test_six.py", "docs/conf.py"])
    assert package_files(root) == ["six.py"]


def test_ruff_config_is_a_ruff_toml_or_a_tool_ruff_table(tmp_path: Path) -> None:
    assert not has_ruff_config(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.black]\n')
    assert not has_ruff_config(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.ruff.lint]\nselect = ['E']\n")
    assert has_ruff_config(tmp_path)
    (tmp_path / "pyproject.toml").write_text("not toml [")
    assert not has_ruff_config(tmp_path)
    (tmp_path / ".ruff.toml").write_text("")
    assert has_ruff_config(tmp_path)


def test_a_library_indented_with_tabs_is_told_from_one_with_spaces(tmp_path: Path) -> None:
    root = _tree(tmp_path, ["pkg/__init__.py", "pkg/core.py", "tests/test_core.py"])
    (root / "pkg/core.py").write_text("def f(x):\n\tif x:\n\t\treturn 1\n\treturn 2\n")
    (root / "tests/test_core.py").write_text("def test():\n    a = 1\n    b = 2\n    c = 3\n    d = 4\n")
    assert indents_with_tabs(root)  # the tests are not the library
    spaces = '"""Doc\n    an indented docstring line\n"""\nclass A:\n    x = 1\n    y = 2\n'
    (root / "pkg/__init__.py").write_text(spaces)
    assert not indents_with_tabs(root)
