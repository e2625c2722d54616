"""The tokenizer check against the real converted Gemma tokenizer, and that tokenizer broken as
transformers 5.17 broke it (no BPE merges: character-level; no BOS post-processor).

The store tests use a source whose build copies the session engine's converted model (the
weights by symlink) instead of converting it again, so the real check runs on real files.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from structured_agents.engines.fast_start import START_TOKENIZER
from structured_agents.engines.model_store import MANIFEST_NAME, SHIPPED_MODELS, ModelStore
from structured_agents.engines.tokenizer_check import (
    SAMPLE,
    TokenizerCheck,
    required_transformers,
    tokenizer_problems,
    verify_tokenizer,
)
from structured_agents.errors import EngineError

if TYPE_CHECKING:
    from structured_agents.engines.transformers_engine import TransformersEngine

pytestmark = pytest.mark.model
GEMMA = SHIPPED_MODELS["gemma3-270m"].tokenizer


def copy_model(source: Path, out_dir: Path, *, broken: bool) -> None:
    """``source``'s model in ``out_dir`` (weights linked); ``broken``: its tokenizer as 5.17 wrote it."""
    for path in source.iterdir():
        if path.name in (MANIFEST_NAME, START_TOKENIZER) or not path.is_file():  # what the store derives
            continue
        if path.suffix == ".safetensors":
            (out_dir / path.name).symlink_to(path)
        else:
            shutil.copyfile(path, out_dir / path.name)
    if broken:
        tokenizer = json.loads((out_dir / "tokenizer.json").read_text(encoding="utf-8"))
        tokenizer["model"]["merges"] = []
        tokenizer["post_processor"] = None
        (out_dir / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")


@dataclass
class CopySource:
    """A model source whose build copies a converted model; its check is the shipped Gemma's."""

    model_dir: Path
    broken: bool = False
    name: str = "gemma-copy"
    version: str = "1.0"

    def build(self, out_dir: Path, dtype: str) -> None:
        copy_model(self.model_dir, out_dir, broken=self.broken)

    def verify(self, model_dir: Path) -> None:
        verify_tokenizer(model_dir, GEMMA)


def test_the_converted_gemma_tokenizer_passes(engine: TransformersEngine) -> None:
    assert TokenizerCheck(bos_token_id=2) == GEMMA
    assert tokenizer_problems(engine.tokenizer, GEMMA) == []
    plain = engine.tokenizer(SAMPLE, add_special_tokens=False)["input_ids"]
    assert len(SAMPLE) / 8 <= len(plain) <= len(SAMPLE) / 2
    verify_tokenizer(engine.model_dir, GEMMA)


def test_a_character_level_tokenizer_without_bos_is_refused(
    engine: TransformersEngine, tmp_path: Path
) -> None:
    copy_model(engine.model_dir, tmp_path, broken=True)
    with pytest.raises(EngineError) as info:
        verify_tokenizer(tmp_path, GEMMA)
    message = str(info.value)
    assert message.startswith("its tokenizer, loaded with transformers 5.")
    assert "not the BOS id 2" in message and "character-level: the BPE merges are missing" in message
    assert required_transformers().startswith("transformers>=")
    assert required_transformers() in message


def test_the_store_rebuilds_a_cached_model_with_a_broken_tokenizer(
    engine: TransformersEngine, tmp_path: Path
) -> None:
    broken, good = CopySource(engine.model_dir, broken=True), CopySource(engine.model_dir)
    store = ModelStore(tmp_path)
    with pytest.raises(
        EngineError, match=r"gemma-copy.* failed its check: its tokenizer, loaded with .* is broken"
    ):
        store.ensure(broken, "float32")
    assert [p.name for p in (tmp_path / "models" / "gemma-copy").iterdir()] == [".lock"]
    entry = store.entry_dir(good, "float32")
    entry.mkdir()  # a finished entry an older store wrote with the broken tokenizer: sizes match
    copy_model(engine.model_dir, entry, broken=True)
    files = {p.name: p.stat().st_size for p in entry.iterdir()}
    (entry / MANIFEST_NAME).write_text(json.dumps({"format": 1, "files": files}))
    assert ModelStore.is_complete(entry)
    assert store.ensure(good, "float32") == entry
    assert store.conversions == 1 and ModelStore.is_verified(entry)
    verify_tokenizer(entry, GEMMA)
