"""Settings: the one place where structured-agents reads environment variables.

Every variable starts with ``SA_``; nested groups use ``__``::

    SA_ENGINE__NAME=openai SA_ENGINE__BASE_URL=http://gpu-box:8000/v1 sa ...
    SA_SERVE__PORT=9000 SA_SERVE__PLUGIN=qwen sa serve
    SA_DATABASE_URL=postgresql://sa@db/sa SA_REDIS_URL=redis://redis:6379/0 sa worker gpu
    SA_API__TOKEN=... SA_API__ROOTS='["/code"]' uvicorn --factory structured_agents.api.app:create_app

List settings (``SA_API__ROOTS``, ``SA_API__BUNDLE_DIRS``, ``SA_API__CORS_ORIGINS``) take a JSON
list, as pydantic-settings parses them.

Other modules take a :class:`Settings` (or one of its groups) as an argument and never read
the environment themselves. Invalid values raise :class:`~structured_agents.errors.ConfigError`
naming the variable and the value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from structured_agents.errors import ConfigError

__all__ = [
    "CACHE_DIR_ENV",
    "ApiSettings",
    "EngineSettings",
    "ServeSettings",
    "Settings",
    "WorkerSettings",
    "load_settings",
]

ENV_PREFIX = "SA_"
ENV_NESTED_DELIMITER = "__"
CACHE_DIR_ENV = "STRUCTURED_AGENTS_CACHE_DIR"
"""The cache root's other name (``SA_CACHE_DIR`` is the first); an explicit directory wins."""


class EngineSettings(BaseModel):
    """Which engine decodes, on what model, with which defaults (``SA_ENGINE__*``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "transformers"
    """Engine registered in ``engines.factory``: ``transformers``, ``vllm``, ``openai``, ``scripted``."""
    model: str | None = None
    """Model path or hub id (``vllm``, ``transformers``), or the served model name (``openai``);
    ``None`` means the engine's default (the shipped small model for ``transformers``)."""
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """Where the ``transformers`` engine runs; ``auto`` picks CUDA when available."""
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    """Weights dtype of the local engines (``transformers``, ``vllm``)."""
    quantization: Literal["auto", "none", "int8"] = "auto"
    """``transformers`` engine: ``int8`` decodes with int8 copies of the linear layers (CPU,
    bfloat16); ``auto`` takes it wherever it runs, ``none`` never."""
    max_batch_size: int = Field(default=8, ge=1)
    """Most requests decoded in one ``generate`` call (vLLM's ``max_num_seqs``, server batches)."""
    compile_timeout_s: float | None = Field(default=None, gt=0)
    """Compile grammars in child processes, each refused after this many seconds (the
    transformers engine; ``sa serve`` sets ``SA_SERVE__COMPILE_TIMEOUT_S`` when this is unset).
    None: compile in the engine's own threads, without a time bound (the bundles' grammars)."""
    enforce_eager: bool = False
    """No CUDA graphs: the ``transformers`` engine decodes on its eager loop, vLLM with
    ``enforce_eager`` (slower steps; for debugging, or a model the graph step mishandles)."""
    seed: int | None = None
    """vLLM's engine seed, and ``sa serve``'s default sampling seed."""
    cache_dir: Path | None = None
    """``transformers`` engine: where shipped models are converted to (``None``: the user cache)."""
    base_url: str = "http://127.0.0.1:8000/v1"
    """``openai`` engine: the server's API root, up to and including ``/v1``."""
    endpoint: Literal["completions", "chat"] = "completions"
    """``openai`` engine: ``completions`` sends the rendered prompt, ``chat`` sends messages and tools."""
    api_key: SecretStr | None = None
    """``openai`` engine: bearer token, if the server wants one."""
    timeout_s: float = Field(default=120.0, gt=0)
    """``openai`` engine: longest wait, in seconds, to connect or for the server's response."""
    max_retries: int = Field(default=3, ge=0)
    """``openai`` engine: retries after the first attempt on 429, 5xx and connection errors."""


