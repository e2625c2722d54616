"""Package specs (pinned, normalised) and the even spread of ``--limit``."""

from __future__ import annotations

import pytest

from structured_agents.evaluation import DEFAULT_PACKAGES, EvaluationError, PackageSpec, parse_spec
from structured_agents.evaluation.packages import spread


def test_a_pinned_spec_is_parsed_with_its_name_normalised() -> None:
    assert parse_spec("Foo_Bar.baz==1.2.0") == PackageSpec("foo-bar-baz", "1.2.0")
    assert str(parse_spec("humanize == 4.9.0")) == "humanize==4.9.0"


@pytest.mark.parametrize(
    "text",
    ["humanize", "humanize>=4", "humanize==4.*", "humanize[x]==4.9", "humanize==4.9; python_version>'3'"],
)
def test_anything_but_one_exact_pin_is_refused(text: str) -> None:
    with pytest.raises(EvaluationError, match="pin one exact version"):
        parse_spec(text)


def test_a_spec_that_is_not_a_requirement_is_refused_naming_it() -> None:
    with pytest.raises(EvaluationError, match=r"'==1\.0': not a requirement spec"):
        parse_spec("==1.0")


def test_every_default_package_is_pinned() -> None:
    for task, specs in DEFAULT_PACKAGES.items():
        assert 1 <= len(specs) <= 5, task
        for text in specs:
            parse_spec(text)


def test_spread_keeps_evenly_spaced_items_in_order() -> None:
    items = list(range(10))
    assert spread(items, 5) == [0, 2, 4, 6, 8]
    assert spread(items, 3) == [0, 3, 6]
    assert spread(items, 1) == [0]
    assert spread(items, None) == spread(items, 10) == spread(items, 99) == items
