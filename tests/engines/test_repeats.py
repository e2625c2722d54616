"""``no_repeat_ngram_size``: the tokens that would repeat a run are pushed below the rest."""

from __future__ import annotations

import torch

from structured_agents.engines.repeats import REPEAT_PENALTY, ban_repeats, repeated_next


def test_the_tokens_that_would_complete_a_run_already_written_are_found() -> None:
    assert repeated_next([1, 2, 3, 1, 2], 3) == {3}
    assert repeated_next([1, 2, 3, 1, 2, 4, 1, 2], 3) == {3, 4}
    assert repeated_next([5, 6, 7], 3) == set()
    assert repeated_next([1, 2], 3) == set()  # too short to hold a run
    assert repeated_next([4, 4], 1) == {4}
    assert repeated_next([1, 2, 1, 2], 0) == set()  # off


def test_banned_tokens_sink_below_every_other_but_stay_finite() -> None:
    logits = torch.zeros((2, 8))
    logits[0, 3] = 5.0  # the row's favourite would repeat "1 2 3"
    ban_repeats(logits, [[1, 2, 3, 1, 2], [1, 2, 3, 1, 2]], [3, 0])
    assert int(torch.argmax(logits[0])) != 3
    assert logits[0, 3] == 5.0 - REPEAT_PENALTY and torch.isfinite(logits[0, 3])
    assert torch.equal(logits[1], torch.zeros(8))  # the row that asked for nothing is untouched
