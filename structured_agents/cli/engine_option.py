"""The ``--engine`` option of the commands that decode (``sa run``, ``sa harness``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from structured_agents.errors import ConfigError

if TYPE_CHECKING:
    from structured_agents.settings import Settings

__all__ = ["EngineOption", "settings_with_engine"]

EngineOption = Annotated[
    str | None, typer.Option("--engine", help="Engine: transformers, vllm, openai [SA_ENGINE__NAME].")
]


def settings_with_engine(engine: str | None) -> Settings:
    """The settings, with ``--engine`` (when given) as the engine's name; ``ConfigError`` for a
    name that is not a registered engine (the test-only ``scripted`` is not offered)."""
    from structured_agents.engines.factory import available_engines
    from structured_agents.settings import load_settings

    choices = [name for name in available_engines() if name != "scripted"]
    if engine is not None and engine not in choices:
        raise ConfigError(f"--engine must be one of {', '.join(choices)}, got {engine!r}")
    return load_settings(engine={"name": engine} if engine else {})
