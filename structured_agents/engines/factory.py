"""Build the engine that settings name: a registry of factories, imported lazily.

Each factory takes :class:`~structured_agents.settings.EngineSettings` and returns an
:class:`Engine`; the heavy modules (torch, vLLM, httpx) are imported only by the factory that
needs them, so choosing an engine never loads the others::

    engine = create_engine(load_settings().engine)

Register more with :func:`register_engine` (the engines are a :class:`~structured_agents.named.Named`
family, as plugins and tasks are).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from structured_agents.errors import ConfigError
from structured_agents.kernel.engine import Engine
from structured_agents.named import Named
from structured_agents.settings import EngineSettings

__all__ = ["EngineFactory", "available_engines", "create_engine", "register_engine"]

EngineFactory = Callable[[EngineSettings], Engine]


def _transformers(settings: EngineSettings) -> Engine:
    from structured_agents.engines.transformers_engine import TransformersEngine

    return TransformersEngine(
        model=settings.model,
        device=settings.device,
        dtype=settings.dtype,
        quantization=settings.quantization,
        max_batch_size=settings.max_batch_size,
        cache_dir=settings.cache_dir,
        compile_timeout_s=settings.compile_timeout_s,
        enforce_eager=settings.enforce_eager,
    )


def _vllm(settings: EngineSettings) -> Engine:
    from structured_agents.engines.vllm_engine import VLLMEngine

    if settings.model is None:
        raise ConfigError(
            "SA_ENGINE__MODEL is required for the vllm engine (a model path or hub id), got None"
        )
    return VLLMEngine(
        settings.model,
        dtype=settings.dtype,
        max_num_seqs=settings.max_batch_size,
        seed=settings.seed,
        enforce_eager=settings.enforce_eager,
    )


def _openai(settings: EngineSettings) -> Engine:
    from structured_agents.engines.openai_compat import OpenAICompatEngine, RetryPolicy

    return OpenAICompatEngine(
        settings.base_url,
        model=settings.model,
        endpoint=settings.endpoint,
        api_key=settings.api_key.get_secret_value() if settings.api_key is not None else None,
        timeout_s=settings.timeout_s,
        retry=RetryPolicy(max_retries=settings.max_retries),
        max_concurrency=settings.max_batch_size,
    )


def _scripted(settings: EngineSettings) -> Engine:
    """A :class:`ScriptedEngine` playing the JSON script at ``SA_ENGINE__MODEL`` (see
    :mod:`structured_agents.engines.script_file`)."""
    from structured_agents.engines.script_file import load_script

    if settings.model is None:
        raise ConfigError("SA_ENGINE__MODEL must name a JSON script for the scripted engine")
    return load_script(Path(settings.model))


_ENGINES: Named[[EngineSettings], Engine] = Named(
    "engine",
    {
        "transformers": "structured_agents.engines.factory:_transformers",
        "vllm": "structured_agents.engines.factory:_vllm",
        "openai": "structured_agents.engines.factory:_openai",
        "scripted": "structured_agents.engines.factory:_scripted",
    },
    lambda name, known: ConfigError(
        f"SA_ENGINE__NAME={name!r} is not a known engine; available: {', '.join(known)}"
    ),
)


def register_engine(name: str, factory: EngineFactory, *, replace: bool = False) -> None:
    """Make ``create_engine`` build ``factory(settings)`` when ``settings.name == name``."""
    _ENGINES.register(name, factory, replace=replace)


def available_engines() -> list[str]:
    """Names ``create_engine`` accepts."""
    return _ENGINES.names()


def create_engine(settings: EngineSettings) -> Engine:
    """The engine ``settings.name`` names, built from ``settings``."""
    return _ENGINES.get(settings.name, settings)
