"""A model entry with the shipped model's config and tokenizer and random weights, for speed.

Run (writes the entry, prints its files)::

    .venv/bin/python benchmarks/random_entry.py OUT_DIR [--source DIR] [--device cuda] [--gguf FILE]
    .venv/bin/python benchmarks/bench_engine.py --model OUT_DIR --device cuda --batches 1,8,32,64

Measuring the decode loop on a lent GPU machine needs the model's shapes, its tokenizer (the
grammars are compiled against its vocabulary) and a model store entry (so the engine loads it
as it loads the shipped model: the manifest, the fast tokenizer read, the cached XGrammar
tokenizer info), not its weights: what a step costs does not depend on their values. The
shipped model's weights are 253 MB as a GGUF, five transfers to such a machine; the entry's
other files are 5.6 MB with ``tokenizer.json`` gzipped. This copies those files from
``--source`` (default: the shipped model's converted entry in the model store, converted on
first use) and writes bfloat16 random weights (``torch.manual_seed(0)``), with the manifest's
dtype and file sizes rewritten so the store accepts the entry.

Random weights write text no reviewer would read: a grammar holds every row to its shape, but
rows rarely finish early, so reviews and rows leaving mid-batch go untested; check those on the
real weights. ``--gguf FILE`` writes those instead: the shipped model's GGUF (carried in five
parts and joined) dequantized to bfloat16, as the store's conversion does, with the entry's other
files still copied from ``--source``. That skips the store's tokenizer conversion from the GGUF,
which a different transformers there may get wrong (``../shared/GPU-NOTES.md``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import time
from pathlib import Path

import torch
import transformers

from structured_agents.engines.model_store import MANIFEST_NAME, ModelStore, gguf_model


def copy_entry(source: Path, out: Path) -> None:
    """Copy ``source``'s files but its weights (and the int8 copies the engine caches beside
    them) into ``out`` (``*.gz`` files unpacked)."""
    out.mkdir(parents=True, exist_ok=True)
    for path in source.iterdir():
        if path.suffix == ".safetensors" or not path.is_file():
            continue
        if path.suffix == ".gz":
            with gzip.open(path) as packed, (out / path.stem).open("wb") as unpacked:
                shutil.copyfileobj(packed, unpacked)
        else:
            shutil.copy(path, out / path.name)


def write_weights(out: Path, device: str, gguf: Path | None) -> None:
    """bfloat16 weights, random ones of ``out``'s config or ``gguf``'s, and the manifest made to
    match them."""
    if gguf is not None:
        model = gguf_model(gguf).to(torch.bfloat16)
    else:
        config = transformers.AutoConfig.from_pretrained(str(out), local_files_only=True)
        config.dtype = "bfloat16"
        torch.manual_seed(0)
        with torch.device(device):
            model = transformers.AutoModelForCausalLM.from_config(config).to(torch.bfloat16)
    model.save_pretrained(str(out))
    manifest_path = out / MANIFEST_NAME
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["dtype"] = "bfloat16"
    manifest["files"] = {name: (out / name).stat().st_size for name in manifest["files"]}
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path)
    parser.add_argument(
        "--source", type=Path, default=None, help="an entry to copy (default: the shipped model's)"
    )
    parser.add_argument("--device", default="cpu", help="where to initialise the weights")
    parser.add_argument("--gguf", type=Path, default=None, help="the real weights, from this GGUF file")
    args = parser.parse_args()
    source = args.source or ModelStore().resolve(None, "float32")
    started = time.perf_counter()
    copy_entry(source, args.out)
    write_weights(args.out, args.device, args.gguf)
    print(
        f"{args.out}: {sorted(p.name for p in args.out.iterdir())} in {time.perf_counter() - started:.1f} s"
    )
    entry, fast = ModelStore.is_entry(args.out), ModelStore.fast_tokenizer(args.out)
    print(f"a store entry: {entry}, fast tokenizer: {fast}")


if __name__ == "__main__":
    main()
