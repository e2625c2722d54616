"""The engine's fast start on the real converted Gemma tokenizer: the fast read of its
``tokenizer.json`` is used only where the store checked that it agrees with ``AutoTokenizer``,
and XGrammar's metadata kept beside the model builds the same ``TokenizerInfo``.

The store tests copy the session engine's converted model (weights linked, as
``test_tokenizer_check.py`` does) instead of converting it again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import xgrammar
from test_tokenizer_check import CopySource, copy_model
from tokenizers import Tokenizer, models

from structured_agents.engines.fast_start import (
    METADATA_FILE,
    START_TOKENIZER,
    fast_tokenizer_agrees,
    load_tokenizer,
    tokenizer_info,
    write_start_tokenizer,
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


def _converted(engine: TransformersEngine, root: Path) -> tuple[Path, dict[str, Any]]:
    """The session engine's model converted into a store at ``root`` (weights linked), and its
    manifest."""
    entry = ModelStore(root).ensure(CopySource(engine.model_dir), "float32")
    return entry, json.loads((entry / MANIFEST_NAME).read_text(encoding="utf-8"))


def test_the_store_records_that_the_fast_read_agrees_and_the_engine_uses_it(
    engine: TransformersEngine, tmp_path: Path
) -> None:
    entry, manifest = _converted(engine, tmp_path)
    assert manifest["fast_tokenizer"] is True and ModelStore.fast_tokenizer(entry)
    start = entry / START_TOKENIZER  # the fast read's file: the same tokenizer, merges as strings
    assert manifest["files"][START_TOKENIZER] == start.stat().st_size
    assert isinstance(json.loads(start.read_text(encoding="utf-8"))["model"]["merges"][0], str)
    original = Tokenizer.from_file(str(entry / "tokenizer.json"))
    assert Tokenizer.from_file(str(start)).to_str() == original.to_str()
    fast, slow = load_tokenizer(entry, fast=True), load_tokenizer(entry, fast=False)
    assert type(fast) is not type(slow)  # really two ways of reading it
    for text in TEXTS:
        assert fast(text)["input_ids"] == slow(text)["input_ids"]
    assert ModelStore.fast_tokenizer(engine.model_dir) and type(engine.tokenizer) is type(fast)
    turn = slow.get_vocab()["<end_of_turn>"]  # found by name, without listing the vocabulary
    assert turn in engine.stop_token_ids and slow.eos_token_id in engine.stop_token_ids
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


def test_an_entry_converted_before_the_start_copy_gets_one_when_it_is_next_loaded(
    engine: TransformersEngine, tmp_path: Path
) -> None:
    entry, manifest = _converted(engine, tmp_path)
    (entry / START_TOKENIZER).unlink()
    del manifest["files"][START_TOKENIZER]
    (entry / MANIFEST_NAME).write_text(json.dumps({**manifest, "verified": 2}), encoding="utf-8")
    assert ModelStore.is_complete(entry) and not ModelStore.fast_tokenizer(entry)
    assert ModelStore(tmp_path).ensure(CopySource(engine.model_dir), "float32") == entry
    assert ModelStore.is_complete(entry) and ModelStore.fast_tokenizer(entry)
    assert START_TOKENIZER in json.loads((entry / MANIFEST_NAME).read_text(encoding="utf-8"))["files"]


def test_merges_with_a_space_keep_their_pairs(tmp_path: Path) -> None:
    """``"a b"`` cannot say which space splits ``"a"`` from ``" b"``: no start copy then."""
    vocab = {"a": 0, " b": 1, "a b": 2, "c": 3, "d": 4, "cd": 5}
    for merges, written in (([("a", " b"), ("c", "d")], False), ([("c", "d")], True)):
        Tokenizer(models.BPE(vocab, merges)).save(str(tmp_path / "tokenizer.json"))
        (tmp_path / START_TOKENIZER).unlink(missing_ok=True)
        assert write_start_tokenizer(tmp_path) is written
        assert (tmp_path / START_TOKENIZER).is_file() is written
    (tmp_path / "tokenizer.json").write_text("{not json", encoding="utf-8")
    assert not write_start_tokenizer(tmp_path)
    assert not (tmp_path / START_TOKENIZER).exists()  # the last loop's copy is not left to be read
