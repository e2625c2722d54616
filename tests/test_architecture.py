"""The layers, checked on the imports (static, from the source; no module is executed).

- nothing outside ``structured_agents/store/`` imports SQLAlchemy or Alembic;
- the kernel imports nothing from ``structured_agents.engines`` (engines implement its seam);
- the workers and the API import nothing from the embedded runner (both drive the lifecycle);
- no two modules import each other, directly or through others, at import time (imports under
  ``if TYPE_CHECKING:`` and inside functions do not run at import time and are left out);
- nor through imports under ``if TYPE_CHECKING:`` (a loop hidden there is a loop of the design),
  between modules or between sub-packages taken as wholes.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "structured_agents"


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(path): path for path in PACKAGE.rglob("*.py") if "migrations" not in path.parts}


def _top_level(body: list[ast.stmt], *, type_checking: bool = False) -> Iterator[ast.stmt]:
    """Statements that run at import time, TYPE_CHECKING blocks left out (or in, if asked)."""
    for node in body:
        if isinstance(node, ast.If):
            test = node.test
            if not type_checking and (
                (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
                or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
            ):
                yield from _top_level(node.orelse)
                continue
            yield from _top_level(node.body, type_checking=type_checking)
            yield from _top_level(node.orelse, type_checking=type_checking)
        elif isinstance(node, ast.Try):
            yield from _top_level([*node.body, *node.orelse, *node.finalbody], type_checking=type_checking)
            for handler in node.handlers:
                yield from _top_level(handler.body, type_checking=type_checking)
        else:
            yield node


def _imports(module: str, *, at_import_time: bool, type_checking: bool = False) -> set[str]:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    nodes = _top_level(tree.body, type_checking=type_checking) if at_import_time else ast.walk(tree)
    found: set[str] = set()
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in MODULES}
    return found


def _importers_of(prefix: str, *, outside: str | None = None, within: str | None = None) -> list[str]:
    hits = []
    for module in MODULES:
        if outside is not None and (module == outside or module.startswith(outside + ".")):
            continue
        if within is not None and not (module == within or module.startswith(within + ".")):
            continue
        if any(
            name == prefix or name.startswith(prefix + ".") for name in _imports(module, at_import_time=False)
        ):
            hits.append(module)
    return sorted(hits)


def test_only_the_store_imports_sqlalchemy_or_alembic() -> None:
    store = "structured_agents.store"
    assert _importers_of("sqlalchemy", outside=store) == []
    assert _importers_of("alembic", outside=store) == []


def test_the_kernel_imports_no_engine() -> None:
    assert _importers_of("structured_agents.engines", within="structured_agents.kernel") == []


def test_the_workers_and_the_api_do_not_import_the_embedded_runner() -> None:
    runner = "structured_agents.runner"
    assert _importers_of(runner, within="structured_agents.workers") == []
    assert _importers_of(runner, within="structured_agents.api") == []


def _loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle a depth-first walk of ``graph`` meets, as module paths."""
    loops: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                loops.append([*stack[stack.index(target) :], target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return loops


def test_the_loop_finder_finds_loops() -> None:
    assert _loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert _loops({"a": {"b"}, "b": set()}) == []


def _module_graph(*, type_checking: bool) -> dict[str, set[str]]:
    imports = {
        module: _imports(module, at_import_time=True, type_checking=type_checking) for module in MODULES
    }
    return {
        module: {name for name in names if name in MODULES and name != module}
        for module, names in imports.items()
    }


def test_no_import_loop_at_import_time() -> None:
    graph = _module_graph(type_checking=False)
    assert sum(map(len, graph.values())) > 300  # the graph is really read
    # A package's __init__ importing its own submodules, which import siblings by full path, is
    # how packages are built: an edge into a package's __init__ from inside it is not a loop.
    for module, targets in graph.items():
        graph[module] = {
            t for t in targets if not (MODULES[t].name == "__init__.py" and module.startswith(t + "."))
        }
    loops = _loops(graph)
    assert loops == [], "\n".join(" -> ".join(loop) for loop in loops)


def test_no_import_loop_through_type_checking_imports_either() -> None:
    graph = _module_graph(type_checking=True)
    for module, targets in graph.items():  # as above: a package's __init__ is built from inside
        graph[module] = {
            t for t in targets if not (MODULES[t].name == "__init__.py" and module.startswith(t + "."))
        }
    loops = _loops(graph)
    assert loops == [], "\n".join(" -> ".join(loop) for loop in loops)
    # and between the sub-packages (folders), each taken as a whole
    subpackages = {m for m, path in MODULES.items() if path.name == "__init__.py" and m.count(".") == 1}

    def package_of(module: str) -> str | None:
        package = ".".join(module.split(".")[:2])
        return package if package in subpackages else None

    packages: dict[str, set[str]] = {package: set() for package in subpackages}
    for module, targets in graph.items():
        package = package_of(module)
        if package is not None:
            packages[package] |= {p for t in targets if (p := package_of(t)) is not None and p != package}
    package_loops = _loops(packages)
    assert package_loops == [], "\n".join(" -> ".join(loop) for loop in package_loops)


PLAIN = {
    "structured_agents.types",
    "structured_agents.status",
    "structured_agents.errors",
    "structured_agents.named",
    "structured_agents.settings",
    "structured_agents.syntax",
}
"""The bottom layer: plain types, statuses, errors, the name registry, the settings and the
one ``ast.parse``."""


def test_the_bottom_layer_imports_only_the_bottom_layer() -> None:
    for module in PLAIN:
        inside = {
            name for name in _imports(module, at_import_time=False) if name.startswith("structured_agents")
        }
        assert inside <= PLAIN, f"{module} imports {sorted(inside - PLAIN)}"


def test_importing_the_layers_above_the_store_loads_no_sqlalchemy() -> None:
    """Checked by importing (an indirect import counts too), each in a fresh interpreter."""
    layers = ["tasks", "kernel", "plugins", "bundles", "engines", "settings", "status"]
    code = "\n".join(
        [
            "import importlib, sys",
            f"for name in {layers!r}:",
            "    importlib.import_module('structured_agents.' + name)",
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sqlalchemy', 'alembic')))",
            "print(sorted(m for m in sys.modules if m.startswith('structured_agents.store')))",
        ]
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.splitlines() == ["[]", "[]"], done.stderr


def test_wire_names_are_spelled_only_in_the_workers_constants() -> None:
    """A Celery task name (``sa.llm.turn``) or its prefix as a string literal of its own."""
    owner = "structured_agents.workers.constants"
    spelled = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
            if module != owner and text.startswith(("sa.llm.", "sa.tools.", "sa.control.")):
                spelled.append(f"{module}: {text!r}")
    assert spelled == []
    assert any(
        isinstance(node, ast.Constant) and node.value == "sa.llm."
        for node in ast.walk(ast.parse(MODULES[owner].read_text(encoding="utf-8")))
    )


def test_the_store_imports_nothing_above_it() -> None:
    """It keeps the kernel's state as the JSON the kernel writes; the lifecycle decodes it."""
    store = "structured_agents.store"
    for above in ("kernel", "lifecycle", "tasks", "plugins", "engines", "workers", "runner", "bundles"):
        assert _importers_of(f"structured_agents.{above}", within=store) == [], above


def test_the_store_seam_imports_nothing_of_sql() -> None:
    """The protocol and the records it returns are plain: a double needs no database."""
    sql = {f"structured_agents.store.{module}" for module in SQL_MODULES}
    for module in ("protocol", "records", "report_records"):
        imported = _imports(f"structured_agents.store.{module}", at_import_time=False, type_checking=True)
        found = {name for name in imported if name in sql or name.split(".")[0] in ("sqlalchemy", "alembic")}
        assert not found, module


SQL_MODULES = (
    "models",
    "database",
    "connection",
    "converting",
    "migrate",
    "bulk",
    "sql",
    "queue",
    "runlog",
    "steps",
    "report",
    "rows",
)
"""The store's modules that hold SQL (the seam's own are ``protocol``, ``records``, ``report_records``)."""


NO_TEST_FOLDER = {"harness": "its tests drive the embedded runner's scripted helpers, in tests/runner"}
"""Subpackages whose tests live elsewhere, and why."""


def test_the_tests_mirror_the_package() -> None:
    """Each subpackage's tests are in the tests folder of its name (the distributed cluster they
    share is ``tests/cluster_fixtures.py``), so a maintainer finds them where the code is."""
    tests = PACKAGE.parent / "tests"
    subpackages = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    missing = sorted(name for name in subpackages - set(NO_TEST_FOLDER) if not (tests / name).is_dir())
    assert missing == [], missing
    assert set(NO_TEST_FOLDER) <= subpackages


def test_only_syntax_parses_python() -> None:
    """``ast.parse`` from two threads at once can fail on CPython 3.11 (see
    ``structured_agents/syntax.py``), so the package parses through its one lock."""
    calls = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "ast.parse(" in path.read_text().replace('"""``ast.parse(', "") and path.name != "syntax.py"
    )
    assert calls == []
