"""Resource limits of one ``.pym`` run: named presets, per-tool overrides.

===================  ========  =========  ============  ==================================
field                strict    default    permissive    enforced by
===================  ========  =========  ============  ==================================
``memory_mb``        16        64         256           Monty ``max_memory`` (sandbox heap)
``duration_s``       1         5          30            Monty ``max_feed_duration_secs``
                                                        (sandbox execution time only)
``timeout_s``        5         30         120           the runner: wall clock, externals
                                                        included
``recursion_depth``  100       200        1000          Monty ``max_recursion_depth``
``external_calls``   20        200        1000          Monty ``max_suspensions`` (2 each)
``output_kb``        64        1024       8192          the runner: size of the JSON result
===================  ========  =========  ============  ==================================

A bundle names a preset per tool, or overrides single fields of the base limits
(``{"duration_s": 20}``); :class:`LimitsPolicy` holds both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic_monty import ResourceLimits

from structured_agents.errors import ConfigError

__all__ = ["PRESETS", "LimitsPolicy", "LimitsSpec", "PymLimits"]


@dataclass(frozen=True, slots=True)
class PymLimits:
    """Limits of one run; every value must be > 0."""

    memory_mb: float = 64
    """Sandbox heap limit in MiB."""
    duration_s: float = 5.0
    """Sandbox execution time in seconds (time spent in host externals does not count)."""
    timeout_s: float = 30.0
    """Wall-clock limit of the whole run in seconds, externals included."""
    recursion_depth: int = 200
    """Maximum call-stack depth inside the sandbox."""
    external_calls: int = 200
    """Maximum host-function calls per run."""
    output_kb: int = 1024
    """Maximum size of the JSON-encoded result in KiB."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ConfigError(f"PymLimits.{f.name} must be a number > 0, got {value!r}")
            if f.type == "int" and value != int(value):
                raise ConfigError(f"PymLimits.{f.name} must be a whole number, got {value!r}")
            if f.type == "int":
                object.__setattr__(self, f.name, int(value))
        if self.duration_s > self.timeout_s:
            raise ConfigError(
                f"PymLimits.duration_s ({self.duration_s}) must not exceed timeout_s ({self.timeout_s})"
            )

    @classmethod
    def preset(cls, name: str) -> PymLimits:
        """A named preset: ``strict``, ``default`` or ``permissive``."""
        try:
            return PRESETS[name]
        except KeyError:
            raise ConfigError(f"unknown limits preset {name!r}; choose one of {', '.join(PRESETS)}") from None

    def with_overrides(self, overrides: Mapping[str, Any]) -> PymLimits:
        """These limits with some fields replaced; ConfigError naming an unknown field."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ConfigError(f"unknown limit(s) {unknown}; known: {', '.join(sorted(known))}")
        return dataclasses.replace(self, **overrides)

    def monty_limits(self) -> ResourceLimits:
        """The ``limits=`` mapping of a Monty checkout."""
        return {
            "max_memory": int(self.memory_mb * 1024 * 1024),
            "max_feed_duration_secs": float(self.duration_s),
            "max_recursion_depth": self.recursion_depth,
            "max_suspensions": 2 * self.external_calls,
        }


PRESETS: dict[str, PymLimits] = {
    "strict": PymLimits(16, 1.0, 5.0, 100, 20, 64),
    "default": PymLimits(),
    "permissive": PymLimits(256, 30.0, 120.0, 1000, 1000, 8192),
}

LimitsSpec = PymLimits | str | Mapping[str, Any] | None
"""A preset name, a mapping of overrides of the base limits, ready limits, or None (the base)."""


@dataclass(frozen=True)
class LimitsPolicy:
    """Base limits plus per-tool specs; ``for_tool(name)`` gives a tool's limits."""

    base: PymLimits = field(default_factory=PymLimits)
    per_tool: Mapping[str, PymLimits] = field(default_factory=dict)

    @classmethod
    def build(cls, base: LimitsSpec = None, per_tool: Mapping[str, LimitsSpec] | None = None) -> LimitsPolicy:
        """A policy from specs, validated now (ConfigError names the tool and the problem)."""
        base_limits = _resolve(base, PymLimits())
        resolved: dict[str, PymLimits] = {}
        for tool, spec in (per_tool or {}).items():
            try:
                resolved[tool] = _resolve(spec, base_limits)
            except ConfigError as exc:
                raise ConfigError(f"limits of tool {tool!r}: {exc}") from None
        return cls(base_limits, resolved)

    def for_tool(self, name: str) -> PymLimits:
        """The limits of tool ``name``."""
        return self.per_tool.get(name, self.base)


def _resolve(spec: LimitsSpec, base: PymLimits) -> PymLimits:
    if spec is None:
        return base
    if isinstance(spec, PymLimits):
        return spec
    if isinstance(spec, str):
        return PymLimits.preset(spec)
    return base.with_overrides(spec)
