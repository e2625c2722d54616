"""What one worker process holds: settings, store, agents, the run lifecycle, engine, event loop.

Built lazily on first use inside the process that runs tasks (a prefork child opens its own
database connections; nothing is inherited across ``fork``). The GPU worker's engine is
loaded once, on first use or when the worker starts (see :mod:`structured_agents.workers.llm`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Sequence
from functools import cached_property
from typing import TypeVar

from structured_agents.engines.factory import create_engine
from structured_agents.errors import EngineError
from structured_agents.kernel import Completion, Engine, GenerationRequest
from structured_agents.lifecycle import AgentCache, BatchAgent, RunLifecycle
from structured_agents.settings import EngineSettings, Settings, load_settings
from structured_agents.store import SqlStore, Store, StoredRun

__all__ = ["Runtime", "reset_runtime", "runtime"]

T = TypeVar("T")


class _StepsCallTheEngine:
    """The kernels' engine: steps decode through :attr:`Runtime.engine` in batches, never this."""

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Refuse: a worker's kernels build requests and apply completions only."""
        raise EngineError("worker kernels do not decode; model turns are batched on the llm queue")


class _AgentToolEngine:
    """What agents run as tools decode with in a tools worker, which loads no model: the engine
    ``SA_WORKERS__AGENT_ENGINE__*`` describes (an ``openai`` engine at the GPU box's model
    server; a script in the tests), built on the first such call, or a refusal naming it."""

    def __init__(self, settings: EngineSettings | None) -> None:
        self.settings = settings
        self._engine: Engine | None = None
        self._lock = threading.Lock()

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Decode with the configured engine; EngineError when none is configured."""
        if self.settings is None:
            raise EngineError(
                "this worker has no engine for agents run as tools: set SA_WORKERS__AGENT_ENGINE__NAME "
                "(e.g. openai, with SA_WORKERS__AGENT_ENGINE__BASE_URL at the model server)"
            )
        with self._lock:
            if self._engine is None:
                self._engine = create_engine(self.settings)
            engine = self._engine
        return engine.generate(requests)


class Runtime:
    """The per-process state of a worker."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._loop = asyncio.new_event_loop()

    @cached_property
    def store(self) -> Store:
        """The database of batches and runs (migrated on open)."""
        return SqlStore(self.settings.database_url)

    @cached_property
    def agents(self) -> AgentCache:
        """Kernels of the recent batches' bundles."""
        return AgentCache(
            _StepsCallTheEngine(), agent_engine=_AgentToolEngine(self.settings.workers.agent_engine)
        )

    @cached_property
    def lifecycle(self) -> RunLifecycle:
        """The steps of runs, over this process's store and agents."""
        return RunLifecycle(self.store, self.agent_for)

    async def agent_for(self, run: StoredRun) -> BatchAgent:
        """The agent of the run's batch's bundle."""
        return await self.agents.get(str(run.options["bundle"]))

    @cached_property
    def engine(self) -> Engine:
        """The model engine (loaded on first access; only the llm worker touches it)."""
        return create_engine(self.settings.engine)

    def run(self, coroutine: Awaitable[T]) -> T:
        """Run a kernel coroutine on the process's event loop."""
        return self._loop.run_until_complete(coroutine)

    def backoff(self, attempt: int) -> float:
        """Seconds to wait before attempt ``attempt + 1`` of a step (exponential, capped)."""
        workers = self.settings.workers
        return float(min(workers.retry_backoff_s * 2 ** max(attempt - 1, 0), workers.retry_backoff_max_s))


_lock = threading.Lock()
_runtime: Runtime | None = None


def runtime() -> Runtime:
    """The runtime of this process (created on first call, from the ``SA_*`` settings)."""
    global _runtime
    with _lock:
        if _runtime is None:
            _runtime = Runtime(load_settings())
        return _runtime


def reset_runtime() -> None:
    """Forget the runtime (a forked child must not share its parent's connections)."""
    global _runtime
    with _lock:
        _runtime = None
