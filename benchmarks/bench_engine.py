"""Engine benchmark: TransformersEngine throughput by batch size, grammar overhead, load time.

Run (prints a table, then the JSON)::

    .venv/bin/python benchmarks/bench_engine.py [--model NAME_OR_DIR] [--threads N] [--tokens 48]
        [--batches 1,4,8] [--device cuda] [--enforce-eager]

On CUDA the engine decodes through its slot loop and CUDA graphs; ``--enforce-eager`` measures
the eager loop instead (the baseline: run both back to back on the same machine). On a machine
the model's weights cannot reach cheaply, ``benchmarks/random_entry.py DIR`` writes an entry of
the same shapes with random weights, and ``--model DIR`` measures it.

What is measured, all greedy on short prompts (so decoding, not prefill, dominates):

* ``load_s``: constructing the engine from the model cache (the one-time conversion, when it
  had to run first, is reported apart as ``conversion_s``), after the libraries are imported,
  as the peer's load is timed after ``import llama_cpp``. ``import_s`` is that import apart:
  transformers' code for the model's architecture (for Gemma 3 about 1.1 s, most of it
  ``torch.distributed`` and ``torch._dynamo``, which transformers' model loading imports),
  paid once per process. ``head_wait_s``: where the LM head is an int8 estimate packed on a
  thread of its own (:mod:`~structured_agents.engines.rescored_head`), how long after the load
  that packing ended (waited for at once here; the first decode step is what waits for it).
* ``free``: tokens/s and the time of one decode step at each of ``--batches`` (1, 4 and 8 unless
  told; the engine takes the largest as its ``max_batch_size``), every row forced to decode
  ``--tokens`` tokens. Past 8 rows the prompts repeat, each copy numbered, so no two rows share
  a prompt. ``step_ms`` is the run's wall time over its decode steps (prefill included, so an
  upper bound); ``forward_ms`` the time the loop spent launching or running forward passes
  (on CUDA the graph step returns before the GPU finishes: the host's work overlaps it).
* ``grammar``: the same prompts under FunctionGemma's JSON call schema, then unconstrained with
  each row forced to the token count it had under the grammar (the same work without masking).
  Three overhead figures: ``overhead`` compares the two runs' wall times; ``grammar_share`` is
  the grammar matchers' own work the engine timed inside the constrained run
  (``DecodeStats.grammar_s``: bitmask fills and advances) over its wall time; ``select_share``
  the wider ``select_s + accept_s`` (with applying the masks, the argmax, which an unconstrained
  run pays too, and on CUDA the wait for the step) over the rest of the run, an upper bound. On
  a shared CPU the first swings with the neighbours' load; the others need no second run.
* ``long``: each of ``--batches`` again with prompts of ``--long-prompt`` tokens (850 unless
  told; 0 skips it), the length docstring and lint jobs send, every row forced to ``--tokens``
  tokens: tokens/s over the whole run, prefill included, the prefill's seconds and the time of
  a decode step. Short prompts measure the decode alone; on an AVX-512 CPU without native
  bfloat16 they favoured bfloat16 weights whose prefill took 3x longer than float32's.
* ``stream``: with ``--stream N``, N requests under the JSON call schema submitted at once
  through ``submit``, as a model worker feeds the engine: the step loop admits new rows between
  steps as rows end, so the batch stays at the largest of ``--batches`` where a single
  ``generate`` of that many rows empties as its rows finish their calls. Then the same requests
  unconstrained, each forced to the token count it had under the grammar. Tokens/s, the mean
  rows a step, the wall time over steps, the prefills' share, ``grammar_share`` and
  ``overhead`` as above. Streamed rows decode their text every step, as a worker's do. On the
  slot loop (CUDA) once for each of ``--admit-shares``: when waiting rows join
  (:func:`~structured_agents.engines.slot_stepper.admitting`). Then N/4 requests of
  ``--long-prompt`` tokens, forced to ``--tokens``.
* ``kinds``: ``grammar_share`` at batch 4 for each kind of grammar the plugins build.
* ``peer``: llama.cpp on the same GGUF, run first in a child process (:mod:`peer_llamacpp`;
  when ``llama-cpp-python`` is importable): its load time and batch-1 tokens/s, and the ratios
  of this engine's batch 1 and batch 8 to that.

Every timing is the fastest of ``--repeats`` runs. "Forced" rows run with the engine's stop
tokens switched off (a benchmark-only tweak of the public ``stop_token_ids`` attribute), so a
row cannot end early on EOS. Run it when the CPU is idle; the load average is recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from peer_llamacpp import run_peer

from structured_agents.engines import slot_stepper
from structured_agents.engines.model_store import ModelStore
from structured_agents.engines.rescored_head import RescoredHead
from structured_agents.engines.transformers_engine import TransformersEngine, resolve_device, resolve_dtype
from structured_agents.grammar.artifacts import GrammarArtifact
from structured_agents.grammar.config import GrammarConfig, GrammarMode
from structured_agents.kernel.engine import Completion, GenerationRequest, SamplingParams
from structured_agents.plugins import get_plugin
from structured_agents.types import ToolSchema

PROMPTS = [
    "Call the tool that reads the file src/app.py:",
    "Call the tool that searches the code for parse_config:",
    "Call the tool that writes hello into notes.txt:",
    "Call the tool that finishes the task, saying the bug is fixed:",
    "Call the tool that reads README.md:",
    "Call the tool that searches for TODO comments:",
    "Call the tool that writes x = 1 into config.py:",
    "Call the tool that finishes, reporting that all tests pass:",
]
TOOLS = [
    ToolSchema(
        name,
        f"The {name} tool.",
        {"type": "object", "properties": {key: {"type": "string"} for key in keys}, "required": list(keys)},
    )
    for name, keys in (
        ("read_file", ("path",)),
        ("search_code", ("query",)),
        ("write_file", ("path", "content")),
        ("finish", ("summary",)),
    )
]
KINDS: list[tuple[str, str, GrammarMode]] = [
    ("json_schema", "function_gemma", "json_schema"),
    ("qwen_xml", "qwen", "structural_tag"),
    ("function_gemma_ebnf", "function_gemma", "ebnf"),
    ("function_gemma_structural_tag", "function_gemma", "structural_tag"),
]


def grammar_of(plugin: str, mode: GrammarMode) -> GrammarArtifact:
    config = GrammarConfig(mode=mode, allow_parallel_calls=False)
    return get_plugin(plugin).build_grammar(TOOLS, config)


@contextmanager
def stops_off(engine: TransformersEngine, forced: bool) -> Iterator[None]:
    """For the block, where ``forced``, no token ends a row (the engine's public
    ``stop_token_ids``, switched off: the rows decode to their token limit)."""
    saved = engine.stop_token_ids
    if forced:
        engine.stop_token_ids = [-1]
    try:
        yield
    finally:
        engine.stop_token_ids = saved


def timed(
    engine: TransformersEngine, requests: Sequence[GenerationRequest], *, forced: bool, repeats: int
) -> dict[str, Any]:
    """Decode ``requests`` ``repeats`` times; the fastest run with its :class:`DecodeStats`."""
    best: dict[str, Any] = {}
    with stops_off(engine, forced):
        for _ in range(repeats):
            started = time.perf_counter()
            completions: list[Completion] = engine.generate(requests)
            elapsed = time.perf_counter() - started
            if not best or elapsed < best["seconds"]:
                best = {"seconds": elapsed, "stats": asdict(engine.last_stats), "completions": completions}
    tokens = [c.usage.completion_tokens for c in best.pop("completions")]
    stats = best["stats"]
    steps = max(1, stats["steps"])
    upper_s = stats["select_s"] + stats["accept_s"]
    return {
        **best,
        "step_ms": 1000 * best["seconds"] / steps,
        "forward_ms": 1000 * stats["decode_s"] / steps,
        "tokens": tokens,
        "tokens_per_s": sum(tokens) / best["seconds"],
        "grammar_s": stats["grammar_s"],
        "grammar_share": stats["grammar_s"] / best["seconds"],
        "select_share": upper_s / (best["seconds"] - upper_s),
    }


def prompt(row: int) -> str:
    """Row ``row``'s prompt: :data:`PROMPTS` in turn, numbered past the first round."""
    text = PROMPTS[row % len(PROMPTS)]
    return text if row < len(PROMPTS) else f"({row // len(PROMPTS) + 1}) {text}"


