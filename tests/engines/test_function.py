"""FunctionEngine: a real engine over a Python function."""

from __future__ import annotations

import pytest

from structured_agents.engines.function import BatchInfo, FunctionEngine
from structured_agents.errors import EngineError
from structured_agents.kernel.engine import Completion, Engine, GenerationRequest
from structured_agents.types import TokenUsage


def test_each_request_gets_the_function_result_in_order() -> None:
    seen: list[BatchInfo] = []

    def upper(request: GenerationRequest, info: BatchInfo) -> str:
        seen.append(info)
        return request.prompt.upper()

    engine = FunctionEngine(upper)
    assert isinstance(engine, Engine)
    completions = engine.generate(
        [GenerationRequest(prompt="a", request_id="r0"), GenerationRequest(prompt="b")]
    )
    assert (completions[0].request_id, completions[0].batch_size) == ("r0", 2)
    assert [c.text for c in completions] == ["A", "B"]
    assert seen == [BatchInfo(0, 2, 0), BatchInfo(1, 2, 0)]
    engine.generate([GenerationRequest(prompt="c")])
    assert engine.batch_sizes == [2, 1]
    assert engine.batches[1][0].prompt == "c"


def test_a_returned_completion_keeps_its_fields_but_gets_the_request_id() -> None:
    def full(request: GenerationRequest, info: BatchInfo) -> Completion:
        return Completion(request_id="ignored", text="t", usage=TokenUsage(5, 1), finish_reason="length")

    (completion,) = FunctionEngine(full).generate([GenerationRequest(prompt="p", request_id="mine")])
    assert (completion.request_id, completion.usage, completion.finish_reason) == (
        "mine",
        TokenUsage(5, 1),
        "length",
    )


def test_failures_name_the_function_and_the_request() -> None:
    def picky(request: GenerationRequest, info: BatchInfo) -> str:
        if info.index == 1:
            raise ValueError("no thanks")
        return "ok"

    with pytest.raises(EngineError, match=r"'picky' failed on request 1 .*ValueError: no thanks"):
        FunctionEngine(picky).generate([GenerationRequest(prompt="a"), GenerationRequest(prompt="b")])


def test_wrong_return_type_is_an_engine_error() -> None:
    engine = FunctionEngine(lambda request, info: 42, name="answer")  # type: ignore[arg-type,return-value]
    with pytest.raises(EngineError, match="'answer' returned int for request 0"):
        engine.generate([GenerationRequest(prompt="a")])
