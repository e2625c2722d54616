"""The engine's fast start on the real converted Gemma tokenizer: the fast read of its
``tokenizer.json`` is used only where the store checked that it agrees with ``AutoTokenizer``,
and XGrammar's metadata kept beside the model builds the same ``TokenizerInfo``.

The store tests copy the session engine's converted model (weights linked, as
``test_tokenizer_check.py`` does) instead of converting it again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import xgrammar
from test_tokenizer_check import CopySource, copy_model

from structured_agents.engines.fast_start import (
    METADATA_FILE,
    fast_tokenizer_agrees,
    load_tokenizer,
    tokenizer_info,
)
from structured_agents.engines.model_store import MANIFEST_NAME, ModelStore
from structured_agents.engines.tokenizer_check import SAMPLE

if TYPE_CHECKING:
    from structured_agents.engines.transformers_engine import TransformersEngine

pytestmark = pytest.mark.model
TEXTS = [
    SAMPLE,
    "",
    "  two leading spaces",
    "<start_function_call>call:x{}<end_function_call>",
    "日本語 ☕\n",
]


def test_the_store_records_that_the_fast_read_agrees_and_the_engine_uses_it(
    engine: TransformersEngine, tmp_path: Path
) -> None:
    store = ModelStore(tmp_path)
    entry = store.ensure(CopySource(engine.model_dir), "float32")
    manifest = json.loads((entry / MANIFEST_NAME).read_text(encoding="utf-8"))
    assert manifest["fast_tokenizer"] is True and ModelStore.fast_tokenizer(entry)
    fast, slow = load_tokenizer(entry, fast=True), load_tokenizer(entry, fast=False)
    assert type(fast) is not type(slow)  # really two ways of reading it
    for text in TEXTS:
        assert fast(text)["input_ids"] == slow(text)["input_ids"]
    assert ModelStore.fast_tokenizer(engine.model_dir) and type(engine.tokenizer) is type(fast)
    assert engine.tokenizer(SAMPLE)["input_ids"] == slow(SAMPLE)["input_ids"]


def test_a_tokenizer_the_fast_read_gets_wrong_is_read_with_auto_tokenizer(
    engine: TransformersEngine, tmp_path: Path
) -> None:
    copy_model(engine.model_dir, tmp_path, broken=False)
    config = json.loads((tmp_path / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["extra_special_tokens"] = {"call_start": "<start_function_call>"}  # only its class reads it
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    assert not fast_tokenizer_agrees(tmp_path)
    assert not ModelStore.fast_tokenizer(tmp_path)  # no manifest: a user's directory, read as before
    (tmp_path / "tokenizer.json").unlink()
    assert not fast_tokenizer_agrees(tmp_path)


def test_kept_metadata_builds_the_same_tokenizer_info(engine: TransformersEngine, tmp_path: Path) -> None:
    tokenizer, vocab = engine.tokenizer, engine.tokenizer.get_vocab()
    size, stops = engine.vocab_size, engine.stop_token_ids
    detected = xgrammar.TokenizerInfo.from_huggingface(tokenizer, vocab_size=size, stop_token_ids=stops)
    first = tokenizer_info(tokenizer, vocab, vocab_size=size, stop_token_ids=stops, cache_dir=tmp_path)
    kept = json.loads((tmp_path / METADATA_FILE).read_text(encoding="utf-8"))
    assert len(kept) == 1 and str(size) in next(iter(kept))
    second = tokenizer_info(tokenizer, vocab, vocab_size=size, stop_token_ids=stops, cache_dir=tmp_path)
    for info in (first, second):
        assert (info.vocab_type, info.vocab_size, info.add_prefix_space) == (
            detected.vocab_type,
            detected.vocab_size,
            detected.add_prefix_space,
        )
        assert info.stop_token_ids == detected.stop_token_ids
        assert info.decoded_vocab == detected.decoded_vocab
    other = tokenizer_info(tokenizer, vocab, vocab_size=size, stop_token_ids=stops[:1], cache_dir=tmp_path)
    assert other.stop_token_ids == sorted(stops[:1])
    assert len(json.loads((tmp_path / METADATA_FILE).read_text(encoding="utf-8"))) == 2  # one per key
