"""Host functions: workspace confinement, the built-ins, registry and grant checks."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from structured_agents.pym import (
    DEFAULT_GRANTS,
    ExternalContext,
    ExternalRegistry,
    PymError,
    PymExternalError,
    PymLimits,
    PymRunner,
    PymScript,
    check_grants,
    default_externals,
    resolve_path,
)
from structured_agents.pym.host_functions import file_exists, list_files, read_file, run_ruff, write_file

pytestmark = pytest.mark.anyio


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("import os\n")
    (root / "pkg" / "b.txt").write_text("bee\n")
    (root / "top.py").write_text("x = 1\n")
    (tmp_path / "secret.txt").write_text("secret\n")
    os.symlink(tmp_path / "secret.txt", root / "link.txt")
    return root


def ctx(workspace: Path | None) -> ExternalContext:
    return ExternalContext(workspace)


@pytest.mark.parametrize(
    "path", ["../secret.txt", "../../etc/passwd", "/etc/passwd", "pkg/../../secret.txt", "link.txt"]
)
def test_paths_outside_the_workspace_are_refused(workspace: Path, path: str) -> None:
    with pytest.raises(PymExternalError, match="is outside the workspace") as info:
        resolve_path(workspace, path)
    assert info.value.exc_type == "PermissionError"


def test_paths_inside_the_workspace(workspace: Path) -> None:
    assert resolve_path(workspace, "pkg/a.py") == (workspace / "pkg" / "a.py").resolve()
    assert resolve_path(workspace, str(workspace / "top.py")) == (workspace / "top.py").resolve()
    assert resolve_path(workspace, "pkg/../top.py") == (workspace / "top.py").resolve()
    with pytest.raises(PymExternalError, match="no workspace"):
        resolve_path(None, "top.py")
    with pytest.raises(PymExternalError, match="must be a str") as info:
        resolve_path(workspace, 3)
    assert info.value.exc_type == "TypeError"


async def test_read_file_and_file_exists(workspace: Path) -> None:
    assert await read_file(ctx(workspace), "pkg/b.txt") == "bee\n"
    assert await file_exists(ctx(workspace), "pkg") is True
    assert await file_exists(ctx(workspace), "nope") is False
    for path, kind in [("nope.txt", "FileNotFoundError"), ("pkg", "IsADirectoryError")]:
        with pytest.raises(PymExternalError) as info:
            await read_file(ctx(workspace), path)
        assert info.value.exc_type == kind
    with pytest.raises(PymExternalError, match="outside the workspace"):
        await file_exists(ctx(workspace), "../secret.txt")


async def test_list_files(workspace: Path) -> None:
    assert await list_files(ctx(workspace)) == ["top.py"]  # link.txt points outside: not listed
    assert await list_files(ctx(workspace), "**/*.py") == ["pkg/a.py", "top.py"]
    assert await list_files(ctx(workspace), "pkg") == ["pkg/a.py", "pkg/b.txt"]
    for pattern in ["../*", "/etc/*"]:
        with pytest.raises(PymExternalError, match="must stay inside the workspace"):
            await list_files(ctx(workspace), pattern)


async def test_run_ruff_reports_workspace_relative_diagnostics(workspace: Path) -> None:
    items = await run_ruff(ctx(workspace), "pkg/a.py")
    assert {"code": "F401", "path": "pkg/a.py", "line": 1, "column": 8, "fixable": True}.items() <= next(
        item for item in items if item["code"] == "F401"
    ).items()
    assert (workspace / "pkg" / "a.py").read_text() == "import os\n"  # checked, not fixed
    with pytest.raises(PymExternalError, match="no such file"):
        await run_ruff(ctx(workspace), "missing.py")


async def test_write_file_stays_in_the_workspace(workspace: Path) -> None:
    assert await write_file(ctx(workspace), "pkg/new.txt", "hi") == 2
    assert (workspace / "pkg" / "new.txt").read_text() == "hi"
    with pytest.raises(PymExternalError, match="outside the workspace"):
        await write_file(ctx(workspace), "../evil.txt", "x")
    assert "write_file" not in DEFAULT_GRANTS


async def test_write_file_only_when_granted(
    runner: PymRunner, make_script: Callable[[str], PymScript], workspace: Path
) -> None:
    script = make_script(
        """
        from grail import external
        @external
        async def write_file(path: str, content: str) -> int: ...
        await write_file("out.txt", "proposal")
        """
    )
    assert [d.code for d in check_grants(script, default_externals(), DEFAULT_GRANTS)] == ["PYM024"]
    await runner.run(script, {}, workspace=workspace, grants={*DEFAULT_GRANTS, "write_file"})
    assert (workspace / "out.txt").read_text() == "proposal"


def test_signature_mismatch_is_pym025(make_script: Callable[[str], PymScript]) -> None:
    script = make_script(
        """
        from grail import external
        @external
        async def read_file(filename: str) -> str: ...
        @external
        async def list_files(pattern: str, recursive: bool) -> list[str]: ...
        @external
        async def file_exists() -> bool: ...
        """
    )
    diagnostics = check_grants(script, default_externals(), DEFAULT_GRANTS)
    assert [(d.code, d.line) for d in diagnostics] == [("PYM025", 3), ("PYM025", 5), ("PYM025", 7)]
    assert "declares (filename), the host function takes (path)" in diagnostics[0].message


def test_registry_rejects_sync_functions_and_lists_builtins() -> None:
    registry = ExternalRegistry()

    def sync(ctx: ExternalContext) -> None:
        return None

    with pytest.raises(TypeError, match="must be an async function"):
        registry.register(sync)  # type: ignore[arg-type]
    names = [f.name for f in default_externals()]
    assert names == ["read_file", "list_files", "file_exists", "run_ruff", "write_file"]
    listed = default_externals().get("list_files")
    assert listed is not None and [(p.name, p.has_default) for p in listed.params] == [("pattern", True)]


async def test_a_named_pipe_is_refused_at_once_read_or_written(workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")  # no writer ever opens it: a blocking read would wait forever
    started = time.monotonic()
    with pytest.raises(PymExternalError, match="not a regular file") as info:
        await read_file(ctx(workspace), "pipe")
    assert info.value.exc_type == "OSError"
    with pytest.raises(PymExternalError, match=r"cannot write|not a regular file"):
        await write_file(ctx(workspace), "pipe", "x")  # no reader: a blocking open would hang too
    assert time.monotonic() - started < 2


async def test_a_run_reading_a_pipe_ends_at_its_deadline_and_the_next_run_goes(
    runner: PymRunner, make_script: Callable[[str], PymScript], workspace: Path
) -> None:
    os.mkfifo(workspace / "pipe")
    script = make_script(
        """
        from grail import external
        @external
        async def read_file(path: str) -> str: ...
        await read_file("pipe")
        """
    )
    started = time.monotonic()
    with pytest.raises(PymError, match="not a regular file"):
        await runner.run(
            script, {}, workspace=workspace, grants=DEFAULT_GRANTS, limits=PymLimits(timeout_s=5)
        )
    assert time.monotonic() - started < 5
    ok = make_script(
        """
        from grail import external
        @external
        async def read_file(path: str) -> str: ...
        await read_file("top.py")
        """
    )
    assert (await runner.run(ok, {}, workspace=workspace, grants=DEFAULT_GRANTS)).value == "x = 1\n"


async def test_run_ruff_never_lints_a_file_a_symlink_leads_to_outside(
    workspace: Path, tmp_path: Path
) -> None:
    (tmp_path / "outside.py").write_text("import secret_module_name\n")
    os.symlink(tmp_path / "outside.py", workspace / "pkg" / "escape.py")
    os.symlink(tmp_path, workspace / "pkg" / "escape_dir")
    diagnostics = await run_ruff(ctx(workspace), ".")
    assert {d["path"] for d in diagnostics} == {"pkg/a.py"}
    assert "secret_module_name" not in str(diagnostics)
    with pytest.raises(PymExternalError, match="outside the workspace"):
        await run_ruff(ctx(workspace), "pkg/escape.py")
