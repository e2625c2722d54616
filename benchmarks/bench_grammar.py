"""Grammar benchmark: compile time per plugin/mode for 1, 10 and 50 tools (cold and cached),
and the per-token cost of filling and applying an XGrammar mask.

Uses the default model's real tokenizer (Gemma 3, 262k-token vocabulary), because mask cost
grows with the vocabulary. Run:

    .venv/bin/python benchmarks/bench_grammar.py            # table + JSON
    .venv/bin/python benchmarks/bench_grammar.py --json-only

"Cold" compiles with a fresh GrammarCache each time (XGrammar's own cache off), "cached" is a
second compile of the same text through the same GrammarCache. The mask numbers drive a
matcher through a real tool call token by token and report, per token, the time to fill the
bitmask, to apply it to a logits row (the "cpu" kernel, as the CPU engine uses) and to
advance the matcher; the baseline is one argmax over the same logits row, measured in the
same process.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from structured_agents.grammar.compiler import GrammarCache
from structured_agents.grammar.config import GrammarConfig
from structured_agents.plugins.registry import get_plugin
from structured_agents.types import ToolCall, ToolSchema

CASES = [
    ("function_gemma", "ebnf"),
    ("function_gemma", "structural_tag"),
    ("function_gemma", "json_schema"),
    ("qwen", "structural_tag"),
    ("qwen", "json_schema"),
]


def make_tools(n: int) -> list[ToolSchema]:
    """``n`` tools with a realistic mix of argument types."""
    return [
        ToolSchema(
            name=f"tool_{i}",
            description=f"Tool number {i}",
            parameters={
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "line": {"type": "integer"},
                    "mode": {"type": "string", "enum": ["fast", "slow"]},
                    "flags": {"type": "array", "items": {"type": "string"}},
                    "options": {"type": "object", "properties": {"depth": {"type": "number"}}},
                },
                "required": ["path", "line"],
            },
        )
        for i in range(n)
    ]


def timed(fn: Callable[[], Any], repeat: int) -> float:
    """Median milliseconds of ``repeat`` runs of ``fn``."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def bench_compile(tokenizer_info: Any, repeat: int) -> list[dict[str, Any]]:
    rows = []
    for plugin_name, mode in CASES:
        for n in (1, 10, 50):
            plugin = get_plugin(plugin_name)
            config = GrammarConfig(mode=mode, allow_parallel_calls=True)
            artifact = plugin.build_grammar(make_tools(n), config)
            cold = timed(lambda a=artifact: GrammarCache(tokenizer_info).compile(a), repeat)
            cache = GrammarCache(tokenizer_info)
            cache.compile(artifact)
            cached = timed(lambda a=artifact, c=cache: c.compile(a), repeat * 20)
            rows.append(
                {"plugin": plugin_name, "mode": mode, "tools": n, "cold_ms": cold, "cached_ms": cached}
            )
    return rows


def bench_mask(tokenizer: Any, tokenizer_info: Any, vocab_size: int) -> list[dict[str, Any]]:
    import torch
    import xgrammar

    rows = []
    tools = make_tools(10)
    call = ToolCall(name="tool_3", arguments={"path": "src/app/main.py", "line": 42, "mode": "fast"})
    for plugin_name, mode in CASES:
        plugin = get_plugin(plugin_name)
        artifact = plugin.build_grammar(tools, GrammarConfig(mode=mode, allow_parallel_calls=False))
        text = plugin.render_tool_calls([call], tools)
        compiled = GrammarCache(tokenizer_info).compile(artifact)
        token_ids = tokenizer.encode(text, add_special_tokens=False)
        matcher = xgrammar.GrammarMatcher(compiled)
        bitmask = xgrammar.allocate_token_bitmask(1, tokenizer_info.vocab_size)
        logits = torch.randn(1, vocab_size)
        fill, apply, accept, argmax = [], [], [], []
        for token in token_ids:
            t0 = time.perf_counter()
            matcher.fill_next_token_bitmask(bitmask)
            t1 = time.perf_counter()
            row = logits.clone()
            t2 = time.perf_counter()
            xgrammar.apply_token_bitmask_inplace(row, bitmask, backend="cpu")
            t3 = time.perf_counter()
            if not matcher.accept_token(token):
                raise SystemExit(f"{plugin_name}/{mode}: grammar rejected its own rendered call {text!r}")
            t4 = time.perf_counter()
            torch.argmax(logits, dim=-1)
            t5 = time.perf_counter()
            fill.append(t1 - t0)
            apply.append(t3 - t2)
            accept.append(t4 - t3)
            argmax.append(t5 - t4)
        ms = lambda xs: statistics.mean(xs) * 1000  # noqa: E731
        rows.append(
            {
                "plugin": plugin_name,
                "mode": mode,
                "tokens": len(token_ids),
                "fill_ms": ms(fill),
                "apply_ms": ms(apply),
                "accept_ms": ms(accept),
                "total_ms": ms(fill) + ms(apply) + ms(accept),
                "argmax_baseline_ms": ms(argmax),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default=None, help="local HF model dir for the tokenizer (default model)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json-only", action="store_true")
    args = parser.parse_args()

    import xgrammar
    from transformers import AutoConfig, AutoTokenizer

    from structured_agents.engines.model_store import ModelStore

    model_dir = Path(args.model) if args.model else ModelStore().resolve(None, "bfloat16")
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    vocab_size = AutoConfig.from_pretrained(model_dir, local_files_only=True).vocab_size
    tokenizer_info = xgrammar.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size)

    result = {
        "vocab_size": vocab_size,
        "compile": bench_compile(tokenizer_info, args.repeat),
        "mask_per_token": bench_mask(tokenizer, tokenizer_info, vocab_size),
    }
    if not args.json_only:
        print(f"vocabulary: {vocab_size} tokens\n")
        print(f"{'plugin':<15}{'mode':<16}{'tools':>6}{'cold ms':>10}{'cached ms':>11}")
        for r in result["compile"]:
            print(
                f"{r['plugin']:<15}{r['mode']:<16}{r['tools']:>6}{r['cold_ms']:>10.2f}{r['cached_ms']:>11.4f}"
            )
        print(
            f"\n{'plugin':<15}{'mode':<16}{'tok':>4}{'fill':>8}{'apply':>8}{'accept':>8}{'total':>8}{'argmax':>8}"
        )
        for r in result["mask_per_token"]:
            print(
                f"{r['plugin']:<15}{r['mode']:<16}{r['tokens']:>4}{r['fill_ms']:>8.3f}{r['apply_ms']:>8.3f}"
                f"{r['accept_ms']:>8.3f}{r['total_ms']:>8.3f}{r['argmax_baseline_ms']:>8.3f}"
            )
        print("(mask columns: ms per token)\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
