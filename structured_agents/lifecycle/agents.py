"""What a worker needs to drive the runs of one batch: its bundle's kernel, built once.

A batch records its bundle directory in ``options["bundle"]``. :class:`AgentCache` loads it
with :func:`structured_agents.bundles.load_bundle` (connecting its MCP servers, if any, on the
worker's event loop) and keeps the agents of a worker process's most recent bundles, so
grammars are built and tools resolved once per bundle, not once per step.

The kernel's events go to a :class:`RecordingObserver`; each step drains it and writes the
events in the same transaction as the state they belong to.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from structured_agents.bundles import Bundle, load_bundle
from structured_agents.kernel import AgentKernel
from structured_agents.kernel.engine import Engine
from structured_agents.observer.recording import RecordingObserver
from structured_agents.types import JsonDict

__all__ = ["AgentCache", "BatchAgent"]

Runner = Callable[[Coroutine[Any, Any, Any]], Any]
"""Runs a coroutine to completion on the worker's event loop."""


@dataclass(frozen=True, slots=True)
class BatchAgent:
    """A loaded bundle ready to drive runs: its kernel and the recorder of the kernel's events."""

    bundle: Bundle
    """The bundle (prompts, context providers, tools)."""
    kernel: AgentKernel
    """Kernel over the bundle's plugin, tools and limits."""
    recorder: RecordingObserver
    """Where the kernel's events wait until a step writes them."""

    def drain(self) -> list[JsonDict]:
        """The events recorded since the last drain, as dicts, in order."""
        events = [event.to_dict() for event in self.recorder.events]
        self.recorder.events.clear()
        return events


class AgentCache:
    """The agents of the most recently used bundles of one worker process."""

    def __init__(self, engine: Engine, run: Runner, size: int = 16) -> None:
        self.engine = engine
        self.size = size
        self._run = run
        self._agents: OrderedDict[str, BatchAgent] = OrderedDict()

    def get(self, bundle: str) -> BatchAgent:
        """The agent of the bundle at ``bundle`` (loaded on first use)."""
        agent = self._agents.pop(bundle, None) or self._load(bundle)
        self._agents[bundle] = agent
        while len(self._agents) > self.size:
            _, old = self._agents.popitem(last=False)
            old.kernel.close()
            self._run(old.bundle.aclose())
        return agent

    def _load(self, path: str) -> BatchAgent:
        bundle = load_bundle(path)
        self._run(bundle.connect())
        recorder = RecordingObserver()
        return BatchAgent(bundle, bundle.kernel(self.engine, observers=[recorder]), recorder)
