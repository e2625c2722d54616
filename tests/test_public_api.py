"""The public API: a sorted export list that imports, without heavy or GPU-only modules."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import structured_agents


def test_all_is_sorted_unique_and_importable() -> None:
    names = structured_agents.__all__
    assert names == sorted(names)
    assert len(names) == len(set(names))
    for name in names:
        assert getattr(structured_agents, name) is not None, name


def test_every_error_derives_from_the_root() -> None:
    errors = [
        getattr(structured_agents, n) for n in structured_agents.__all__ if n.endswith(("Error", "Exceeded"))
    ]
    assert errors
    for error in errors:
        assert issubclass(error, structured_agents.StructuredAgentsError), error


def test_importing_the_kernel_loads_no_engine() -> None:
    code = (
        "import sys, structured_agents.kernel;"
        "print(sorted(m for m in sys.modules if m.startswith('structured_agents.engines')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_import_does_not_load_vllm_torch_or_xgrammar() -> None:
    code = (
        "import sys, structured_agents, structured_agents.plugins.function_gemma, "
        "structured_agents.plugins.qwen, structured_agents.kernel;"
        "print(sorted(m for m in ('vllm', 'torch', 'xgrammar', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_error_tree_names_every_error_of_the_package() -> None:
    """Errors live beside their code (one ``errors.py`` per package that raises its own) under
    the one root; ``structured_agents/errors.py`` draws the whole tree, and stays complete."""
    package = Path(structured_agents.__file__).parent
    tree = (package / "errors.py").read_text()
    defined = {
        node.name
        for path in package.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
        and node.name.endswith(("Error", "Exceeded"))
        and not node.name.startswith("_")
    }
    missing = sorted(name for name in defined if name not in tree)
    assert missing == [], missing
