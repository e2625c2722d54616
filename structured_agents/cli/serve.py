"""``sa serve``: run the OpenAI-compatible endpoint over the configured engine.

Options left out fall back to the settings (``SA_ENGINE__*``, ``SA_SERVE__*``); the API key
and the body limit are settings only (``SA_SERVE__API_KEY``, ``SA_SERVE__MAX_BODY_BYTES``), so
the key never shows in a process list. FastAPI,
uvicorn and the engine are imported only when the command runs, so ``sa --help`` stays fast.
"""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from structured_agents.errors import StructuredAgentsError

__all__ = ["serve"]


def serve(
    engine: Annotated[
        str | None, typer.Option(help="Engine: transformers, vllm, openai, scripted [SA_ENGINE__NAME].")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(help="Model path or id (scripted: a JSON list of replies) [SA_ENGINE__MODEL]."),
    ] = None,
    plugin: Annotated[
        str | None, typer.Option(help="Model plugin rendering chat requests [SA_SERVE__PLUGIN].")
    ] = None,
    host: Annotated[str | None, typer.Option(help="Interface to bind [SA_SERVE__HOST].")] = None,
    port: Annotated[int | None, typer.Option(help="Port to bind [SA_SERVE__PORT].")] = None,
    max_batch_size: Annotated[
        int | None, typer.Option(help="Most requests per engine call [SA_ENGINE__MAX_BATCH_SIZE].")
    ] = None,
    batch_wait_ms: Annotated[
        float | None, typer.Option(help="How long a batch waits for more requests [SA_SERVE__BATCH_WAIT_MS].")
    ] = None,
) -> None:
    """Serve /v1/completions, /v1/chat/completions and /v1/models over the engine (a CPU `vllm serve`)."""
    from structured_agents.settings import load_settings

    engine_overrides = {"name": engine, "model": model, "max_batch_size": max_batch_size}
    serve_overrides = {"plugin": plugin, "host": host, "port": port, "batch_wait_ms": batch_wait_ms}
    try:
        settings = load_settings(
            engine={k: v for k, v in engine_overrides.items() if v is not None},
            serve={k: v for k, v in serve_overrides.items() if v is not None},
        )
        import uvicorn

        from structured_agents.engines.factory import create_engine
        from structured_agents.kernel.engine import SamplingParams
        from structured_agents.plugins.registry import get_plugin
        from structured_agents.serve import create_app
        from structured_agents.serve.http import AcceptErrorsThrottled, RequestsInTime

        plugin_name = settings.serve.plugin
        get_plugin(plugin_name)  # fail now on an unknown name, not at the first chat request
        engine_settings = settings.engine
        if engine_settings.compile_timeout_s is None:  # a client's grammar compiles within a bound
            engine_settings = engine_settings.model_copy(
                update={"compile_timeout_s": settings.serve.compile_timeout_s}
            )
        app = create_app(
            create_engine(engine_settings),
            plugin=lambda: get_plugin(plugin_name),
            model_name=settings.engine.model or settings.engine.name,
            defaults=SamplingParams(
                max_new_tokens=settings.serve.default_max_tokens,
                temperature=settings.serve.temperature,
                seed=settings.engine.seed,
            ),
            max_batch_size=settings.engine.max_batch_size,
            batch_wait_ms=settings.serve.batch_wait_ms,
            api_key=api_key.get_secret_value() if (api_key := settings.serve.api_key) is not None else None,
            max_body_bytes=settings.serve.max_body_bytes,
            max_tokens=settings.serve.max_tokens,
        )
    except StructuredAgentsError as exc:
        typer.echo(f"sa serve: {exc}", err=True)
        raise typer.Exit(2) from exc
    logging.getLogger("asyncio").addFilter(AcceptErrorsThrottled())
    uvicorn.run(
        app,
        host=settings.serve.host,
        port=settings.serve.port,
        timeout_graceful_shutdown=max(1, round(settings.serve.shutdown_timeout_s)),
        http=RequestsInTime,
    )
