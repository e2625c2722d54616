"""Run checked ``.pym`` scripts in pydantic-monty, with limits, granted externals, typed errors.

One :class:`PymRunner` owns a pool of ``monty`` worker processes (started on first use, reused
by every later run) and a few threads that make the pool's blocking calls, so the event loop
never waits on the sandbox. Each run checks out a fresh session (no state survives between
runs), starts the script with its inputs bound as variables, and answers every external call
from the granted host functions: the sandbox suspends, the host function runs on the event
loop, and its value (or exception) goes back as the result of ``await name(...)``.

At most ``max_workers`` runs hold a session at once (per event loop); the others wait for a
slot before their clock starts. ``timeout_s`` then bounds the whole run, host functions
included: at the deadline the run is abandoned with ``PymLimitError(limit="timeout")`` and
its session goes back to the pool as soon as the sandbox's own limits stop it.

The synchronous ``Monty`` pool is used on purpose: in pydantic-monty 1.4 the ``AsyncMonty``
pool aborted the interpreter at exit in about one run in four (measured), the sync pool never.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
import weakref
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from pydantic_monty import (
    ExcType,
    ExternalExceptionData,
    ExternalSettledResult,
    FunctionSnapshot,
    FutureSnapshot,
    Monty,
    MontyComplete,
    MontyError,
    MontySession,
    SyncSnapshot,
)

from structured_agents.pym.errors import PymCheckError, PymExternalError
from structured_agents.pym.externals import ExternalContext, ExternalRegistry, check_grants
from structured_agents.pym.host_functions import default_externals
from structured_agents.pym.inputs import prepare_inputs
from structured_agents.pym.limits import PymLimits
from structured_agents.pym.model import PymScript
from structured_agents.pym.outcome import json_output, sandbox_error

__all__ = ["PymResult", "PymRunner"]

T = TypeVar("T")
MAX_STDOUT_CHARS = 64 * 1024


@dataclass(frozen=True, slots=True)
class PymResult:
    """What one successful run produced."""

    value: Any
    """The value of the script's last expression, as JSON data (None when there is none)."""
    output: str
    """``value`` encoded as JSON text."""
    stdout: str
    """What the script printed (truncated after 64 KiB)."""
    external_calls: int
    """How many host functions the script called."""
    duration_s: float
    """Wall-clock seconds of the run."""


