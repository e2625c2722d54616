"""The engine of a worker process, and the scripted engine distributed runs use without a model.

A distributed run's turns are decoded by whichever worker holds its message, possibly a new
process after a crash, so a scripted engine cannot keep each conversation's position in
memory as :class:`~structured_agents.engines.ScriptedEngine` does. :class:`TurnScriptEngine`
reads the turn from the request id the kernel builds (``"{run_id}:{turn}"``) and plays that
turn of the script: any worker, any number of times, gives the same answer.

``SA_ENGINE__NAME=scripted`` makes :func:`create_worker_engine` build one from the JSON file at
``SA_ENGINE__MODEL``: either a list of reply strings (the format of ``engines.factory``), or::

    {"turns": ["<reply 1>", "<reply 2>"],
     "delay_s": 0.05,                               # sleep once per generate (a model's time)
     "when_prompt_contains": {"MARKER": ["..."]}}   # another script for prompts with MARKER

A turn past the end of its script raises ``EngineError`` for that request.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from structured_agents.engines.factory import create_engine
from structured_agents.engines.scripted import approx_token_count
from structured_agents.errors import ConfigError, EngineError
from structured_agents.kernel.engine import Completion, Engine, GenerationRequest
from structured_agents.settings import EngineSettings
from structured_agents.types import TokenUsage

__all__ = ["TurnScriptEngine", "create_worker_engine", "load_turn_script"]


class TurnScriptEngine:
    """An :class:`Engine` that answers turn ``n`` of every run with reply ``n`` of its script."""

    def __init__(
        self,
        turns: Sequence[str],
        *,
        when_prompt_contains: Mapping[str, Sequence[str]] | None = None,
        delay_s: float = 0.0,
    ) -> None:
        if delay_s < 0:
            raise ConfigError(f"TurnScriptEngine.delay_s must be >= 0, got {delay_s}")
        self.turns = tuple(turns)
        self.when_prompt_contains = {k: tuple(v) for k, v in (when_prompt_contains or {}).items()}
        self.delay_s = delay_s
        self.batch_sizes: list[int] = []
        """Size of every batch ``generate`` was called with, in order."""

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Reply ``turn`` of each request's script; one ``delay_s`` sleep for the whole batch."""
        started = time.perf_counter()
        self.batch_sizes.append(len(requests))
        texts = [self._reply(request) for request in requests]
        if self.delay_s:
            time.sleep(self.delay_s)
        latency = time.perf_counter() - started
        return [
            Completion(
                request_id=request.request_id,
                text=text,
                usage=TokenUsage(approx_token_count(request.prompt), approx_token_count(text)),
                latency_s=latency,
                batch_size=len(requests),
            )
            for request, text in zip(requests, texts, strict=True)
        ]

    def _reply(self, request: GenerationRequest) -> str:
        _, sep, suffix = request.request_id.rpartition(":")
        if not sep or not suffix.isdigit() or int(suffix) < 1:
            raise EngineError(
                f"TurnScriptEngine: request id {request.request_id!r} does not end in ':<turn>'"
            )
        turn = int(suffix)
        script = next(
            (turns for marker, turns in self.when_prompt_contains.items() if marker in request.prompt),
            self.turns,
        )
        if turn > len(script):
            raise EngineError(
                f"TurnScriptEngine: the script has {len(script)} turns, "
                f"request {request.request_id} asks for turn {turn}"
            )
        return script[turn - 1]


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where} must be a JSON list of reply strings")
    return value


def load_turn_script(path: Path) -> TurnScriptEngine:
    """The engine the JSON script at ``path`` describes (see the module docstring)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"SA_ENGINE__MODEL={str(path)!r}: cannot read the script: {exc}") from exc
    where = f"SA_ENGINE__MODEL={str(path)!r}"
    if isinstance(data, list):
        return TurnScriptEngine(_strings(data, where))
    if not isinstance(data, dict) or set(data) - {"turns", "delay_s", "when_prompt_contains"}:
        raise ConfigError(f"{where}: expected a list or an object with turns, delay_s, when_prompt_contains")
    markers = data.get("when_prompt_contains") or {}
    if not isinstance(markers, dict):
        raise ConfigError(f"{where}: when_prompt_contains must map markers to reply lists")
    delay = data.get("delay_s", 0.0)
    if not isinstance(delay, int | float):
        raise ConfigError(f"{where}: delay_s must be a number, got {delay!r}")
    return TurnScriptEngine(
        _strings(data.get("turns"), f"{where}: turns"),
        when_prompt_contains={str(k): _strings(v, f"{where}: {k}") for k, v in markers.items()},
        delay_s=float(delay),
    )


def create_worker_engine(settings: EngineSettings) -> Engine:
    """The engine of a worker: the turn-keyed script for ``scripted``, else ``create_engine``."""
    if settings.name.strip().lower() == "scripted":
        if settings.model is None:
            raise ConfigError("SA_ENGINE__MODEL must name a JSON script for the scripted engine")
        return load_turn_script(Path(settings.model))
    return create_engine(settings)
