"""GrailRegistry over a folder of .pym files and GrailBackend running them in the real sandbox."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from structured_agents.context import RunContext
from structured_agents.errors import ToolNotFoundError
from structured_agents.pym import PymCache, PymCheckError, ScriptLoader
from structured_agents.tools.composite import CompositeBackend, ContextProviderRunner
from structured_agents.tools.grail import GrailBackend, GrailRegistry
from structured_agents.tools.protocol import ToolBackend, ToolRegistry
from structured_agents.tools.resolve import resolve_all
from structured_agents.types import ToolCall, ToolSchema

pytestmark = pytest.mark.anyio

PYM_FIXTURES = Path(__file__).parents[1] / "pym" / "fixtures"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Valid tools, the broken fixtures, a duplicate name in a subfolder and a hidden folder."""
    root = tmp_path / "tools"
    shutil.copytree(PYM_FIXTURES / "tools", root)
    shutil.copytree(PYM_FIXTURES / "broken", root / "broken")
    (root / "sub").mkdir()
    (root / "sub" / "kinds.pym").write_text("1\n")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "secret.pym").write_text("1\n")
    return root


@pytest.fixture
def loader(tmp_path: Path) -> ScriptLoader:
    return ScriptLoader(PymCache(tmp_path / "cache"))


@pytest.fixture
def backend(loader: ScriptLoader) -> Iterator[GrailBackend]:
    grail = GrailBackend(loader=loader, limits={"duration_s": 0.3}, tool_limits={"memory_bomb": "strict"})
    yield grail
    grail.close()


def test_registry_lists_valid_tools_and_records_problems(folder: Path, loader: ScriptLoader) -> None:
    registry = GrailRegistry(folder, loader=loader)
    assert isinstance(registry, ToolRegistry)
    assert registry.list_tools() == ["count_lines", "forever", "kinds", "memory_bomb", "peek"]
    assert [str(p) for p in registry.problems] == [
        f"{folder}/broken/uses_class.pym:8:1: PYM002 class definitions are not supported",
        f"{folder}/broken/wrong_name.pym:3:10: PYM011 Input name 'y' differs from the variable 'x'",
        f"{folder}/sub/kinds.pym:1:1: PYM031 another script already provides tool 'kinds'",
    ]


def test_resolve(folder: Path, loader: ScriptLoader) -> None:
    registry = GrailRegistry(folder, loader=loader)
    schema = registry.resolve("count_lines")
    assert schema is not None
    assert (schema.backend, schema.script_path) == ("grail", folder / "count_lines.pym")
    assert schema.required == ("path",)
    assert registry.resolve("nothing") is None
    with pytest.raises(PymCheckError, match=r"uses_class\.pym:8:1: PYM002"):
        registry.resolve("uses_class")
    missing = r"registry 'grail' has no tool 'nothing' \(available: count_lines, "
    with pytest.raises(ToolNotFoundError, match=missing):
        resolve_all(registry, ["kinds", "nothing"])
    assert [s.name for s in resolve_all(registry, ["peek", "kinds"])] == ["peek", "kinds"]


def test_registry_grants_and_missing_folder(folder: Path, loader: ScriptLoader, tmp_path: Path) -> None:
    registry = GrailRegistry(folder, loader=loader, grants=())
    assert "count_lines" not in registry.list_tools()
    assert any(p.code == "PYM024" and p.path.endswith("count_lines.pym") for p in registry.problems)
    missing = GrailRegistry(tmp_path / "nowhere", loader=loader)
    assert missing.list_tools() == [] and missing.problems[0].code == "PYM000"


async def test_backend_executes_and_recovers(
    folder: Path, loader: ScriptLoader, backend: GrailBackend
) -> None:
    assert isinstance(backend, ToolBackend) and isinstance(backend, ContextProviderRunner)
    registry = GrailRegistry(folder, loader=loader)
    context = RunContext(run_id="r1", workspace=folder)
    kinds = registry.resolve("kinds")
    forever = registry.resolve("forever")
    bomb = registry.resolve("memory_bomb")
    assert kinds is not None and forever is not None and bomb is not None

    ok = await backend.execute(ToolCall("kinds", {"name": "a", "count": "4"}, id="c1"), kinds, context)
    assert (ok.call_id, ok.is_error, json.loads(ok.output)["count"]) == ("c1", False, 4)

    looped = await backend.execute(ToolCall("forever", {}, id="c2"), forever, context)
    assert looped.is_error and looped.output.startswith("PymLimitError: ")
    assert "execution time limit of 0.3s exceeded" in looped.output

    bombed = await backend.execute(ToolCall("memory_bomb", {}, id="c3"), bomb, context)
    assert bombed.is_error and "memory limit of 16 MiB exceeded" in bombed.output  # per-tool "strict"

    again = await backend.execute(ToolCall("kinds", {"name": "b"}, id="c4"), kinds, context)
    assert not again.is_error and json.loads(again.output)["name"] == "b"


async def test_backend_error_results(folder: Path, loader: ScriptLoader, backend: GrailBackend) -> None:
    registry = GrailRegistry(folder, loader=loader)
    context = RunContext(run_id="r1", workspace=folder)
    peek = registry.resolve("peek")
    kinds = registry.resolve("kinds")
    assert peek is not None and kinds is not None
    refused = await backend.execute(ToolCall("peek", {}), peek, context)
    assert refused.is_error and refused.output == (
        f"PymExternalError: {folder}/peek.pym:19:14: path '../../etc/passwd' is outside the workspace"
    )
    bad_args = await backend.execute(ToolCall("kinds", {"count": "x"}), kinds, context)
    assert bad_args.is_error and bad_args.output.startswith("PymInputError: ")
    no_script = await backend.execute(
        ToolCall("t", {}), ToolSchema("t", "no script", backend="grail"), context
    )
    assert no_script.is_error and "has no .pym script_path" in no_script.output
    gone = ToolSchema("gone", "deleted", backend="grail", script_path=folder / "gone.pym")
    assert (await backend.execute(ToolCall("gone", {}), gone, context)).output.startswith(
        "FileNotFoundError: "
    )


async def test_run_script_as_context_provider(folder: Path, backend: GrailBackend) -> None:
    provider = folder / "context.pym"
    provider.write_text('from grail import Input\ntopic: str = Input("topic")\n"Context about " + topic\n')
    context = RunContext(run_id="r1", workspace=folder)
    result = await backend.run_script(provider, {"topic": "cats", "undeclared": 1}, context)
    assert (result.output, result.is_error, result.name) == ("Context about cats", False, "context")
    failed = await backend.run_script(provider, {}, context)
    assert failed.is_error and "'topic' is a required property" in failed.output

    composite = CompositeBackend({"grail": backend}, providers=backend)
    kinds = ToolSchema(
        "kinds", "k", backend="grail", script_path=folder / "kinds.pym", context_providers=(provider,)
    )
    provider.write_text('from grail import Input\nname: str = Input("name")\n"Context about " + name\n')
    routed = await composite.execute(ToolCall("kinds", {"name": "dogs"}), kinds, context)
    assert not routed.is_error, routed.output
    head, body = routed.output.split("\n\n", 1)
    assert head == "Context about dogs"
    assert json.loads(body)["name"] == "dogs"