class _Stdout:
    """Print sink keeping the first MAX_STDOUT_CHARS characters."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0

    def __call__(self, stream: Literal["stdout", "stderr"], text: str) -> None:
        if self.size < MAX_STDOUT_CHARS:
            self.parts.append(text[: MAX_STDOUT_CHARS - self.size])
            self.size += len(text)

    def text(self) -> str:
        return "".join(self.parts) + ("\n[output truncated]" if self.size > MAX_STDOUT_CHARS else "")


class _Run:
    """State of one run: its session, pending externals, and what went wrong on the host."""

    def __init__(self, runner: PymRunner, script: PymScript, ctx: ExternalContext, grants: Collection[str]):
        self.runner = runner
        self.script = script
        self.ctx = ctx
        self.grants = {decl.name for decl in script.externals if decl.name in grants}
        self.session: MontySession | None = None
        self.last_job: concurrent.futures.Future[Any] | None = None
        self.tasks: dict[int, asyncio.Task[ExternalSettledResult]] = {}
        self.failures: list[PymExternalError] = []
        self.calls = 0
        self.step_started = time.perf_counter()
        """When the latest blocking sandbox step began (a limit error says how long it ran)."""

    async def offload(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a blocking pool call in the runner's threads."""
        self.last_job = self.runner._executor.submit(fn, *args, **kwargs)
        return await asyncio.wrap_future(self.last_job)

    def close(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            session.__exit__(None, None, None)

    def step(self, fn: Callable[..., SyncSnapshot], *args: Any, **kwargs: Any) -> SyncSnapshot:
        """One blocking step; the session is returned to the pool when the feed ends."""
        self.step_started = time.perf_counter()
        try:
            snapshot = fn(*args, **kwargs)
        except BaseException:
            self.close()
            raise
        if isinstance(snapshot, MontyComplete):
            self.close()
        return snapshot

    def start(self, inputs: dict[str, Any], limits: PymLimits, stdout: _Stdout) -> SyncSnapshot:
        session = self.runner._pool().checkout(limits=limits.monty_limits())
        session.__enter__()
        self.session = session
        return self.step(session.feed_start, self.script.code, inputs=inputs, print_callback=stdout)

    def cleanup(self) -> None:
        """Return the session even when the run was cancelled mid-step; stop pending externals."""
        for task in self.tasks.values():
            task.cancel()
        if self.session is None:
            return
        job = self.last_job
        if job is not None and not job.done():
            job.add_done_callback(lambda _: self.runner._executor.submit(self.close))
        else:
            self.runner._executor.submit(self.close)

    async def drive(self, snapshot: SyncSnapshot) -> Any:
        """Answer suspensions until the script completes; returns its output."""
        while not isinstance(snapshot, MontyComplete):
            if isinstance(snapshot, FunctionSnapshot):
                name = str(snapshot.function_name)
                if snapshot.is_os_function:
                    snapshot = await self.offload(self.step, snapshot.resume_not_handled)
                elif name in self.grants:
                    self.calls += 1
                    coro = self.call_external(name, snapshot.args, snapshot.kwargs)
                    self.tasks[snapshot.call_id] = asyncio.ensure_future(coro)
                    snapshot = await self.offload(self.step, snapshot.resume, {"future": ...})
                else:
                    error: ExternalExceptionData = {
                        "exc_type": "NameError",
                        "message": f"name {name!r} is not defined",
                    }
                    snapshot = await self.offload(self.step, snapshot.resume, error)
            elif isinstance(snapshot, FutureSnapshot):
                results = {cid: await self.tasks.pop(cid) for cid in snapshot.pending_call_ids}
                snapshot = await self.offload(self.step, snapshot.resume, results)
            else:  # a name the script never defined: NameError in the sandbox
                snapshot = await self.offload(self.step, snapshot.resume)
        return snapshot.output

    async def call_external(
        self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> ExternalSettledResult:
        """Run one host function; its failures become exceptions in the sandbox."""
        function = self.runner.externals.get(name)
        assert function is not None  # grants were checked against the registry
        try:
            return {"return_value": await function.func(self.ctx, *args, **kwargs)}
        except PymExternalError as exc:
            failure = exc
        except Exception as exc:  # a host function's own failure reaches the script as an exception
            kind = (
                "TypeError" if isinstance(exc, TypeError) else "OSError" if isinstance(exc, OSError) else None
            )
            failure = PymExternalError(f"{name}(): {exc}", exc_type=kind or "RuntimeError")
        self.failures.append(failure)
        return {"exc_type": cast(ExcType, failure.exc_type), "message": failure.message}


class PymRunner:
    """Runs scripts in a shared Monty pool; ``close()`` (or ``with``) stops the workers."""

    def __init__(
        self,
        *,
        externals: ExternalRegistry | None = None,
        max_workers: int = 2,
        request_timeout: float = 600.0,
    ) -> None:
        self.externals = externals if externals is not None else default_externals()
        self.max_workers = max_workers
        self.request_timeout = request_timeout
        # one thread more than sessions: a step abandoned at a timeout may still hold one
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers + 1, thread_name_prefix="pym")
        self._monty: Monty | None = None
        self._lock = threading.Lock()
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._slots = weakref.WeakKeyDictionary()

    def _slot(self) -> asyncio.Semaphore:
        """This loop's limit on concurrent runs (asyncio primitives belong to one loop)."""
        loop = asyncio.get_running_loop()
        slot = self._slots.get(loop)
        if slot is None:
            slot = self._slots[loop] = asyncio.Semaphore(self.max_workers)
        return slot

    def _pool(self) -> Monty:
        with self._lock:
            if self._monty is None:
                pool = Monty(
                    min_processes=1, max_processes=self.max_workers, request_timeout=self.request_timeout
                )
                self._monty = pool.__enter__()
            return self._monty

    async def run(
        self,
        script: PymScript,
        arguments: Mapping[str, Any],
        *,
        workspace: Path | None = None,
        limits: PymLimits | None = None,
        grants: Collection[str] = (),
    ) -> PymResult:
        """Run ``script`` with ``arguments``; raises the PymError subclass of what failed."""
        limits = limits or PymLimits()
        diagnostics = check_grants(script, self.externals, grants)
        if diagnostics:
            raise PymCheckError(diagnostics)
        inputs = prepare_inputs(script, arguments)
        async with self._slot():
            started = time.perf_counter()
            run = _Run(self, script, ExternalContext(workspace), grants)
            stdout = _Stdout()
            try:
                async with asyncio.timeout(limits.timeout_s) as scope:
                    snapshot = await run.offload(run.start, inputs, limits, stdout)
                    value = await run.drive(snapshot)
            except MontyError as exc:
                step_s = time.perf_counter() - run.step_started
                raise sandbox_error(
                    exc, script, limits, run.failures, step_s=step_s, request_timeout_s=self.request_timeout
                ) from None
            except TimeoutError:
                if not scope.expired():
                    raise
                run_s = time.perf_counter() - started
                raise sandbox_error(
                    None, script, limits, run.failures, step_s=run_s, request_timeout_s=self.request_timeout
                ) from None
            finally:
                run.cleanup()
        data, text = json_output(value, script, limits)
        return PymResult(data, text, stdout.text(), run.calls, time.perf_counter() - started)

    def close(self) -> None:
        """Stop the worker processes; a later run starts them again."""
        with self._lock:
            pool, self._monty = self._monty, None
        if pool is not None:
            pool.__exit__(None, None, None)

    def __enter__(self) -> PymRunner:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
