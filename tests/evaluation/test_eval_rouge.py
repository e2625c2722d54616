"""ROUGE-L of first lines: LCS over lowercased word tokens, F1 of precision and recall."""

from __future__ import annotations

from itertools import combinations, product

import pytest

from structured_agents.evaluation.rouge import first_line, lcs_length, rouge_l, tokens


def test_identical_lines_score_one_and_disjoint_lines_zero() -> None:
    assert rouge_l("Format a number.", "format a NUMBER") == 1.0
    assert rouge_l("Add two integers.", "Format a number.") == 0.0


def test_the_score_is_the_f1_of_the_longest_common_subsequence() -> None:
    # "the cat on the mat": 5 of 6 candidate words and 5 of 6 reference words
    assert rouge_l("The cat sat on the mat.", "the cat is on the mat") == pytest.approx(5 / 6)
    # only one word in order: precision 1/3, recall 1/2
    assert rouge_l("c b a", "a c") == pytest.approx(2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2))


def test_order_matters_unlike_word_overlap() -> None:
    assert rouge_l("a b c", "c b a") == pytest.approx(1 / 3)


def test_nothing_to_compare_scores_zero() -> None:
    assert rouge_l("", "Format a number.") == 0.0
    assert rouge_l("...", "") == 0.0


def test_tokens_are_lowercased_words_split_at_punctuation_and_underscores() -> None:
    assert tokens("Return `format_number(x)`, 2 times!") == ["return", "format", "number", "x", "2", "times"]


def test_first_line_is_the_first_non_blank_line_of_the_cleaned_docstring() -> None:
    assert first_line("\n    Format a number.\n\n    More text.\n") == "Format a number."
    assert first_line("Summary.  ") == "Summary."
    assert first_line("   \n") == ""


def _brute_force_lcs(a: list[str], b: list[str]) -> int:
    for size in range(min(len(a), len(b)), 0, -1):
        subsequences = set(combinations(b, size))
        if any(sub in subsequences for sub in combinations(a, size)):
            return size
    return 0


SEQUENCES = [list(letters) for size in range(6) for letters in product("ab", repeat=size)]


def test_lcs_length_agrees_with_brute_force_on_every_short_pair() -> None:
    for a in SEQUENCES:
        for b in SEQUENCES:
            assert lcs_length(a, b) == lcs_length(b, a) == _brute_force_lcs(a, b), (a, b)
    assert lcs_length(list("xaybzc"), list("abc")) == 3
