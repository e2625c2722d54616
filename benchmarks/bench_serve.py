"""``sa serve`` benchmark: 32 concurrent streaming clients against the engine's own batched ``generate``.

Run (prints a table, then the JSON)::

    .venv/bin/python benchmarks/bench_serve.py [--clients 32] [--tokens 48] [--rounds 2] [--threads T]

One TransformersEngine (the default shipped model on CPU, ``max_batch_size`` = clients) serves
both sides, in this one process, on the same prompts:

* ``generate``: ``engine.generate(requests)``, all requests in one call;
* ``serve``: the app of ``sa serve`` on a real uvicorn server (``serve_in_thread``), and
  ``--clients`` concurrent streaming ``/v1/completions`` requests over HTTP (httpx), each
  reading its Server-Sent Events to ``[DONE]``.

Every request decodes exactly ``--tokens`` tokens (the engine's stop tokens are switched off
for the run, a benchmark-only tweak of the public ``stop_token_ids``), greedy, unconstrained.
Reported: aggregate generated tokens per second of each side, ``serve / generate`` (target at
least 0.8), and the serve side's time to first token (first non-empty text chunk), p50 and p99.
The rounds alternate the two sides and the best round of each counts. The machine may be
shared: compare numbers only from the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from typing import Any

import httpx

from structured_agents.engines.transformers_engine import TransformersEngine
from structured_agents.kernel.engine import GenerationRequest, SamplingParams
from structured_agents.serve import create_app, serve_in_thread

SUBJECTS = ["a lighthouse", "a robot", "the sea", "a library", "winter", "a train", "a garden", "the moon"]


def prompts(count: int) -> list[str]:
    return [f"Write a short story about {SUBJECTS[i % len(SUBJECTS)]} (number {i}):" for i in range(count)]


def run_generate(engine: TransformersEngine, texts: list[str], tokens: int) -> dict[str, Any]:
    requests = [GenerationRequest(t, sampling=SamplingParams(max_new_tokens=tokens)) for t in texts]
    started = time.perf_counter()
    completions = engine.generate(requests)
    wall = time.perf_counter() - started
    generated = sum(c.usage.completion_tokens for c in completions)
    return {"wall_s": wall, "tokens": generated, "tokens_per_s": generated / wall}


async def _client(client: httpx.AsyncClient, prompt: str, tokens: int, started: float) -> tuple[float, int]:
    """One streaming request: (time to first token, generated tokens)."""
    body = {"prompt": prompt, "max_tokens": tokens, "stream": True, "stream_options": {"include_usage": True}}
    first = 0.0
    generated = 0
    async with client.stream("POST", "/v1/completions", json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data: {"):
                continue
            chunk = json.loads(line[len("data: ") :])
            if chunk["choices"] and chunk["choices"][0]["text"] and not first:
                first = time.perf_counter() - started
            if chunk.get("usage"):
                generated = chunk["usage"]["completion_tokens"]
    return first, generated


async def _clients(url: str, texts: list[str], tokens: int) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=len(texts))
    async with httpx.AsyncClient(base_url=url, timeout=3600, limits=limits) as client:
        started = time.perf_counter()
        results = await asyncio.gather(*(_client(client, t, tokens, started) for t in texts))
        wall = time.perf_counter() - started
    ttft = sorted(first for first, _ in results)
    generated = sum(count for _, count in results)
    return {
        "wall_s": wall,
        "tokens": generated,
        "tokens_per_s": generated / wall,
        "ttft_p50_s": statistics.median(ttft),
        "ttft_p99_s": ttft[min(len(ttft) - 1, round(0.99 * (len(ttft) - 1)))],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=48, help="tokens each request decodes")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    args = parser.parse_args()

    engine = TransformersEngine(device="cpu", max_batch_size=args.clients, num_threads=args.threads)
    texts = prompts(args.clients)
    saved, engine.stop_token_ids = engine.stop_token_ids, [-1]  # every request decodes --tokens
    app = create_app(engine, model_name="bench", defaults=SamplingParams(max_new_tokens=args.tokens))
    best: dict[str, dict[str, Any]] = {}
    try:
        with serve_in_thread(app) as url:
            run_generate(engine, texts[:2], 2)  # warm-up
            for _ in range(args.rounds):
                for side in ("generate", "serve"):
                    before = engine.stats.copy()
                    if side == "generate":
                        result = run_generate(engine, texts, args.tokens)
                    else:
                        result = asyncio.run(_clients(url, texts, args.tokens))
                    result["mean_batch"] = engine.stats.since(before).mean_batch
                    if side not in best or result["tokens_per_s"] > best[side]["tokens_per_s"]:
                        best[side] = result
    finally:
        engine.stop_token_ids = saved
    ratio = best["serve"]["tokens_per_s"] / best["generate"]["tokens_per_s"]
    print(
        f"model {engine.model_dir} ({engine.dtype}), {args.clients} clients x {args.tokens} tokens, "
        f"load average {os.getloadavg()}"
    )
    print(f"{'side':<10}{'tokens':>8}{'wall s':>9}{'tok/s':>9}{'mean batch':>12}")
    for side, row in best.items():
        print(
            f"{side:<10}{row['tokens']:>8}{row['wall_s']:>9.2f}{row['tokens_per_s']:>9.1f}{row['mean_batch']:>12.2f}"
        )
    print(f"serve / generate (aggregate tok/s): {ratio:.2f}x (target >= 0.8)")
    served = best["serve"]
    print(f"time to first token: p50 {served['ttft_p50_s']:.2f} s, p99 {served['ttft_p99_s']:.2f} s")
    print(json.dumps({"clients": args.clients, "tokens": args.tokens, **best, "ratio": ratio}))


if __name__ == "__main__":
    main()