class ServeSettings(BaseModel):
    """The ``sa serve`` HTTP endpoint (``SA_SERVE__*``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = "127.0.0.1"
    """Interface to bind."""
    port: int = Field(default=8000, ge=0, le=65535)
    """TCP port to bind (0 picks a free one)."""
    plugin: str = "function_gemma"
    """Model plugin that renders chat requests into the model's prompt and parses tool calls."""
    batch_wait_ms: float = Field(default=10.0, ge=0)
    """How long the batcher waits for more requests after the first one of a batch (engines
    that do not stream; the others admit each request between decode steps)."""
    api_key: SecretStr | None = None
    """Bearer token every ``/v1`` request must send (``Authorization: Bearer KEY``), as
    ``vllm serve --api-key``; None serves without a key (keep ``host`` on loopback then)."""
    max_body_bytes: int = Field(default=1 << 20, ge=1)
    """Largest request body accepted, in bytes; larger ones get a 413."""
    default_max_tokens: int = Field(default=256, ge=1)
    """Token budget of a request that sets no ``max_tokens`` (a bundle's turns carry their own)."""
    temperature: float = Field(default=0.0, ge=0.0)
    """Sampling temperature of a request that sets none; 0 is greedy."""
    max_tokens: int = Field(default=4096, ge=1)
    """Most tokens a request may ask one choice for (``max_tokens``, ``max_completion_tokens``);
    more is a 400 naming the field."""
    compile_timeout_s: float = Field(default=10.0, gt=0)
    """Longest a client's grammar may take to compile (in a child process, killed after it);
    ``SA_ENGINE__COMPILE_TIMEOUT_S`` wins where set."""
    shutdown_timeout_s: float = Field(default=10.0, gt=0)
    """On SIGTERM, how long requests in flight may go on before they are cut and the server exits."""


class WorkerSettings(BaseModel):
    """The distributed workers: batching, retries, broker timeouts (``SA_WORKERS__*``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    turns_in_flight: int = Field(default=0, ge=0)
    """Model turns the llm worker holds at once (taken from the queue, decoding or being
    committed; its prefetch); 0 means twice ``SA_ENGINE__MAX_BATCH_SIZE``, so requests wait
    inside the engine for the next free row."""
    batch_wait_s: float = Field(default=0.05, ge=0)
    """Engines that do not stream (scripted, function engines): longest wait, in seconds, for
    more model turns before a partial batch is decoded; streaming engines admit turns between
    decode steps and never wait."""
    max_attempts: int = Field(default=5, ge=1)
    """Deliveries of one step before its run is marked failed with the step's last error."""
    retry_backoff_s: float = Field(default=1.0, gt=0)
    """First retry delay of a failed step, in seconds; doubles on each attempt."""
    retry_backoff_max_s: float = Field(default=30.0, gt=0)
    """Longest retry delay, in seconds."""
    visibility_timeout_s: float = Field(default=600.0, gt=0)
    """Seconds before the broker redelivers a message a lost worker had taken (acks_late); keep
    it above ``tool_time_limit_s``, or a slow tool call is delivered a second time meanwhile."""
    stale_after_s: float = Field(default=900.0, gt=0)
    """A running run whose state has not moved for this long gets its next step sent again; keep
    it above ``tool_time_limit_s`` and the longest wait in the ``llm`` queue."""
    sweep_interval_s: float = Field(default=60.0, gt=0)
    """How often the beat sends the sweep that looks for stale runs."""
    tool_time_limit_s: float = Field(default=300.0, gt=0)
    """Hard limit, in seconds, of one tool-call task (the worker process is replaced after it)."""
    task_events: bool = True
    """Workers send Celery task events, which Flower shows live (tasks, their states, runtimes);
    False saves one broker publish per step."""
    metrics_port: int = Field(default=0, ge=0, le=65535)
    """Port of the llm worker's Prometheus endpoint (``/metrics``: model turns, tokens, turn
    seconds and its engine's counters); 0: none."""
    metrics_host: str = "127.0.0.1"
    """Interface the llm worker's metrics endpoint binds (``0.0.0.0`` in a container)."""
    agent_engine: EngineSettings | None = None
    """The engine a tools worker runs agents as tools on (``SA_WORKERS__AGENT_ENGINE__NAME``,
    ``..._BASE_URL``...), built on the first such call: typically ``openai`` at the model
    server of the GPU box (``sa serve`` or vLLM's). None: the tools workers load no model, and
    an agent run as a tool is an error result naming this setting."""


