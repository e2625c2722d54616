"""Failure reasons: the head of a run's error, with quoted text and numbers masked."""

from __future__ import annotations

from structured_agents.evaluation.failures import COPY_REFUSED, count_reasons, failure_reason, is_copy_refusal


def test_alike_failures_of_different_targets_share_a_reason() -> None:
    one = failure_reason("the agent did not submit a result (the run ended by max_turns; last tool error: x)")
    other = failure_reason("the agent did not submit a result (the run ended by end_turn)")
    assert one == other == "the agent did not submit a result"
    assert failure_reason("'a.py' changed since the job was discovered; run again") == (
        "… changed since the job was discovered"
    )
    assert failure_reason("EngineError: batch of 8 failed: CUDA out of memory") == "EngineError"


def test_long_reasons_are_cut() -> None:
    reason = failure_reason("word " * 40)
    assert len(reason) == 70 and reason.endswith("…")


def test_copy_refusals_are_told_apart_and_reasons_counted_most_common_first() -> None:
    assert is_copy_refusal("submit_result refused: 'x' is copied word for word from the examples")
    assert not is_copy_refusal("the submitted docstring is empty")
    assert count_reasons(["b", None, COPY_REFUSED, "b"]) == {"b": 2, COPY_REFUSED: 1}
    assert list(count_reasons(["b", None, COPY_REFUSED, "b"])) == ["b", COPY_REFUSED]
