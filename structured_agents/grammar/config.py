"""Grammar configuration: which constraint a plugin builds and how strict the arguments are."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from structured_agents.errors import ConfigError

__all__ = ["ArgsFormat", "GrammarConfig", "GrammarMode"]

GrammarMode = Literal["ebnf", "structural_tag", "json_schema"]
ArgsFormat = Literal["permissive", "escaped_strings", "json"]


@dataclass(frozen=True, slots=True)
class GrammarConfig:
    """How a plugin constrains the model's output.

    Every field is read by the plugins' grammar builders.
    """

    mode: GrammarMode = "ebnf"
    """``ebnf``: an XGrammar EBNF; ``structural_tag``: XGrammar structural tags (triggered
    tags for FunctionGemma, ``qwen_xml`` for Qwen); ``json_schema``: a JSON document of calls."""
    allow_parallel_calls: bool = True
    """Whether one response may hold several tool calls (one or more) or exactly one."""
    args_format: ArgsFormat = "escaped_strings"
    """How arguments are constrained where the format leaves a choice:
    ``permissive``: any text without the closing delimiter (the seed's ``[^}]*``, kept for
    weak models); ``escaped_strings``: per-tool keys from the schema, strings delimited by the
    plugin's string markers (``<escape>`` for FunctionGemma); ``json``: per-tool keys, strings
    as JSON strings."""

    require_calls: bool = True
    """Whether the response must hold a call (OpenAI's ``tool_choice="required"``); False lets
    the model answer in text and call tools only when it opens a call (``tool_choice="auto"``).
    Only ``structural_tag`` mode builds the optional form (its triggered tags)."""

    def __post_init__(self) -> None:
        if self.mode not in get_args(GrammarMode):
            raise ConfigError(
                f"GrammarConfig.mode must be one of {list(get_args(GrammarMode))}, got {self.mode!r}"
            )
        if self.args_format not in get_args(ArgsFormat):
            raise ConfigError(
                f"GrammarConfig.args_format must be one of {list(get_args(ArgsFormat))}, "
                f"got {self.args_format!r}"
            )
        if not self.require_calls and self.mode != "structural_tag":
            raise ConfigError(
                f"GrammarConfig.require_calls=False needs mode='structural_tag', got mode={self.mode!r}"
            )
        if not isinstance(self.allow_parallel_calls, bool):
            raise ConfigError(
                f"GrammarConfig.allow_parallel_calls must be a bool, got {self.allow_parallel_calls!r}"
            )
