"""Settings come from SA_* environment variables; the factory builds the engine they name."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from structured_agents.engines.factory import available_engines, create_engine, register_engine
from structured_agents.engines.function import FunctionEngine
from structured_agents.engines.openai_compat import OpenAICompatEngine
from structured_agents.engines.scripted import ScriptedEngine
from structured_agents.errors import ConfigError, EngineError
from structured_agents.kernel.engine import Completion, Engine, GenerationRequest
from structured_agents.settings import ApiSettings, EngineSettings, Settings, load_settings


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("SA_"):
            monkeypatch.delenv(name)


def test_defaults_without_environment() -> None:
    settings = load_settings()
    assert settings.engine.name == "transformers"
    assert settings.engine.model is None
    assert settings.serve.port == 8000
    serve = settings.serve
    assert (serve.default_max_tokens, serve.temperature, settings.engine.seed) == (256, 0.0, None)


def test_nested_values_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SA_ENGINE__NAME", "openai")
    monkeypatch.setenv("SA_ENGINE__BASE_URL", "http://gpu-box:9000/v1")
    monkeypatch.setenv("SA_ENGINE__API_KEY", "s3cret")
    monkeypatch.setenv("SA_ENGINE__MAX_RETRIES", "5")
    monkeypatch.setenv("SA_SERVE__TEMPERATURE", "0.7")
    monkeypatch.setenv("SA_ENGINE__SEED", "11")
    monkeypatch.setenv("SA_SERVE__PORT", "9100")
    monkeypatch.setenv("SA_SERVE__BATCH_WAIT_MS", "25")
    settings = load_settings()
    assert settings.engine.name == "openai"
    assert settings.engine.base_url == "http://gpu-box:9000/v1"
    assert settings.engine.api_key is not None and settings.engine.api_key.get_secret_value() == "s3cret"
    assert "s3cret" not in repr(settings)
    assert settings.engine.max_retries == 5
    serve = settings.serve
    assert (serve.default_max_tokens, serve.temperature, settings.engine.seed) == (256, 0.7, 11)
    assert (settings.serve.port, settings.serve.batch_wait_ms) == (9100, 25.0)


def test_keyword_overrides_merge_with_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SA_ENGINE__MODEL", "/models/gemma")
    settings = load_settings(engine={"name": "scripted"})
    assert (settings.engine.name, settings.engine.model) == ("scripted", "/models/gemma")


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("SA_ENGINE__DEVICE", "tpu", "SA_ENGINE__DEVICE='tpu'"),
        ("SA_ENGINE__MAX_BATCH_SIZE", "0", "SA_ENGINE__MAX_BATCH_SIZE='0'"),
        ("SA_SERVE__PORT", "http", "SA_SERVE__PORT='http'"),
        ("SA_ENGINE__TIMEOUT_S", "-1", "SA_ENGINE__TIMEOUT_S='-1'"),
    ],
)
def test_invalid_values_name_the_variable_and_value(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, expected: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=expected):
        load_settings()


def test_unknown_keyword_is_refused() -> None:
    with pytest.raises(ConfigError, match="SA_ENGINE__MODLE"):
        load_settings(engine={"modle": "x"})


def test_factory_builds_openai_engine_from_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SA_ENGINE__NAME", "openai")
    monkeypatch.setenv("SA_ENGINE__BASE_URL", "http://127.0.0.1:1/v1/")
    monkeypatch.setenv("SA_ENGINE__ENDPOINT", "chat")
    monkeypatch.setenv("SA_ENGINE__MAX_RETRIES", "0")
    engine = create_engine(load_settings().engine)
    assert isinstance(engine, OpenAICompatEngine)
    assert engine.url == "http://127.0.0.1:1/v1/chat/completions"
    assert engine.retry.max_retries == 0


def test_factory_builds_scripted_engine_from_a_json_script(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["first", "second"]))
    engine = create_engine(EngineSettings(name="scripted", model=str(script)))
    assert isinstance(engine, ScriptedEngine)
    texts = [c.text for c in engine.generate([GenerationRequest(prompt="a"), GenerationRequest(prompt="b")])]
    assert texts == ["first", "second"]


def test_factory_errors_name_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"SA_ENGINE__NAME='tpu-engine'.*openai"):
        create_engine(EngineSettings(name="tpu-engine"))
    with pytest.raises(ConfigError, match="SA_ENGINE__MODEL is required for the vllm engine"):
        create_engine(EngineSettings(name="vllm"))
    (tmp_path / "bad.json").write_text('{"not": "a list"}')
    with pytest.raises(ConfigError, match=r"bad\.json.*expected a JSON list of strings"):
        create_engine(EngineSettings(name="scripted", model=str(tmp_path / "bad.json")))


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_vllm_factory_without_vllm_installed_raises_engine_error() -> None:
    with pytest.raises(EngineError, match=r"\[gpu\] extra"):
        create_engine(EngineSettings(name="vllm", model="Qwen/Qwen3-0.6B"))


def test_registered_engines_are_built_by_name() -> None:
    def echo(settings: EngineSettings) -> Engine:
        def reply(request: GenerationRequest, info: object) -> str:
            return f"{settings.model}:{request.prompt}"

        return FunctionEngine(reply)

    register_engine("echo-test", echo)
    assert "echo-test" in available_engines()
    with pytest.raises(ConfigError, match="already registered"):
        register_engine("echo-test", echo)
    engine = create_engine(Settings(engine=EngineSettings(name="Echo-Test", model="m")).engine)
    completions: Sequence[Completion] = engine.generate([GenerationRequest(prompt="hi")])
    assert completions[0].text == "m:hi"


def test_api_settings_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SA_API__TOKEN", "a-token-of-24-characters")
    monkeypatch.setenv("SA_API__ROOTS", '["/code", "/srv/repos"]')
    monkeypatch.setenv("SA_API__BUNDLE_DIRS", '["/bundles"]')
    monkeypatch.setenv("SA_API__CORS_ORIGINS", '["https://ui.example"]')
    monkeypatch.setenv("SA_API__MAX_BODY_BYTES", "2048")
    api = load_settings().api
    assert api.token is not None and api.token.get_secret_value() == "a-token-of-24-characters"
    assert api.roots == (Path("/code"), Path("/srv/repos")) and api.bundle_dirs == (Path("/bundles"),)
    assert (api.cors_origins, api.max_body_bytes, api.auth) == (("https://ui.example",), 2048, "bearer")
    assert "a-token-of-24-characters" not in repr(load_settings())
    defaults = ApiSettings()
    assert (defaults.token, defaults.roots, defaults.bundle_dirs, defaults.cors_origins) == (None, (), (), ())
    assert defaults.max_body_bytes == 1024 * 1024


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("SA_API__TOKEN", "short-secret", r"SA_API__TOKEN: .*at least 16 printable ASCII"),
        ("SA_API__TOKEN", " a token that starts with a space", r"SA_API__TOKEN: .*no space at either end"),
        ("SA_API__TOKEN", "a token with a tab\tinside", r"SA_API__TOKEN: .*printable ASCII"),
        ("SA_API__ROOTS", '["code"]', r"SA_API__ROOTS=\['code'\]: .*must be absolute directories, not code"),
        ("SA_API__ROOTS", "/code", r"list settings take a JSON list, e\.g\. SA_API__ROOTS='\[\"/code\"\]'"),
        ("SA_API__AUTH", "basic", r"SA_API__AUTH='basic'"),
        ("SA_API__MAX_BODY_BYTES", "0", r"SA_API__MAX_BODY_BYTES='0'"),
    ],
)
def test_invalid_api_settings_name_the_variable_and_never_show_a_secret(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, expected: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=expected) as caught:
        load_settings()
    if variable == "SA_API__TOKEN":
        assert value not in str(caught.value)
