"""An engine whose output comes from a Python function (pydantic-ai's ``FunctionModel`` idea).

:class:`FunctionEngine` is a real :class:`~structured_agents.kernel.engine.Engine`: it takes
whole batches, keeps request order, stamps latency and batch size, and converts a failing
function into an :class:`~structured_agents.errors.EngineError` naming the request. Use it to
drive agents, servers and workers deterministically in tests and demos, or to wrap any other
text generator::

    engine = FunctionEngine(lambda request, info: f"echo: {request.prompt}")

The function receives each request and a :class:`BatchInfo`, and returns either the text or a
full :class:`Completion` (to set usage, finish reason or tool calls itself).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from structured_agents.errors import EngineError
from structured_agents.kernel.engine import Completion, GenerationRequest

__all__ = ["BatchInfo", "FunctionEngine", "GenerateFunction"]


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """Where a request sits in the ``generate`` call that decodes it."""

    index: int
    """Position of the request in its batch."""
    batch_size: int
    """How many requests the batch holds."""
    batch_number: int
    """How many ``generate`` calls this engine served before this one (0 for the first)."""


GenerateFunction = Callable[[GenerationRequest, BatchInfo], "str | Completion"]


class FunctionEngine:
    """An :class:`Engine` that answers each request by calling ``function(request, info)``."""

    def __init__(self, function: GenerateFunction, *, name: str | None = None) -> None:
        self.function = function
        self.name = name or getattr(function, "__name__", type(function).__name__)
        """Shown in error messages."""
        self.batches: list[tuple[GenerationRequest, ...]] = []
        """Every batch this engine decoded, in order (what a server or batcher really sent)."""
        self._lock = threading.Lock()

    @property
    def batch_sizes(self) -> list[int]:
        """The size of every batch decoded so far."""
        return [len(batch) for batch in self.batches]

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Call the function once per request, in order; the i-th completion answers request i."""
        batch = tuple(requests)
        with self._lock:
            batch_number = len(self.batches)
            self.batches.append(batch)
        start = time.perf_counter()
        results: list[str | Completion] = []
        for index, request in enumerate(batch):
            info = BatchInfo(index=index, batch_size=len(batch), batch_number=batch_number)
            try:
                result = self.function(request, info)
            except Exception as exc:
                raise EngineError(
                    f"FunctionEngine {self.name!r} failed on request {index} "
                    f"(request_id={request.request_id}): {type(exc).__name__}: {exc}"
                ) from exc
            if not isinstance(result, str | Completion):
                raise EngineError(
                    f"FunctionEngine {self.name!r} returned {type(result).__name__} for request {index}; "
                    "expected str or Completion"
                )
            results.append(result)
        latency = time.perf_counter() - start
        return [
            self._completion(request, result, latency, len(batch))
            for request, result in zip(batch, results, strict=True)
        ]

    @staticmethod
    def _completion(
        request: GenerationRequest, result: str | Completion, latency_s: float, batch_size: int
    ) -> Completion:
        if isinstance(result, str):
            return Completion(
                request_id=request.request_id, text=result, latency_s=latency_s, batch_size=batch_size
            )
        return dataclasses.replace(
            result, request_id=request.request_id, latency_s=latency_s, batch_size=batch_size
        )
