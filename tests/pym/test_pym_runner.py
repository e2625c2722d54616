"""Runs in the real sandbox: results, defaults, limits, external refusals, error mapping."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from structured_agents.pym import (
    DEFAULT_GRANTS,
    ExternalContext,
    PymCheckError,
    PymExecutionError,
    PymExternalError,
    PymLimitError,
    PymLimits,
    PymOutputError,
    PymParseError,
    PymRunner,
    PymScript,
    default_externals,
    load_source,
)

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parent / "fixtures"
FAST = PymLimits(memory_mb=16, duration_s=0.3, timeout_s=2.0)
Make = Callable[..., PymScript]


def fixture(name: str) -> PymScript:
    path = FIXTURES / "tools" / f"{name}.pym"
    return load_source(path.read_text(), path)


async def test_defaults_and_coercion(runner: PymRunner) -> None:
    result = await runner.run(
        fixture("kinds"), {"name": "n", "count": "3", "verbose": "true", "tags": '["a"]'}
    )
    assert result.value == {
        "name": "n",
        "count": 3,
        "ratio": 0.5,
        "verbose": True,
        "tags": ["a"],
        "scores": {},
        "note": None,
        "mode": "fast",
        "level": None,
        "types": ["int", "float", "bool"],
    }
    assert result.output.startswith('{"name": "n", "count": 3,')


async def test_external_reads_inside_the_workspace(runner: PymRunner, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("a\nb\nc\n")
    result = await runner.run(
        fixture("count_lines"), {"path": "notes.txt", "limit": 2}, workspace=tmp_path, grants=DEFAULT_GRANTS
    )
    assert result.value == {"path": "notes.txt", "lines": 2}
    assert result.external_calls == 1


async def test_escaping_path_is_refused(runner: PymRunner, tmp_path: Path) -> None:
    script = fixture("peek")
    with pytest.raises(PymExternalError) as info:
        await runner.run(script, {}, workspace=tmp_path, grants={"read_file"})
    assert str(info.value) == f"{script.path}:19:14: path '../../etc/passwd' is outside the workspace"
    assert info.value.exc_type == "PermissionError"
    caught = await runner.run(script, {"catch": True}, workspace=tmp_path, grants={"read_file"})
    assert caught.value == "refused: path '../../etc/passwd' is outside the workspace"


async def test_ungranted_external_fails_before_running(runner: PymRunner, tmp_path: Path) -> None:
    with pytest.raises(PymCheckError) as info:
        await runner.run(fixture("peek"), {}, workspace=tmp_path, grants={"list_files"})
    (diagnostic,) = info.value.diagnostics
    assert diagnostic.code == "PYM024" and "external 'read_file' is not granted" in diagnostic.message
    assert (diagnostic.line, diagnostic.column) == (10, 1)


async def test_memory_limit_then_next_call_works(runner: PymRunner) -> None:
    with pytest.raises(PymLimitError) as info:
        await runner.run(fixture("memory_bomb"), {}, limits=FAST)
    assert info.value.limit == "memory" and "memory limit of 16 MiB exceeded (" in str(info.value)
    assert "bytes > 16777216 bytes)" in str(info.value)  # Monty's measured size against the limit
    assert (await runner.run(fixture("kinds"), {"name": "after"})).value["name"] == "after"


async def test_endless_loop_is_stopped_then_next_call_works(runner: PymRunner) -> None:
    with pytest.raises(PymLimitError) as info:
        await runner.run(fixture("forever"), {}, limits=FAST)
    assert info.value.limit == "duration"
    assert "execution time limit of 0.3s exceeded (" in str(info.value)  # with Monty's measured time
    assert "timeout" not in str(info.value)
    assert (await runner.run(fixture("kinds"), {"name": "after"})).value["name"] == "after"


async def test_an_operation_the_sandbox_cannot_interrupt_is_named_as_the_time_limit(
    runner: PymRunner, make_script: Make
) -> None:
    # One bigint power: Monty cannot stop inside it (over 20 s on a fast core, 12 MiB); its pool
    # kills the worker 1 s past the execution time limit, long before the run's wall-clock timeout.
    script = make_script("x = 10 ** (3 * 10 ** 7)\nx > 0\n")
    limits = PymLimits(duration_s=0.5, timeout_s=60.0)
    with pytest.raises(PymLimitError) as info:
        await runner.run(script, {}, limits=limits)
    message = str(info.value)
    assert info.value.limit == "duration" and info.value.line == 0
    assert "execution time limit of 0.5s exceeded" in message and "cannot interrupt" in message
    assert "timeout" not in message and "60" not in message
    stopped_after = float(message.rsplit("stopped after ", 1)[1].removesuffix("s)"))
    assert limits.duration_s < stopped_after < limits.timeout_s
    assert (await runner.run(fixture("kinds"), {"name": "after"})).value["name"] == "after"


async def test_recursion_limit(runner: PymRunner, make_script: Make) -> None:
    script = make_script("def down(n):\n    return down(n + 1)\n\ndown(0)\n")
    with pytest.raises(PymLimitError) as info:
        await runner.run(script, {}, limits=PymLimits(recursion_depth=50))
    assert (info.value.limit, info.value.line) == ("recursion", 2)


async def test_external_call_limit(runner: PymRunner, make_script: Make, tmp_path: Path) -> None:
    script = make_script(
        """
        from grail import external
        @external
        async def file_exists(path: str) -> bool: ...
        hits = 0
        for i in range(10):
            if await file_exists("x"):
                hits += 1
        hits
        """
    )
    with pytest.raises(PymLimitError) as info:
        await runner.run(
            script, {}, workspace=tmp_path, limits=PymLimits(external_calls=3), grants=DEFAULT_GRANTS
        )
    assert info.value.limit == "external_calls"
    done = await runner.run(
        script, {}, workspace=tmp_path, limits=PymLimits(external_calls=10), grants=DEFAULT_GRANTS
    )
    assert (done.value, done.external_calls) == (0, 10)


async def test_timeout_covers_externals_and_abandoned_runs_recover(make_script: Make) -> None:
    externals = default_externals()

    async def nap(ctx: ExternalContext, seconds: float) -> float:
        await asyncio.sleep(seconds)
        return seconds

    externals.register(nap)
    script = make_script(
        """
        from grail import Input, external
        seconds: float = Input("seconds")
        spin: bool = Input("spin", default=False)
        @external
        async def nap(seconds: float) -> float: ...
        try:
            slept = await nap(seconds)
        except TimeoutError:
            slept = -1.0
        while spin:
            pass
        slept
        """
    )
    limits = PymLimits(duration_s=0.3, timeout_s=0.3)
    with PymRunner(externals=externals, max_workers=1) as own:  # one worker: recovery is needed
        for arguments in ({"seconds": 5.0}, {"seconds": 0.1, "spin": True}):
            with pytest.raises(PymLimitError) as info:  # the script cannot catch the run's timeout
                await own.run(script, arguments, limits=limits, grants={"nap"})
            assert info.value.limit == "timeout"
        assert (await own.run(script, {"seconds": 0.01}, limits=limits, grants={"nap"})).value == 0.01


async def test_errors_point_at_user_lines(runner: PymRunner, make_script: Make) -> None:
    script = make_script(
        """
        from grail import Input
        x: int = Input(
            "x",
            default=0,
        )
        y = 10
        y / x
        """
    )
    with pytest.raises(PymExecutionError) as info:
        await runner.run(script, {})
    assert str(info.value) == f"{script.path}:7:1: ZeroDivisionError: division by zero"


async def test_undeclared_function_is_a_name_error(runner: PymRunner, make_script: Make) -> None:
    with pytest.raises(PymExecutionError, match=r":1:1: NameError: name 'read_file' is not defined"):
        await runner.run(make_script("read_file('x')\n"), {})


async def test_no_state_survives_between_runs(runner: PymRunner, make_script: Make) -> None:
    await runner.run(make_script("leaked = 1\nleaked\n", "a"), {})
    with pytest.raises(PymExecutionError, match="name 'leaked' is not defined"):
        await runner.run(make_script("leaked\n", "b"), {})


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ("x = 1\n", None),
        ("(1, [2, (3,)])\n", [1, [2, [3]]]),
        ("{'a': None, 'b': 1.5}\n", {"a": None, "b": 1.5}),
    ],
)
async def test_results(runner: PymRunner, make_script: Make, source: str, value: Any) -> None:
    assert (await runner.run(make_script(source), {})).value == value


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("{1, 2}\n", "not JSON-serialisable: it contains a set"),
        ("{1: 2}\n", "it contains a dict with non-string keys"),
        ("float('nan')\n", "NaN or infinity"),
        ("'x' * 70000\n", "larger than the 64 KiB output limit"),
    ],
)
async def test_output_errors(runner: PymRunner, make_script: Make, source: str, message: str) -> None:
    with pytest.raises(PymOutputError, match=message):
        await runner.run(make_script(source), {}, limits=PymLimits.preset("strict"))


async def test_print_is_captured(runner: PymRunner, make_script: Make) -> None:
    result = await runner.run(make_script("print('hello', 1)\n2\n"), {})
    assert (result.stdout, result.value) == ("hello 1\n", 2)


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("x = 1\ny = (\n", "the sandbox cannot parse this"),
        ("async def f():\n    async for x in y:\n        pass\n", "does not yet support async for"),
    ],
)
async def test_sandbox_parser_errors_become_parse_errors(runner: PymRunner, code: str, message: str) -> None:
    script = PymScript(Path("raw.pym"), "0" * 64, "unchecked", (), (), code)  # bypasses the checker
    with pytest.raises(PymParseError, match=message) as info:
        await runner.run(script, {})
    assert info.value.diagnostics[0].code == "PYM001"


async def test_only_declared_and_granted_externals_resolve(
    runner: PymRunner, make_script: Make, tmp_path: Path
) -> None:
    script = make_script("await list_files('*')\n")  # granted, but never declared
    with pytest.raises(PymExecutionError, match="NameError: name 'list_files' is not defined"):
        await runner.run(script, {}, workspace=tmp_path, grants=DEFAULT_GRANTS)


async def test_sandbox_has_no_filesystem(runner: PymRunner, make_script: Make) -> None:
    with pytest.raises(PymExecutionError, match="PermissionError: Permission denied: '/etc/passwd'"):
        await runner.run(make_script("open('/etc/passwd').read()\n"), {})


async def test_host_function_failures_reach_the_script(make_script: Make) -> None:
    externals = default_externals()

    async def broken(ctx: ExternalContext, n: int) -> int:
        raise KeyError(n)

    externals.register(broken)
    script = make_script(
        """
        from grail import external
        @external
        async def broken(n: int) -> int: ...
        try:
            await broken(1, 2)
        except TypeError:
            pass
        await broken(1)
        """
    )
    own = PymRunner(externals=externals, max_workers=1)
    with own, pytest.raises(PymExternalError, match=r"tool\.pym:8:1: broken\(\): 1") as info:
        await own.run(script, {}, grants={"broken"})
    assert info.value.exc_type == "RuntimeError"


async def test_concurrent_runs_share_the_pool(runner: PymRunner, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("a\nb\n")
    script = fixture("count_lines")
    results = await asyncio.gather(
        *(
            runner.run(script, {"path": "notes.txt", "limit": i}, workspace=tmp_path, grants=DEFAULT_GRANTS)
            for i in range(8)
        )
    )
    assert [r.value["lines"] for r in results] == [0, 1, 2, 2, 2, 2, 2, 2]
