"""The peer of ``bench_engine.py``: llama.cpp (``llama-cpp-python``) on the same GGUF file the
shipped model is converted from, the same prompts, greedy, each row forced to the same number
of tokens (the generator is read past any end-of-sequence token, as the engine's forced rows
are). Batch 1 only: its Python API decodes one sequence at a time.

``bench_engine.py`` runs it in a child process (:func:`run_peer`) before it loads its own
engine: llama.cpp's threads, spinning after a decode, slowed the engine by a quarter when both
lived in one process.

``llama-cpp-python`` is an optional benchmark dependency, never a runtime one; build it with
``pip install llama-cpp-python`` (from source: several minutes on 2 cores). Without it the
peer is reported as missing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from structured_agents.engines.model_store import DEFAULT_MODEL, SHIPPED_MODELS

__all__ = ["measure_peer", "run_peer"]


def measure_peer(
    model: str | None, prompts: Sequence[str], tokens: int, *, threads: int, repeats: int
) -> dict[str, Any] | None:
    """llama.cpp's load time and batch-1 tokens/s on ``model``'s GGUF; None when
    ``llama_cpp`` is not importable or ``model`` is not a shipped GGUF model."""
    try:
        import llama_cpp
    except ImportError:
        return None
    source = SHIPPED_MODELS.get(model or DEFAULT_MODEL)
    if source is None:
        return None
    with tempfile.TemporaryDirectory(prefix="sa-peer-") as scratch:
        gguf = source.locate(Path(scratch))
        started = time.perf_counter()
        llm = llama_cpp.Llama(str(gguf), n_ctx=512, n_threads=threads, n_batch=512, verbose=False)
        load_s = time.perf_counter() - started
        llm.eval(llm.tokenize(b"warm up"))  # the first decode pays one-time set-up
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            for prompt in prompts:
                llm.reset()
                stream = llm.generate(llm.tokenize(prompt.encode()), temp=0.0, reset=True)
                for made, _token in enumerate(stream, start=1):
                    if made == tokens:
                        break
            best = min(best, time.perf_counter() - started)
        version = getattr(llama_cpp, "__version__", "?")
        del llm
    total = tokens * len(prompts)
    return {
        "llama_cpp": version,
        "gguf": gguf.name,
        "threads": threads,
        "load_s": load_s,
        "seconds": best,
        "tokens": total,
        "tokens_per_s": total / best,
    }


def run_peer(
    model: str | None, prompts: Sequence[str], tokens: int, *, threads: int, repeats: int
) -> dict[str, Any] | None:
    """:func:`measure_peer` in a child process (its threads end with it)."""
    command = [sys.executable, __file__, "--tokens", str(tokens), "--threads", str(threads)]
    command += ["--repeats", str(repeats), *(["--model", model] if model else []), *prompts]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    result: dict[str, Any] | None = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("prompts", nargs="+")
    parser.add_argument("--model", default=None)
    parser.add_argument("--tokens", type=int, required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--repeats", type=int, required=True)
    args = parser.parse_args()
    peer = measure_peer(args.model, args.prompts, args.tokens, threads=args.threads, repeats=args.repeats)
    print(json.dumps(peer))


if __name__ == "__main__":
    main()