class ApiSettings(BaseModel):
    """The HTTP API of distributed runs: who may call it, and what it may read (``SA_API__*``).

    ``create_app`` refuses to start without a ``token`` unless ``auth`` is ``none``; these
    settings alone load without one, since the workers read the same environment.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    token: SecretStr | None = None
    """Bearer token every request must send (``Authorization: Bearer TOKEN``): at least 16
    printable ASCII characters, e.g. ``python3 -c 'import secrets; print(secrets.token_urlsafe(32))'``.
    Required unless ``auth`` is ``none``."""
    auth: Literal["bearer", "none"] = "bearer"
    """``bearer``: every endpoint requires ``token``. ``none``: no authentication at all, for a
    trusted network only (anyone who reaches the port can enqueue and read results)."""
    roots: tuple[Path, ...] = ()
    """Absolute directories a batch's codebase root must lie under, after resolving ``..`` and
    symlinks (JSON list, e.g. ``["/code"]``). Empty: every root is refused (403)."""
    bundle_dirs: tuple[Path, ...] = ()
    """Absolute directories a bundle given by path must lie under (JSON list, e.g.
    ``["/bundles"]``); their bundles are also found by name, before the shipped ones. Empty:
    only the shipped bundles, by name."""
    max_body_bytes: int = Field(default=1024 * 1024, ge=1)
    """Largest request body, in bytes; a larger one is refused with 413 while it is read."""
    cors_origins: tuple[str, ...] = ()
    """Origins browsers may call the API from (JSON list, e.g. ``["https://ui.example"]``).
    Empty: no CORS headers, so browsers refuse cross-origin reads."""

    @field_validator("token")
    @classmethod
    def _token_shape(cls, token: SecretStr | None) -> SecretStr | None:
        value = "" if token is None else token.get_secret_value()
        if token is not None and (
            len(value) < 16 or value != value.strip() or not all(" " <= char <= "~" for char in value)
        ):
            raise ValueError("must be at least 16 printable ASCII characters, with no space at either end")
        return token

    @field_validator("roots", "bundle_dirs")
    @classmethod
    def _absolute(cls, paths: tuple[Path, ...]) -> tuple[Path, ...]:
        relative = [str(path) for path in paths if not path.is_absolute()]
        if relative:
            raise ValueError(f"must be absolute directories, not {', '.join(relative)}")
        return paths


class Settings(BaseSettings):
    """All settings, from ``SA_*`` environment variables or keyword arguments."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter=ENV_NESTED_DELIMITER,
        extra="forbid",
        frozen=True,
    )

    engine: EngineSettings = EngineSettings()
    serve: ServeSettings = ServeSettings()
    workers: WorkerSettings = WorkerSettings()
    api: ApiSettings = ApiSettings()
    database_url: str | None = None
    """Database of batches and runs (``SA_DATABASE_URL``); None: the embedded SQLite file."""
    cache_dir: Path | None = Field(
        default=None, validation_alias=AliasChoices("SA_CACHE_DIR", CACHE_DIR_ENV, "cache_dir")
    )
    """Root of the cache (converted models, ``.pym`` check results): ``SA_CACHE_DIR``, or
    ``STRUCTURED_AGENTS_CACHE_DIR`` (a container's volume, a CI cache); None: the platform's
    user cache directory (see :mod:`structured_agents.paths`)."""
    redis_url: str = "redis://127.0.0.1:6379/0"
    """Broker of the distributed workers (``SA_REDIS_URL``)."""


def _env_name(loc: tuple[int | str, ...]) -> str:
    return ENV_PREFIX + ENV_NESTED_DELIMITER.join(str(part) for part in loc).upper()


def _is_secret(loc: tuple[int | str, ...]) -> bool:
    model: Any = Settings
    for part in loc:
        field = getattr(model, "model_fields", {}).get(part)
        if field is None:
            return False
        if SecretStr in getattr(field.annotation, "__args__", (field.annotation,)):
            return True
        model = field.annotation
    return False


def load_settings(**overrides: Any) -> Settings:
    """Read the settings; keyword arguments (``engine={...}``) override the environment.

    Raises :class:`ConfigError` naming each invalid variable and its value (a secret's value
    is never shown).
    """
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        problems = "; ".join(
            f"{_env_name(err['loc'])}{'' if _is_secret(err['loc']) else '=' + repr(err.get('input'))}: "
            f"{err['msg']}"
            for err in exc.errors()
        )
        raise ConfigError(f"invalid settings: {problems}") from exc
    except SettingsError as exc:
        raise ConfigError(
            f"invalid settings: {exc}: {exc.__cause__}; list settings take a JSON list, "
            """e.g. SA_API__ROOTS='["/code"]'"""
        ) from exc
