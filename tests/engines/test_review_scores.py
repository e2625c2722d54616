"""Reviewer scores and repeat bans of the transformers engine, on the real model.

Each assertion holds for whatever text the grammar lets the model write: a candidate's review
score is the summed log probability of the review text after the prompt and that candidate,
which an independent forward pass over the whole text recomputes (within what bfloat16 and
another batch shape change); the baseline is the same after the empty output.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
import torch

from structured_agents.grammar.artifacts import EBNFGrammar
from structured_agents.kernel.engine import GenerationRequest, Review, SamplingParams

if TYPE_CHECKING:
    from structured_agents.engines.transformers_engine import TransformersEngine

pytestmark = pytest.mark.model


SUMMARY = EBNFGrammar('root ::= [^\\n"\\\\ \\t.] [^\\n"\\\\.]* "."? "\\"\\"\\""')
"""One sentence, then the docstring's close."""


def _direct(engine: TransformersEngine, prompt: str, output: str | list[int], text: str) -> float:
    """log P(text | prompt + output) from one forward pass over the whole sequence (``output``
    as a text, or as the very tokens the engine generated)."""
    tokenizer = engine.tokenizer
    generated = (
        output if isinstance(output, list) else tokenizer(output, add_special_tokens=False)["input_ids"]
    )
    head = tokenizer(prompt)["input_ids"] + generated
    tail = tokenizer(text, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([head + tail])
    with torch.inference_mode():
        logprobs = engine.model(input_ids=ids.to(engine.device)).logits[0].float().log_softmax(-1)
    return sum(float(logprobs[len(head) + j - 1, token]) for j, token in enumerate(tail))


def _close(measured: float | None, direct: float) -> None:
    assert measured is not None
    assert measured == pytest.approx(direct, abs=0.3 + 0.03 * abs(direct))


def test_review_scores_are_the_likelihood_of_the_text_after_each_candidate(
    decoding: TransformersEngine,
) -> None:
    engine = decoding
    area = Review("\n    return self.width * self.height\n", empty='"""')
    add = Review("\n    return a + b\n", empty='"""')
    requests = [
        GenerationRequest(
            'class Rectangle:\n    def area(self) -> float:\n        """',
            grammar=SUMMARY,
            sampling=SamplingParams(max_new_tokens=24, logprobs=0),
            review=area,
        ),
        GenerationRequest(
            'def add(a, b):\n    """',
            grammar=SUMMARY,
            sampling=SamplingParams(max_new_tokens=24, n=3, temperature=0.8, seed=1),
            review=add,
        ),
        GenerationRequest(
            'def plain():\n    """', grammar=SUMMARY, sampling=SamplingParams(max_new_tokens=8)
        ),
    ]
    shared = GenerationRequest(  # the prompt of a reviewed request, prefilled once with it
        'def add(a, b):\n    """', grammar=SUMMARY, sampling=SamplingParams(max_new_tokens=8)
    )
    requests.insert(1, shared)  # first with that prompt: the reviewed one still gets a baseline
    single, beside, several, unreviewed = engine.generate(requests)
    for request, completion in ((requests[0], single), (requests[2], several)):
        assert request.review is not None
        _close(completion.review_baseline, _direct(engine, request.prompt, '"""', request.review.text))
        assert completion.review_margin is not None
    generated = [scored.token_id for scored in single.logprobs]
    _close(single.review, _direct(engine, requests[0].prompt, generated, area.text))
    assert len(several.candidates) == 3
    for candidate in several.candidates:
        if candidate.finish_reason == "grammar":  # a finished candidate is scored
            assert candidate.review is not None and candidate.review < 0
        else:  # cut off by the token limit: there is no whole output to score
            assert candidate.review is None
    for completion in (unreviewed, beside):
        assert completion.review is None and completion.review_baseline is None
    assert engine.stats.review_s > 0


def test_no_run_of_tokens_repeats_when_repeats_are_banned(decoding: TransformersEngine) -> None:
    engine = decoding
    sampling = SamplingParams(max_new_tokens=40, no_repeat_ngram_size=3, logprobs=0)
    (completion,) = engine.generate([GenerationRequest("1 1 1 1 1 1 1 1 1 1 1 1", sampling=sampling)])
    tokens = [scored.token_id for scored in completion.logprobs]
    runs = [tuple(tokens[i : i + 3]) for i in range(len(tokens) - 2)]
    assert len(runs) == len(set(runs)), completion.text
