"""The slot loop against the eager loop on one CUDA device: mixed requests, one batch each way.

Run (on a GPU machine; ``--model`` a model directory, as ``random_entry.py --gguf`` writes)::

    python3 benchmarks/compare_loops.py --model DIR [--json OUT]

On CUDA the transformers engine decodes Gemma 3 through its slot loop (a slot cache, captured
prefills and steps); ``enforce_eager`` keeps the loop the CPU runs. Both should decode every
request the same way up to the kernels' rounding. Thirteen requests, in one batch and again in
reverse order: four under FunctionGemma's JSON call schema, four with a review (the docstring
agent's reranking: each scored on the code after it, and against the empty docstring), and one
each with ``n=2`` seeded candidates, bad words, a frequency penalty, log probabilities and
seeded sampling. Printed per request: whether the texts are the same, each loop's finish reason
and review scores, and whether the reversed batch decoded it the same. The exit status is 1
when any request failed on either loop.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from bench_engine import grammar_of, prompt

from structured_agents.engines.transformers_engine import TransformersEngine
from structured_agents.kernel.engine import Completion, GenerationRequest, Review, SamplingParams

DEFINITIONS = [
    "def add(a, b):\n    return a + b",
    "def is_empty(items):\n    return len(items) == 0",
    "def greet(name):\n    print('Hello, ' + name)",
    "def mean(xs):\n    return sum(xs) / len(xs)",
]


def docstring_prompt(definition: str) -> str:
    return (
        "<start_of_turn>user\nWrite a one-line docstring for this function:\n"
        f"{definition}<end_of_turn>\n<start_of_turn>model\n"
    )


def requests() -> list[tuple[str, GenerationRequest]]:
    schema = grammar_of("function_gemma", "json_schema")
    asked = [
        (
            f"grammar {k}",
            GenerationRequest(prompt(k), grammar=schema, sampling=SamplingParams(max_new_tokens=64)),
        )
        for k in range(4)
    ]
    for k, definition in enumerate(DEFINITIONS):
        review = Review(text=definition.split("\n", 1)[1], empty='""')
        sampling = SamplingParams(max_new_tokens=24, stop=("\n",))
        asked.append(
            (f"review {k}", GenerationRequest(docstring_prompt(definition), sampling=sampling, review=review))
        )
    first, second, third, fourth = (docstring_prompt(d) for d in DEFINITIONS)
    asked += [
        (
            "n=2",
            GenerationRequest(
                first, sampling=SamplingParams(max_new_tokens=20, temperature=0.7, seed=1, n=2)
            ),
        ),
        (
            "bad words",
            GenerationRequest(second, sampling=SamplingParams(max_new_tokens=20, bad_words=("Check",))),
        ),
        (
            "penalty",
            GenerationRequest(third, sampling=SamplingParams(max_new_tokens=30, frequency_penalty=0.8)),
        ),
        ("logprobs", GenerationRequest(fourth, sampling=SamplingParams(max_new_tokens=12, logprobs=3))),
        (
            "sampled",
            GenerationRequest(
                fourth, sampling=SamplingParams(max_new_tokens=16, temperature=0.9, top_p=0.9, seed=7)
            ),
        ),
    ]
    return asked


def outcome(completion: Completion) -> dict[str, Any]:
    return {
        "text": completion.text,
        "finish": completion.finish_reason,
        "review": completion.review,
        "baseline": completion.review_baseline,
        "candidates": [c.text for c in completion.candidates],
        "logprobs": [round(t.logprob, 3) for t in completion.logprobs],
    }


def decode(model: str, device: str, eager: bool, batch: list[GenerationRequest]) -> dict[str, Any]:
    """Each request's outcome from a fresh engine, in the batch's order and reversed."""
    with TransformersEngine(model, device=device, max_batch_size=16, enforce_eager=eager) as engine:
        runs: dict[str, Any] = {"loop": engine.loop}
        for name, order in (("forward", batch), ("reversed", batch[::-1])):
            started = time.perf_counter()
            done = engine.generate(order)
            runs[f"{name}_s"] = time.perf_counter() - started
            runs[name] = [outcome(c) for c in done]
        runs["reversed"] = runs["reversed"][::-1]
        return runs


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    asked = requests()
    batch = [request for _, request in asked]
    slot, eager = (decode(args.model, args.device, flag, batch) for flag in (False, True))
    failed = 0
    print(f"loops: {slot['loop']} ({slot['forward_s']:.2f} s), {eager['loop']} ({eager['forward_s']:.2f} s)")
    for k, (name, _) in enumerate(asked):
        s, e = slot["forward"][k], eager["forward"][k]
        ends = (s, e, slot["reversed"][k], eager["reversed"][k])
        failed += any(run_["finish"] == "error" for run_ in ends)
        print(
            f"{name:10} same={s['text'] == e['text']} finish {s['finish']}/{e['finish']} review "
            f"{s['review']}/{e['review']} baseline {s['baseline']}/{e['baseline']} "
            f"reversed same={slot['reversed'][k]['text'] == s['text']}"
        )
    if args.json is not None:
        args.json.write_text(json.dumps({"slot": slot, "eager": eager}, indent=2), encoding="utf-8")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
