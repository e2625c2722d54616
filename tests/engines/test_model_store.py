"""ModelStore: conversions are cached, atomic, validated and rebuilt when damaged.

The store's logic runs against small fake sources (no model needed); the last test checks that
the real shipped model, already converted by the session engine, is found without converting.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from structured_agents.engines.model_store import MANIFEST_NAME, ModelStore, is_hf_model_dir
from structured_agents.errors import ConfigError, EngineError
from structured_agents.paths import cache_dir
from structured_agents.settings import CACHE_DIR_ENV

if TYPE_CHECKING:
    from structured_agents.engines.transformers_engine import TransformersEngine


@dataclass
class FakeSource:
    """Writes a tiny "model directory"; can fail half way like an interrupted conversion."""

    name: str = "fake"
    version: str = "1.0"
    fail: bool = False
    builds: list[str] = field(default_factory=list)

    def build(self, out_dir: Path, dtype: str) -> None:
        self.builds.append(dtype)
        (out_dir / "config.json").write_text("{}")
        if self.fail:
            raise RuntimeError("interrupted")
        (out_dir / "model.safetensors").write_bytes(b"\0" * 64)


def test_a_conversion_is_cached_and_reused(tmp_path: Path) -> None:
    source = FakeSource()
    entry = ModelStore(tmp_path).ensure(source, "bfloat16")
    assert entry == tmp_path / "models" / "fake" / "1.0-bfloat16"
    manifest = json.loads((entry / MANIFEST_NAME).read_text())
    assert manifest["files"] == {"config.json": 2, "model.safetensors": 64}
    assert (manifest["source"], manifest["version"], manifest["dtype"]) == ("fake", "1.0", "bfloat16")
    again = ModelStore(tmp_path)
    assert again.ensure(source, "bfloat16") == entry
    assert (again.conversions, source.builds) == (0, ["bfloat16"])
    assert ModelStore(tmp_path).ensure(source, "float32") != entry  # each dtype and version has its entry
    assert ModelStore(tmp_path).ensure(FakeSource(version="2.0"), "bfloat16").name == "2.0-bfloat16"
    assert is_hf_model_dir(entry)


@pytest.mark.parametrize("damage", ["truncate", "delete_manifest", "bad_manifest"])
def test_a_damaged_entry_is_detected_and_rebuilt(tmp_path: Path, damage: str) -> None:
    source = FakeSource()
    entry = ModelStore(tmp_path).ensure(source, "float32")
    if damage == "truncate":
        (entry / "model.safetensors").write_bytes(b"\0" * 10)
    elif damage == "delete_manifest":
        (entry / MANIFEST_NAME).unlink()
    else:
        (entry / MANIFEST_NAME).write_text("{not json")
    assert not ModelStore.is_complete(entry)
    store = ModelStore(tmp_path)
    assert store.ensure(source, "float32") == entry
    assert store.conversions == 1 and ModelStore.is_complete(entry)
    assert (entry / "model.safetensors").stat().st_size == 64


def test_an_interrupted_conversion_leaves_no_entry_and_no_partial_dir(tmp_path: Path) -> None:
    store = ModelStore(tmp_path)
    with pytest.raises(EngineError, match=r"converting model 'fake'.*interrupted"):
        store.ensure(FakeSource(fail=True), "bfloat16")
    folder = tmp_path / "models" / "fake"
    assert [p.name for p in folder.iterdir()] == [".lock"]
    leftover = folder / ".partial-1.0-bfloat16-999-dead"  # a dead process's conversion
    leftover.mkdir()
    store.ensure(FakeSource(), "bfloat16")
    assert not leftover.exists() and store.conversions == 1


def test_resolve_takes_local_directories_and_rejects_unknown_models(tmp_path: Path) -> None:
    store = ModelStore(tmp_path)
    local = tmp_path / "my-model"
    local.mkdir()
    with pytest.raises(ConfigError, match="neither a shipped model"):
        store.resolve(local, "float32")  # no config.json and weights yet
    (local / "config.json").write_text("{}")
    (local / "model.safetensors").write_bytes(b"\0")
    assert store.resolve(str(local), "float32") == local
    with pytest.raises(ConfigError, match="hub downloads are disabled"):
        store.resolve("google/gemma-3-270m", "float32")


def test_the_cache_root_follows_argument_then_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "env"))
    assert cache_dir() == tmp_path / "env"
    assert ModelStore().root == tmp_path / "env"
    assert ModelStore(tmp_path / "arg").root == tmp_path / "arg"
    monkeypatch.delenv(CACHE_DIR_ENV)
    assert cache_dir().name == "structured-agents"


@pytest.mark.model
def test_the_shipped_model_is_found_in_the_cache_without_converting(engine: TransformersEngine) -> None:
    store = ModelStore()
    started = time.perf_counter()
    assert store.resolve(None, engine.dtype) == engine.model_dir
    assert store.conversions == 0
    assert time.perf_counter() - started < 1.0
