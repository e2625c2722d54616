"""The scripted engine of ``SA_ENGINE__NAME=scripted``: a JSON script file at ``SA_ENGINE__MODEL``.

The file is either a list of reply strings, or::

    {"turns": ["<reply 1>", "<reply 2>"],
     "delay_s": 0.05,                               # sleep once per generate (a model's time)
     "when_prompt_contains": {"MARKER": ["..."]}}   # another script for prompts with MARKER

Turn ``n`` of every run gets reply ``n`` (read from the request id the kernel builds, so any
worker, any number of times, gives the same answer); requests without a turn in their id
(``sa serve``) play the script in order. A turn past the end of its script raises
``EngineError`` for that request. The engine keeps no request it was sent, so its memory stays
flat however long a worker runs.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from pathlib import Path
from typing import Any

from structured_agents.engines.scripted import Script, ScriptedEngine, request_turn
from structured_agents.errors import ConfigError
from structured_agents.kernel import GenerationRequest

__all__ = ["load_script"]

_KEYS = {"turns", "delay_s", "when_prompt_contains"}


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where} must be a JSON list of reply strings")
    return value


def load_script(path: Path) -> ScriptedEngine:
    """The engine the JSON script at ``path`` describes (see the module docstring)."""
    where = f"SA_ENGINE__MODEL={str(path)!r}"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{where}: cannot read the script: {exc}") from exc
    if isinstance(data, list):
        data = {"turns": data}
    if not isinstance(data, dict) or set(data) - _KEYS:
        raise ConfigError(f"{where}: expected a JSON list of strings, or an object with {sorted(_KEYS)}")
    turns = _strings(data.get("turns"), f"{where}: turns")
    markers = data.get("when_prompt_contains") or {}
    if not isinstance(markers, dict):
        raise ConfigError(f"{where}: when_prompt_contains must map markers to reply lists")
    scripts = {"": turns, **{str(k): _strings(v, f"{where}: {k}") for k, v in markers.items()}}
    delay = data.get("delay_s", 0.0)
    if not isinstance(delay, int | float):
        raise ConfigError(f"{where}: delay_s must be a number, got {delay!r}")

    def marker(request: GenerationRequest) -> str:
        return next((m for m in scripts if m and m in request.prompt), "")

    def script(key: Hashable) -> Script:
        return scripts[str(key)]

    # A worker or ``sa serve`` plays the script for as long as it runs: keep no request.
    return ScriptedEngine(script, key=marker, turn_of=request_turn, delay_s=float(delay), keep_requests=False)
