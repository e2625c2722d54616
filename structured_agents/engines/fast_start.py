"""Start the transformers engine quickly from a converted model: its tokenizer and XGrammar's
view of it, without the work that does not change between starts.

Measured on Gemma 3 270M (262k tokens, a 33 MB ``tokenizer.json``), 2 CPU cores:

* ``AutoTokenizer.from_pretrained`` takes 2.6 s: transformers parses the JSON file in Python
  several times and rebuilds the tokenizer through its Gemma class. Reading the same file with
  ``PreTrainedTokenizerFast(tokenizer_file=...)`` gives identical ids in 0.95 s, and it runs
  beside the weights' load (the Rust reader lets the GIL go), so it costs no wall time there.
  The model store uses it only for a conversion where it checked that the two agree
  (:func:`fast_tokenizer_agrees`, recorded in the manifest); any other directory is loaded with
  ``AutoTokenizer``, as before.
* ``xgrammar.TokenizerInfo.from_huggingface`` takes 1.2 s, nearly all of it detecting the
  vocabulary's metadata (byte fallback, prefix space) from the serialized tokenizer. That
  metadata is a few bytes: :func:`tokenizer_info` keeps it beside the converted model, keyed by
  XGrammar's version, and builds the info from the vocabulary in 0.2 s the next time (the
  engine's grammar cache asks for it when it first compiles a grammar, not at the start).
* Most of the fast read is the BPE model's 514,906 merges, which transformers writes as pairs
  (``["a", "b"]``), the form that allows a space inside a token. Read as the older ``"a b"``
  strings they load 0.25-0.3 s sooner (1.0-1.3 s against 0.8-0.85 s on a 2-core AVX-512 CPU
  without native bfloat16). Where no merge has a space, :func:`write_start_tokenizer` writes
  :data:`START_TOKENIZER` beside the model in that form, and keeps it only where it loads into
  the very same tokenizer (tokenizers serialises both to the same JSON); the fast read takes it.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from structured_agents.engines.tokenizer_check import SAMPLE

if TYPE_CHECKING:
    import xgrammar

__all__ = [
    "METADATA_FILE",
    "START_TOKENIZER",
    "fast_tokenizer_agrees",
    "load_tokenizer",
    "tokenizer_info",
    "write_start_tokenizer",
]

METADATA_FILE = "xgrammar-metadata.json"
"""Beside a converted model: XGrammar's metadata of its vocabulary, by XGrammar version."""
START_TOKENIZER = "tokenizer-start.json"
"""Beside a converted model: its ``tokenizer.json`` in the form that loads fastest."""
_SPECIAL = ("bos_token", "eos_token", "unk_token", "pad_token", "mask_token")
_TEXTS = (SAMPLE, "", " leading space", "trailing space ", "<bos>x<eos>", "über 日本語 😀\r\n\t")


