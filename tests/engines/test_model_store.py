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

from structured_agents.engines.model_store import CHECKS_VERSION, MANIFEST_NAME, ModelStore, is_hf_model_dir
from structured_agents.errors import ConfigError, EngineError
from structured_agents.paths import cache_dir
from structured_agents.settings import CACHE_DIR_ENV

if TYPE_CHECKING:
    from structured_agents.engines.transformers_engine import TransformersEngine


@dataclass
class FakeSource:
    """Writes a tiny "model directory"; can fail half way like an interrupted conversion, or
    convert wrongly (a weights file its own check refuses, as a broken tokenizer would be)."""

    name: str = "fake"
    version: str = "1.0"
    fail: bool = False
    broken: bool = False
    builds: list[str] = field(default_factory=list)
    verified: int = 0

    def build(self, out_dir: Path, dtype: str) -> None:
        self.builds.append(dtype)
        (out_dir / "config.json").write_text("{}")
        if self.fail:
            raise RuntimeError("interrupted")
        (out_dir / "model.safetensors").write_bytes((b"\1" if self.broken else b"\0") * 64)

    def verify(self, model_dir: Path) -> None:
        self.verified += 1
        if (model_dir / "model.safetensors").read_bytes()[:1] == b"\1":
            raise EngineError("the weights are all ones (transformers 0.0)")


def test_a_conversion_is_cached_and_reused(tmp_path: Path) -> None:
    source = FakeSource()
    entry = ModelStore(tmp_path).ensure(source, "bfloat16")
    assert entry == tmp_path / "models" / "fake" / "1.0-bfloat16"
    manifest = json.loads((entry / MANIFEST_NAME).read_text())
    assert manifest["files"] == {"config.json": 2, "model.safetensors": 64}
    assert manifest["verified"] == CHECKS_VERSION and source.verified == 1
    assert (manifest["source"], manifest["version"], manifest["dtype"]) == ("fake", "1.0", "bfloat16")
    again = ModelStore(tmp_path)
    assert again.ensure(source, "bfloat16") == entry
    assert (again.conversions, source.builds, source.verified) == (0, ["bfloat16"], 1)
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


def test_a_conversion_failing_its_checks_is_refused_and_not_kept(tmp_path: Path) -> None:
    store = ModelStore(tmp_path)
    with pytest.raises(EngineError, match=r"converting model 'fake' into .* failed its check: .*all ones"):
        store.ensure(FakeSource(broken=True), "float32")
    assert [p.name for p in (tmp_path / "models" / "fake").iterdir()] == [".lock"]
    assert store.conversions == 0


def _unchecked_entry(tmp_path: Path, broken: bool) -> Path:
    """A finished entry as a store before the checks wrote it: no ``verified`` in the manifest."""
    entry = ModelStore(tmp_path).ensure(FakeSource(), "float32")
    manifest = json.loads((entry / MANIFEST_NAME).read_text())
    del manifest["verified"]
    (entry / MANIFEST_NAME).write_text(json.dumps(manifest))
    if broken:
        (entry / "model.safetensors").write_bytes(b"\1" * 64)  # same size: the manifest sees nothing
    assert ModelStore.is_complete(entry) and not ModelStore.is_verified(entry)
    return entry


def test_an_entry_from_before_the_checks_is_checked_on_load_and_kept_when_it_passes(tmp_path: Path) -> None:
    entry = _unchecked_entry(tmp_path, broken=False)
    source, store = FakeSource(), ModelStore(tmp_path)
    assert store.ensure(source, "float32") == entry
    assert (store.conversions, source.builds, source.verified) == (0, [], 1)
    assert ModelStore.is_verified(entry)
    assert ModelStore(tmp_path).ensure(source, "float32") == entry and source.verified == 1


def test_a_broken_entry_from_before_the_checks_is_rebuilt_on_load(tmp_path: Path) -> None:
    entry = _unchecked_entry(tmp_path, broken=True)
    source, store = FakeSource(), ModelStore(tmp_path)
    assert store.ensure(source, "float32") == entry
    assert (store.conversions, source.builds, source.verified) == (1, ["float32"], 2)
    assert (entry / "model.safetensors").read_bytes() == b"\0" * 64 and ModelStore.is_verified(entry)


def test_a_broken_entry_is_refused_when_the_conversion_is_broken_too(tmp_path: Path) -> None:
    _unchecked_entry(tmp_path, broken=True)
    with pytest.raises(EngineError, match="failed its check"):
        ModelStore(tmp_path).ensure(FakeSource(broken=True), "float32")
    assert [p.name for p in (tmp_path / "models" / "fake").iterdir()] == [".lock"]  # nothing broken kept


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