def requests_for(
    batch: int, tokens: Sequence[int], grammar: GrammarArtifact | None
) -> list[GenerationRequest]:
    return [
        GenerationRequest(prompt(row), grammar=grammar, sampling=SamplingParams(max_new_tokens=n))
        for row, n in zip(range(batch), tokens, strict=True)
    ]


def long_requests(
    engine: TransformersEngine, batch: int, length: int, tokens: int
) -> list[GenerationRequest]:
    """``batch`` rows whose prompts are ``length`` tokens of distinct code, each then
    :func:`prompt`'s request."""
    code = "\n".join(f"def step_{k}(x):\n    return x * {k} + {k % 7}" for k in range(length))
    ids = engine.tokenizer(code)["input_ids"]
    return [
        GenerationRequest(
            f"# row {row}\n" + engine.tokenizer.decode(ids[row : row + length]) + "\n" + prompt(row),
            sampling=SamplingParams(max_new_tokens=tokens),
        )
        for row in range(batch)
    ]


def overhead_run(
    engine: TransformersEngine, batch: int, tokens: int, grammar: GrammarArtifact, repeats: int
) -> dict[str, Any]:
    """The batch under ``grammar``, then unconstrained with the same per-row token counts."""
    with_grammar = timed(
        engine, requests_for(batch, [tokens] * batch, grammar), forced=False, repeats=repeats
    )
    matched = requests_for(batch, with_grammar["tokens"], None)
    without = timed(engine, matched, forced=True, repeats=repeats)
    return {
        "with": with_grammar,
        "without": without,
        "overhead": with_grammar["seconds"] / without["seconds"] - 1,
        "grammar_share": with_grammar["grammar_share"],
    }