def load_tokenizer(model_dir: Path, *, fast: bool) -> Any:
    """The tokenizer of ``model_dir``: read straight from its ``tokenizer.json`` when ``fast``
    (the model store checked that this agrees with ``AutoTokenizer``), else ``AutoTokenizer``."""
    if not fast:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    from transformers import PreTrainedTokenizerFast

    config = json.loads((model_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    special = {key: config[key] for key in _SPECIAL if isinstance(config.get(key), str)}
    start = model_dir / START_TOKENIZER
    file = start if start.is_file() else model_dir / "tokenizer.json"
    return PreTrainedTokenizerFast(tokenizer_file=str(file), **special)  # type: ignore[no-untyped-call]


def write_start_tokenizer(model_dir: Path) -> bool:
    """Write :data:`START_TOKENIZER` into ``model_dir``: its ``tokenizer.json`` with a BPE
    model's merges as ``"a b"`` strings; True where it was written, False where the tokenizer
    is no BPE model with paired merges, a merge has a space, or the copy would not load into the
    same tokenizer (an earlier copy is removed then: the fast read takes ``tokenizer.json``)."""
    start = model_dir / START_TOKENIZER
    text = _start_text(model_dir / "tokenizer.json")
    if text is None:
        start.unlink(missing_ok=True)
        return False
    _replace(start, text)
    return start.is_file()


def _start_text(source: Path) -> str | None:
    """The text of :data:`START_TOKENIZER` for the tokenizer file ``source`` (see
    :func:`write_start_tokenizer`), or None."""
    from tokenizers import Tokenizer

    try:
        data = json.loads(source.read_text(encoding="utf-8"))
        merges = data["model"]["merges"] if data["model"]["type"] == "BPE" else None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(merges, list) or not merges or not all(_plain_pair(merge) for merge in merges):
        return None
    data["model"]["merges"] = [f"{left} {right}" for left, right in merges]
    text = json.dumps(data, ensure_ascii=False)
    try:
        same = Tokenizer.from_str(text).to_str() == Tokenizer.from_file(str(source)).to_str()
    except Exception:  # tokenizers cannot read one of them: the fast read keeps tokenizer.json
        return None
    return text if same else None


def fast_tokenizer_agrees(model_dir: Path) -> bool:
    """Whether the fast read of ``model_dir``'s tokenizer encodes and decodes as
    ``AutoTokenizer`` does: the same vocabulary, special ids, and ids for fixed texts."""
    if not (model_dir / "tokenizer.json").is_file() or not (model_dir / "tokenizer_config.json").is_file():
        return False
    try:
        slow = load_tokenizer(model_dir, fast=False)
        fast = load_tokenizer(model_dir, fast=True)
        same = (
            slow.get_vocab() == fast.get_vocab()
            and len(slow) == len(fast)
            and slow.all_special_ids == fast.all_special_ids
            and (slow.bos_token_id, slow.eos_token_id, slow.pad_token_id)
            == (fast.bos_token_id, fast.eos_token_id, fast.pad_token_id)
        )
        for text in _TEXTS:
            for special in (True, False):
                ids = slow(text, add_special_tokens=special)["input_ids"]
                same = same and ids == fast(text, add_special_tokens=special)["input_ids"]
                same = same and slow.decode(ids) == fast.decode(ids)
        return bool(same)
    except Exception:  # a tokenizer the fast read cannot load at all: the slow path it is
        return False


def _plain_pair(merge: object) -> bool:
    """Whether ``merge`` is a pair of tokens without a space, which ``"a b"`` spells again."""
    return (
        isinstance(merge, list)
        and len(merge) == 2
        and all(isinstance(part, str) and " " not in part for part in merge)
    )


def tokenizer_info(
    tokenizer: Any,
    vocab: Mapping[str, int],
    *,
    vocab_size: int,
    stop_token_ids: Sequence[int],
    cache_dir: Path | None,
) -> xgrammar.TokenizerInfo:
    """XGrammar's view of ``tokenizer`` (whose ``get_vocab()`` is ``vocab``), its metadata read
    from and kept in ``cache_dir`` (a converted model's directory; None: detected each time)."""
    import xgrammar

    stops = sorted(int(i) for i in stop_token_ids)
    if cache_dir is None:
        return xgrammar.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size, stop_token_ids=stops)
    key = f"xgrammar {importlib.metadata.version('xgrammar')}; vocab {vocab_size}; stops {stops}"
    path = cache_dir / METADATA_FILE
    try:
        known = json.loads(path.read_text(encoding="utf-8"))
        known = known if isinstance(known, dict) else {}
    except (OSError, ValueError):
        known = {}
    metadata = known.get(key)
    if isinstance(metadata, str):
        encoded: list[bytes | str] = [""] * vocab_size
        for token, index in vocab.items():
            if 0 <= index < vocab_size:
                encoded[index] = token
        return xgrammar.TokenizerInfo.from_vocab_and_metadata(encoded, metadata)
    info = xgrammar.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size, stop_token_ids=stops)
    _replace(path, json.dumps({**known, key: info.dump_metadata()}, indent=2))
    return info


def _replace(path: Path, text: str) -> None:
    """Write ``path`` atomically (a reader sees the old file or the new one); a directory the
    process may not write to keeps no cache, and the next start detects the metadata again."""
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        temp.write_text(text, encoding="utf-8")
        os.replace(temp, path)
    except OSError:
        temp.unlink(missing_ok=True)
