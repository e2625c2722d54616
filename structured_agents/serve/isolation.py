"""Keep one client's bad request from failing the other requests batched with it.

The server batches requests of unrelated clients into one ``generate`` call, and an engine
fails a whole call when any request in it fails (a grammar XGrammar cannot compile, a prompt
too long...). :class:`FailureIsolatingEngine` retries a failed batch one request at a time, so
only the requests that fail alone fail; each of those becomes a ``finish_reason="error"``
completion whose metadata says why, and the server answers that client alone with an error.
The retry costs one ``generate`` per request of the failed batch, paid only when a batch fails.
"""

from __future__ import annotations

from collections.abc import Sequence

from structured_agents.errors import GrammarError
from structured_agents.kernel.engine import Completion, Engine, GenerationRequest
from structured_agents.kernel.streaming import StreamingEngine

__all__ = ["FailureIsolatingEngine", "is_grammar_failure"]


def is_grammar_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is (or wraps) a grammar that could not be built or compiled."""
    return isinstance(exc, GrammarError) or isinstance(exc.__cause__, GrammarError)


class FailureIsolatingEngine:
    """An :class:`Engine` that turns a failed batch into per-request results."""

    def __init__(self, inner: Engine) -> None:
        self.inner = inner

    @staticmethod
    def around(inner: Engine) -> Engine:
        """``inner`` when it streams (it fails requests one by one already), else this wrapper."""
        return inner if isinstance(inner, StreamingEngine) else FailureIsolatingEngine(inner)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """The inner engine's completions; when the batch fails, each request decoded alone."""
        try:
            return self.inner.generate(requests)
        except Exception:
            if len(requests) == 1:
                raise
        return [self._alone(request) for request in requests]

    def _alone(self, request: GenerationRequest) -> Completion:
        try:
            (completion,) = self.inner.generate([request])
        except Exception as exc:
            return Completion(
                request_id=request.request_id,
                text="",
                finish_reason="error",
                metadata={"error": f"{type(exc).__name__}: {exc}", "grammar_error": is_grammar_failure(exc)},
            )
        return completion
