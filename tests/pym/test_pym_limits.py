"""Limits presets, overrides, validation and the per-tool policy."""

from __future__ import annotations

import pytest

from structured_agents.errors import ConfigError
from structured_agents.pym import PRESETS, LimitsPolicy, PymLimits


def test_presets_are_ordered_strict_to_permissive() -> None:
    strict, default, permissive = PRESETS["strict"], PRESETS["default"], PRESETS["permissive"]
    assert default == PymLimits()
    for field in ("memory_mb", "duration_s", "timeout_s", "recursion_depth", "external_calls", "output_kb"):
        assert getattr(strict, field) < getattr(default, field) < getattr(permissive, field), field


def test_monty_limits_mapping() -> None:
    assert PymLimits.preset("strict").monty_limits() == {
        "max_memory": 16 * 1024 * 1024,
        "max_feed_duration_secs": 1.0,
        "max_recursion_depth": 100,
        "max_suspensions": 40,
    }


def test_overrides_and_whole_numbers() -> None:
    limits = PymLimits().with_overrides({"duration_s": 20, "recursion_depth": 300.0})
    assert (limits.duration_s, limits.recursion_depth) == (20, 300)
    assert isinstance(limits.recursion_depth, int)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"memory": 1}, "unknown limit(s) ['memory']"),
        ({"memory_mb": 0}, "PymLimits.memory_mb must be a number > 0, got 0"),
        ({"timeout_s": "5"}, "PymLimits.timeout_s must be a number > 0, got '5'"),
        ({"recursion_depth": 10.5}, "PymLimits.recursion_depth must be a whole number, got 10.5"),
        ({"duration_s": 60}, "PymLimits.duration_s (60) must not exceed timeout_s (30.0)"),
    ],
)
def test_invalid_limits_name_field_and_value(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        PymLimits().with_overrides(overrides)
    assert message in str(info.value)


def test_unknown_preset() -> None:
    with pytest.raises(ConfigError, match="unknown limits preset 'lax'; choose one of strict, default"):
        PymLimits.preset("lax")


def test_policy_per_tool() -> None:
    policy = LimitsPolicy.build("strict", {"slow": {"duration_s": 4}, "big": "permissive", "plain": None})
    assert policy.for_tool("other") == PRESETS["strict"]
    assert policy.for_tool("slow") == PymLimits(16, 4.0, 5.0, 100, 20, 64)
    assert policy.for_tool("big") == PRESETS["permissive"]
    assert policy.for_tool("plain") == PRESETS["strict"]
    with pytest.raises(ConfigError, match="limits of tool 'bad': unknown limit"):
        LimitsPolicy.build(None, {"bad": {"cpu": 1}})