def streamed(
    engine: TransformersEngine, requests: Sequence[GenerationRequest], *, forced: bool
) -> dict[str, Any]:
    """``requests`` all submitted at once; the completions awaited, timed over the engine's
    stats of the run."""
    before = engine.stats.copy()
    started = time.perf_counter()
    with stops_off(engine, forced):
        streams = [engine.submit(request) for request in requests]
        completions = [stream.result() for stream in streams]
    seconds = time.perf_counter() - started
    stats = engine.stats.since(before)
    counts = [c.usage.completion_tokens for c in completions]
    return {
        "seconds": seconds,
        "stats": asdict(stats),
        "tokens": counts,
        "tokens_per_s": sum(counts) / seconds,
        "mean_batch": stats.mean_batch,
        "step_ms": 1000 * seconds / max(1, stats.steps),
        "grammar_share": stats.grammar_s / seconds,
    }


def stream_runs(
    engine: TransformersEngine, args: argparse.Namespace, grammar: GrammarArtifact
) -> list[dict[str, Any]]:
    """``--stream`` requests streamed under ``grammar``, then unconstrained with the same
    counts, once for each of ``--admit-shares`` (the slot loop's
    :data:`~structured_agents.engines.slot_stepper.ADMIT_SHARE`, set for the run); then, with
    ``--long-prompt``, a quarter as many requests of that many prompt tokens, unconstrained
    and forced to ``--tokens``."""
    streamed(engine, requests_for(min(args.stream, 64), [8] * min(args.stream, 64), grammar), forced=False)
    runs = []
    saved = slot_stepper.ADMIT_SHARE
    try:
        for share in (float(s) for s in args.admit_shares.split(",")):
            slot_stepper.ADMIT_SHARE = share
            with_grammar = streamed(
                engine, requests_for(args.stream, [args.tokens] * args.stream, grammar), forced=False
            )
            matched = requests_for(args.stream, with_grammar["tokens"], None)
            without = streamed(engine, matched, forced=True)
            overhead = with_grammar["seconds"] / without["seconds"] - 1
            runs.append(
                {"admit_share": share, "with": with_grammar, "without": without, "overhead": overhead}
            )
        if args.long_prompt > 0:
            rows = long_requests(engine, max(1, args.stream // 4), args.long_prompt, args.tokens)
            runs.append({"admit_share": saved, "long": streamed(engine, rows, forced=True)})
    finally:
        slot_stepper.ADMIT_SHARE = saved
    return runs


def ratio(free: dict[int, dict[str, Any]], batch: int, base: int) -> float | None:
    """Batch ``batch``'s aggregate tokens/s over batch ``base``'s, where both were run."""
    if batch not in free or base not in free:
        return None
    return float(free[batch]["tokens_per_s"] / free[base]["tokens_per_s"])


def import_architecture(model_dir: Path) -> None:
    """Import transformers' code for the architecture of the model at ``model_dir``."""
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    MODEL_FOR_CAUSAL_LM_MAPPING[type(AutoConfig.from_pretrained(str(model_dir), local_files_only=True))]


def run(args: argparse.Namespace) -> dict[str, Any]:
    device = resolve_device(args.device)
    dtype = resolve_dtype(args.dtype, device)
    store = ModelStore()
    started = time.perf_counter()
    store.resolve(args.model, dtype)
    conversion_s = time.perf_counter() - started if store.conversions else 0.0
    threads = args.threads or os.cpu_count() or 1
    peer = run_peer(args.model, PROMPTS, args.tokens, threads=threads, repeats=args.repeats)
    started = time.perf_counter()
    import_architecture(store.resolve(args.model, dtype))
    import_s = time.perf_counter() - started
    started = time.perf_counter()
    batches = sorted({int(b) for b in args.batches.split(",")})
    with TransformersEngine(
        args.model,
        device=args.device,
        dtype=dtype,
        quantization=args.quantization,
        num_threads=args.threads,
        max_batch_size=max(batches),
        enforce_eager=args.enforce_eager,
    ) as engine:
        load_s = time.perf_counter() - started
        head = engine.model.get_output_embeddings()
        started = time.perf_counter()
        if isinstance(head, RescoredHead):
            head.wait()
        head_wait_s = time.perf_counter() - started
        engine.generate(requests_for(1, [2], None))  # warm-up
        for _, plugin, mode in KINDS:  # compile every grammar once, outside the timed runs
            engine.grammar_cache.compile(grammar_of(plugin, mode))
        free = {
            b: timed(engine, requests_for(b, [args.tokens] * b, None), forced=True, repeats=args.repeats)
            for b in batches
        }
        schema = grammar_of("function_gemma", "json_schema")
        grammar = {b: overhead_run(engine, b, args.tokens, schema, args.repeats) for b in batches}
        long = {}
        for b in batches if args.long_prompt > 0 else []:
            rows = long_requests(engine, b, args.long_prompt, args.tokens)
            long[b] = timed(engine, rows, forced=True, repeats=args.repeats)
        stream = stream_runs(engine, args, schema) if args.stream else []
        kinds = {
            name: timed(engine, requests_for(4, [args.tokens] * 4, grammar_of(p, m)), forced=False, repeats=1)
            for name, p, m in KINDS
        }
    return {
        "model_dir": str(engine.model_dir),
        "device": str(engine.device),
        "dtype": engine.dtype,
        "quantization": engine.quantization,
        "loop": engine.loop,
        "threads": args.threads,
        "repeats": args.repeats,
        "cpu_count": os.cpu_count(),
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "conversion_s": conversion_s,
        "import_s": import_s,
        "load_s": load_s,
        "head_wait_s": head_wait_s,
        "free": free,
        "grammar": grammar,
        "long_prompt": args.long_prompt,
        "long": long,
        "stream": stream,
        "kinds": kinds,
        "batch8_over_batch1": ratio(free, 8, 1),
        "peer": peer,
        "batch1_over_peer": free[1]["tokens_per_s"] / peer["tokens_per_s"] if peer and 1 in free else None,
        "batch8_over_peer": free[8]["tokens_per_s"] / peer["tokens_per_s"] if peer and 8 in free else None,
    }


def table(result: dict[str, Any]) -> str:
    lines = [
        f"model {result['model_dir']} on {result['device']} ({result['dtype']}, quantization "
        f"{result['quantization']}, {result['loop']} loop, threads={result['threads']}, load average "
        f"{result['load_average']})",
        f"load from cache: {result['load_s']:.2f} s (target <= 2 s on CPU, 10 s on GPU), after "
        f"{result['import_s']:.2f} s importing the architecture's code; conversion this run: "
        f"{result['conversion_s']:.1f} s; the LM head's packing ended {result['head_wait_s']:.2f} s "
        "after the load",
        "",
        f"{'batch':>5} {'free tok/s':>11} {'step ms':>8} {'fwd ms':>7} {'grammar tok/s':>14} "
        f"{'grammar step ms':>16} {'matched free tok/s':>19} {'overhead':>9} {'grammar share':>14} "
        f"{'select share':>13}",
    ]
    for b, free in result["free"].items():
        g = result["grammar"][b]
        lines.append(
            f"{b:>5} {free['tokens_per_s']:>11.1f} {free['step_ms']:>8.2f} {free['forward_ms']:>7.2f} "
            f"{g['with']['tokens_per_s']:>14.1f} {g['with']['step_ms']:>16.2f} "
            f"{g['without']['tokens_per_s']:>19.1f} {g['overhead']:>8.1%} {g['grammar_share']:>14.1%} "
            f"{g['with']['select_share']:>13.1%}"
        )
    if result["batch8_over_batch1"] is not None:
        lines.append(
            f"batch 8 / batch 1 aggregate throughput: {result['batch8_over_batch1']:.2f}x (target >= 3x)"
        )
    peer = result["peer"]
    if peer is None:
        lines.append("peer: llama-cpp-python is not importable (pip install llama-cpp-python)")
    elif result["batch1_over_peer"] is not None and result["batch8_over_peer"] is not None:
        lines.append(
            f"peer llama.cpp {peer['llama_cpp']} on {peer['gguf']} ({peer['threads']} threads): "
            f"load {peer['load_s']:.2f} s, batch 1 {peer['tokens_per_s']:.1f} tok/s; this engine's "
            f"batch 1 {result['batch1_over_peer']:.2f}x, batch 8 {result['batch8_over_peer']:.2f}x of that"
        )
    if result["long"]:
        lines += ["", f"prompts of {result['long_prompt']} tokens, prefill included:"]
        lines.append(f"{'batch':>5} {'tok/s':>8} {'prefill s':>10} {'decode step ms':>15}")
        for b, run_ in result["long"].items():
            stats = run_["stats"]
            decode_ms = 1000 * stats["decode_s"] / max(1, stats["steps"])
            rate, prefill = run_["tokens_per_s"], stats["prefill_s"]
            lines.append(f"{b:>5} {rate:>8.1f} {prefill:>10.2f} {decode_ms:>15.2f}")
    most = max(result["free"])
    for run_ in result["stream"]:
        if "long" in run_:
            long, stats = run_["long"], run_["long"]["stats"]
            lines += [
                f"  {len(long['tokens'])} requests of {result['long_prompt']} prompt tokens, forced: "
                f"{long['tokens_per_s']:.1f} tok/s, {long['mean_batch']:.1f} rows a step, prefill "
                f"{stats['prefill_s']:.2f} of {long['seconds']:.2f} s",
            ]
            continue
        g, free = run_["with"], run_["without"]
        lines += [
            "",
            f"{len(g['tokens'])} requests streamed (continuous batching, at most {most} rows; slot loop "
            f"admitting at {run_['admit_share']:g} of the slots free):",
            f"  with grammar {g['tokens_per_s']:.1f} tok/s, {g['mean_batch']:.1f} rows a step, step "
            f"{g['step_ms']:.2f} ms, prefill {g['stats']['prefill_s']:.2f} of {g['seconds']:.2f} s, grammar "
            f"share {g['grammar_share']:.1%}; unconstrained, same counts: {free['tokens_per_s']:.1f} tok/s, "
            f"{free['mean_batch']:.1f} rows, step {free['step_ms']:.2f} ms; overhead {run_['overhead']:.1%}",
        ]
    lines += [
        "",
        f"{'grammar kind (batch 4)':<30} {'tokens':>7} {'seconds':>8} {'grammar s':>10} {'share':>8}",
    ]
    for name, k in result["kinds"].items():
        lines.append(
            f"{name:<30} {sum(k['tokens']):>7} {k['seconds']:>8.2f} "
            f"{k['grammar_s']:>10.2f} {k['grammar_share']:>8.1%}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default=None, help="shipped model name or local HF directory")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--quantization", default="auto", help="auto, none or int8")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    parser.add_argument(
        "--enforce-eager", action="store_true", help="CUDA: the eager loop, no slot cache or CUDA graphs"
    )
    parser.add_argument("--tokens", type=int, default=48, help="max new tokens per row")
    parser.add_argument("--batches", default="1,4,8", help="batch sizes, comma-separated (e.g. 1,8,32,64)")
    parser.add_argument(
        "--long-prompt", type=int, default=850, help="prompt tokens of the long-prompt runs (0: none)"
    )
    parser.add_argument(
        "--stream", type=int, default=0, help="requests streamed through submit (0: none; e.g. 512)"
    )
    parser.add_argument(
        "--admit-shares",
        default=str(slot_stepper.ADMIT_SHARE),
        help="the streams' slot-loop admission shares, comma-separated (e.g. 0.125,0.25)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs per measurement (the fastest counts)")
    args = parser.parse_args()
    result = run(args)
    print(table(result))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
