"""What a driver needs to move the runs of a batch: its bundle's kernel, built once.

A batch records its bundle directory in ``options["bundle"]``. :class:`AgentCache` loads it
with :func:`structured_agents.bundles.load_bundle` (connecting its MCP servers, if any, on the
driver's event loop) and keeps the agents of a process's most recent bundles, so grammars are
built and tools resolved once per bundle, not once per step.

The kernel's events go to an :class:`EventBuffer`, kept per run: a step takes its run's
events and writes them in the same transaction as the state they belong to, however many runs
share the kernel at once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from structured_agents.bundles import Bundle, load_bundle
from structured_agents.kernel import AgentKernel, Engine
from structured_agents.observer.events import Event
from structured_agents.observer.protocol import Observer
from structured_agents.types import JsonDict

__all__ = ["AgentCache", "BatchAgent", "EventBuffer"]


class EventBuffer:
    """An observer keeping each run's events until a step takes them."""

    def __init__(self) -> None:
        self._events: dict[str, list[Event]] = {}

    async def on_event(self, event: Event) -> None:
        """Keep ``event`` with its run's."""
        self._events.setdefault(event.run_id, []).append(event)

    def take(self, run_id: str) -> list[JsonDict]:
        """The events of ``run_id`` since it was last taken, as dicts, in order."""
        return [event.to_dict() for event in self._events.pop(run_id, [])]


@dataclass(frozen=True, slots=True)
class BatchAgent:
    """A loaded bundle ready to drive runs: its kernel and the buffer of the kernel's events."""

    bundle: Bundle
    """The bundle (prompts, context providers, tools, task)."""
    kernel: AgentKernel
    """Kernel over the bundle's plugin, tools and limits."""
    events: EventBuffer
    """Where the kernel's events wait until a step writes them."""

    @classmethod
    async def connect(
        cls,
        bundle: Bundle,
        engine: Engine,
        *,
        observers: Iterable[Observer] = (),
        agent_engine: Engine | None = None,
    ) -> BatchAgent:
        """The agent of ``bundle`` (its MCP servers, if any, connected on this event loop): a
        kernel over ``engine`` whose events go to a fresh buffer and to ``observers``."""
        await bundle.connect()
        events = EventBuffer()
        kernel = bundle.kernel(engine, observers=[events, *observers], agent_engine=agent_engine)
        return cls(bundle, kernel, events)


class AgentCache:
    """The agents of the most recently used bundles of one process.

    ``engine`` is the kernels' engine (drivers that decode elsewhere give one that refuses);
    ``agent_engine`` what agents run as tools decode with (default: ``engine``; see
    :meth:`Bundle.kernel`); ``observers`` see every kernel event besides the buffer (a progress bar).
    """

    def __init__(
        self,
        engine: Engine,
        size: int = 16,
        *,
        observers: Iterable[Observer] = (),
        agent_engine: Engine | None = None,
    ) -> None:
        self.engine = engine
        self.agent_engine = agent_engine
        self.size = size
        self._observers = tuple(observers)
        self._agents: OrderedDict[str, BatchAgent] = OrderedDict()

    async def get(self, bundle: str) -> BatchAgent:
        """The agent of the bundle at ``bundle`` (loaded, and its MCP servers connected, on
        first use)."""
        agent = self._agents.pop(bundle, None) or await self._load(bundle)
        self._agents[bundle] = agent
        while len(self._agents) > self.size:
            _, old = self._agents.popitem(last=False)
            await self._close(old)
        return agent

    async def _load(self, path: str) -> BatchAgent:
        bundle = load_bundle(path)
        return await BatchAgent.connect(
            bundle, self.engine, observers=self._observers, agent_engine=self.agent_engine
        )

    @staticmethod
    async def _close(agent: BatchAgent) -> None:
        agent.kernel.close()
        await agent.bundle.aclose()
