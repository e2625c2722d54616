"""Request bodies of ``sa serve`` and their translation to engine requests.

The bodies follow vLLM's OpenAI-compatible server: the OpenAI fields this server honours
(``max_tokens``, ``temperature``, ``top_p``, ``seed``, ``stop``, ``frequency_penalty``, ``n``,
``stream`` with ``stream_options.include_usage``, ``logprobs``; for chat also ``top_logprobs``,
``tools``, ``tool_choice`` and ``parallel_tool_calls``) plus vLLM's ``structured_outputs``
object and ``bad_words`` list. Fields it does not know are ignored with a warning, as vLLM
does. Everything that cannot be served raises :class:`ApiError` (HTTP 400 with a message naming the field).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from structured_agents.errors import ConfigError, GrammarError, StructuredAgentsError
from structured_agents.grammar.artifacts import GrammarArtifact, artifact_from_payload
from structured_agents.kernel.engine import MAX_CANDIDATES, MAX_LOGPROBS, SamplingParams
from structured_agents.nesting import too_deep, walk
from structured_agents.types import Message, Role, ToolCall, ToolSchema

__all__ = [
    "MAX_CHOICES",
    "MAX_STOPS",
    "MAX_STOP_CHARS",
    "MAX_TOOLS",
    "ApiError",
    "ChatBody",
    "CompletionBody",
    "StreamOptions",
    "constraint_field",
    "grammar_from_body",
    "messages_from_openai",
    "tools_from_openai",
]

log = logging.getLogger(__name__)

MIN_SEED = -(2**63)
MAX_SEED = 2**63 - 1 - MAX_CANDIDATES
"""The seeds a request may give: a 64-bit signed integer that stays one with ``n`` samples
(sample ``j`` is seeded ``seed + j``)."""

_SUPPORTED_CONSTRAINTS = ("grammar", "json", "structural_tag")
_FIELDS = {"ebnf": "grammar", "json_schema": "json", "structural_tag": "structural_tag"}
_UNSUPPORTED_CONSTRAINTS = ("regex", "choice", "json_object")
_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
}


class ApiError(StructuredAgentsError):
    """An error answered as OpenAI's ``{"error": {...}}`` body with an HTTP status."""

    def __init__(self, message: str, *, status: int = 400, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.param = param


def _printable(text: str) -> str:
    """``text`` with any lone surrogate escaped (a path through a key that holds one), so that
    the error naming it can be sent."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _bounded_stops(stop: Any) -> None:
    """Refuse more than :data:`MAX_STOPS` stop strings, or one over :data:`MAX_STOP_CHARS`."""
    stops = [stop] if isinstance(stop, str) else stop if isinstance(stop, list) else []
    if len(stops) > MAX_STOPS:
        raise ValueError(f"stop: at most {MAX_STOPS} strings, got {len(stops)}")
    if any(isinstance(item, str) and len(item) > MAX_STOP_CHARS for item in stops):
        raise ValueError(f"stop: each string at most {MAX_STOP_CHARS} characters")


def _encodable(text: str) -> bool:
    """Whether ``text`` is UTF-8 text (JSON's ``"\\ud800"`` escape gives a lone surrogate, which
    the tokenizer refuses with an error)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class StreamOptions(BaseModel):
    """OpenAI's ``stream_options``."""

    include_usage: bool = False


MAX_DEPTH = 64
"""Deepest nesting of objects and lists a request body may hold (a tool's JSON schema is a few
levels deep): the plugins walk a tool's parameters recursively, and a body nested hundreds
deep ended that walk in a RecursionError, a 500."""
MAX_TOOLS = 128
"""The most tools a chat request may give (OpenAI's limit): 29,000 tools held the server for
16 s building their grammar in the request's handler, before the prompt was found too long."""
MAX_CHOICES = 128
"""The most choices a completions request may ask for (prompts times ``n``): 1,000 prompts
with ``n=16`` in a 4 KB body held every other client for a minute."""
MAX_STOPS = 64
MAX_STOP_CHARS = 256
"""The most stop strings a request may give, and the longest: every stop is looked for in
each row's text at each token, on the engine's thread, and 100,000 of them made every token
of the batch 28 times slower (OpenAI allows four)."""


class _Body(BaseModel):
    model_config = ConfigDict(extra="allow")

    @model_validator(mode="before")
    @classmethod
    def _bounded(cls, data: Any) -> Any:
        for where, value, depth in walk(data):
            if depth > MAX_DEPTH:
                raise ValueError(_printable(too_deep(where, MAX_DEPTH)))
            if isinstance(value, str) and not _encodable(value):
                raise ValueError(
                    f"{_printable(where.removeprefix('(body).'))}: a string holds a lone surrogate, "
                    "not UTF-8 text"
                )
        if isinstance(data, dict):
            _bounded_stops(data.get("stop"))
        return data

    model: str | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0)
    top_p: float | None = Field(default=None, gt=0, le=1)
    seed: int | None = Field(default=None, ge=MIN_SEED, le=MAX_SEED)
    stop: str | list[str] | None = None
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    structured_outputs: dict[str, Any] | None = None
    bad_words: list[str] | None = None
    n: int = Field(default=1, ge=1, le=MAX_CANDIDATES)
    stream: bool = False
    stream_options: StreamOptions | None = None

    def check(self) -> None:
        """Warn about ignored fields."""
        if self.model_extra:
            log.warning("ignoring unsupported request fields: %s", sorted(self.model_extra))

    @property
    def include_usage(self) -> bool:
        """Whether a stream ends with a usage chunk."""
        return self.stream_options is not None and self.stream_options.include_usage

    def logprob_count(self) -> int | None:
        """Alternatives to report per token (None: no logprobs)."""
        return None

    def token_budget(self) -> tuple[str, int | None]:
        """The field that sets the most tokens a choice may generate, and its value (``None``:
        the server's default)."""
        return "max_tokens", self.max_tokens

    def sampling(
        self, defaults: SamplingParams, extra_stop: tuple[str, ...] = (), *, max_tokens: int | None = None
    ) -> SamplingParams:
        """The request's sampling settings, ``defaults`` where it sets none; a token budget over
        the server's ``max_tokens`` is a 400 naming its field."""
        field, budget = self.token_budget()
        if budget is not None and max_tokens is not None and budget > max_tokens:
            raise ApiError(f"{field} must be at most {max_tokens} on this server", param=field)
        stop = (self.stop,) if isinstance(self.stop, str) else tuple(self.stop or defaults.stop)
        stop += tuple(s for s in extra_stop if s not in stop)
        try:
            return SamplingParams(
                max_new_tokens=budget or defaults.max_new_tokens,
                temperature=defaults.temperature if self.temperature is None else self.temperature,
                top_p=defaults.top_p if self.top_p is None else self.top_p,
                seed=defaults.seed if self.seed is None else self.seed,
                stop=stop,
                frequency_penalty=(
                    defaults.frequency_penalty if self.frequency_penalty is None else self.frequency_penalty
                ),
                logprobs=self.logprob_count(),
                # vLLM's meaning: each word banned in both spellings, whatever spaces it came with
                bad_words=tuple(word.lstrip() for word in self.bad_words or ()),
            )
        except ConfigError as exc:
            raise ApiError(str(exc)) from exc


class CompletionBody(_Body):
    """``POST /v1/completions``: one prompt or a list of prompts (``n`` choices each)."""

    prompt: str | list[str]
    logprobs: int | None = Field(default=None, ge=0, le=MAX_LOGPROBS)

    def logprob_count(self) -> int | None:
        return self.logprobs


class ChatBody(_Body):
    """``POST /v1/chat/completions``: messages and tools, rendered by the server's plugin."""

    messages: list[dict[str, Any]] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = Field(default=None, max_length=MAX_TOOLS)
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool = True
    max_completion_tokens: int | None = Field(default=None, ge=1)
    logprobs: bool = False
    top_logprobs: int | None = Field(default=None, ge=0, le=MAX_LOGPROBS)

    def token_budget(self) -> tuple[str, int | None]:
        if self.max_completion_tokens is not None:
            return "max_completion_tokens", self.max_completion_tokens
        return "max_tokens", self.max_tokens

    def logprob_count(self) -> int | None:
        if self.top_logprobs is not None and not self.logprobs:
            raise ApiError("top_logprobs needs logprobs=true", param="top_logprobs")
        return (self.top_logprobs or 0) if self.logprobs else None


def grammar_from_body(structured_outputs: dict[str, Any] | None) -> GrammarArtifact | None:
    """The artifact of a vLLM ``structured_outputs`` object (``grammar``, ``json`` or ``structural_tag``)."""
    if structured_outputs is None:
        return None
    unsupported = [k for k in _UNSUPPORTED_CONSTRAINTS if structured_outputs.get(k) is not None]
    if unsupported:
        raise ApiError(
            f"structured_outputs.{unsupported[0]} is not supported by sa serve; "
            f"use one of {', '.join(_SUPPORTED_CONSTRAINTS)}",
            param=f"structured_outputs.{unsupported[0]}",
        )
    options = sorted(k for k, v in structured_outputs.items() if k not in _SUPPORTED_CONSTRAINTS and v)
    if options:
        raise ApiError(
            f"structured_outputs options {options} are not supported by sa serve", param="structured_outputs"
        )
    try:
        return artifact_from_payload(structured_outputs)
    except (GrammarError, ValueError, RecursionError) as exc:  # strings that are not JSON, or nest too deep
        given = [k for k in _SUPPORTED_CONSTRAINTS if structured_outputs.get(k) is not None]
        param = f"structured_outputs.{given[0]}" if len(given) == 1 else "structured_outputs"
        raise ApiError(f"invalid {param}: {exc}", param=param) from exc


def constraint_field(artifact: GrammarArtifact) -> str:
    """The ``structured_outputs`` field a client sets for ``artifact`` (``structured_outputs.json``...)."""
    return f"structured_outputs.{_FIELDS[artifact.kind]}"


def _text(content: Any, where: str) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts: keep the text ones
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    raise ApiError(f"{where}.content must be a string or a list of parts", param=f"{where}.content")


def _tool_call(raw: Any, where: str) -> ToolCall:
    try:
        function = raw["function"]
        arguments = function.get("arguments") or "{}"
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
        if not isinstance(parsed, dict):
            raise TypeError("arguments must be a JSON object")
        if any(depth > MAX_DEPTH for _, _, depth in walk(parsed)):
            raise ValueError(f"arguments nested deeper than {MAX_DEPTH} levels")
        call_id = raw.get("id")
        name = str(function["name"])
        return ToolCall(name, parsed, str(call_id)) if call_id else ToolCall(name, parsed)
    except (KeyError, TypeError, AttributeError, ValueError, RecursionError) as exc:
        # a JSON string of arguments nested 100,000 deep: json.loads' RecursionError
        problem = "arguments nested too deep" if isinstance(exc, RecursionError) else _printable(str(exc))
        raise ApiError(f"{where} is not an OpenAI tool call: {problem}", param=where) from exc


def _optional_text(value: Any, where: str) -> str | None:
    """``value`` where it is a string or absent (a message's ``tool_call_id``, ``name``)."""
    if value is None or isinstance(value, str):
        return value
    raise ApiError(f"{where} must be a string, got {type(value).__name__}", param=where)


def messages_from_openai(messages: list[dict[str, Any]]) -> list[Message]:
    """OpenAI chat messages as :class:`Message` (``developer`` read as ``system``)."""
    out = []
    for i, raw in enumerate(messages):
        where = f"messages[{i}]"
        role = _ROLES.get(str(raw.get("role")))
        if role is None:
            raise ApiError(
                f"{where}.role must be system|developer|user|assistant|tool, got {raw.get('role')!r}",
                param=where,
            )
        raw_calls = raw.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise ApiError(f"{where}.tool_calls must be a list", param=f"{where}.tool_calls")
        calls = tuple(_tool_call(c, f"{where}.tool_calls[{j}]") for j, c in enumerate(raw_calls))
        out.append(
            Message(
                role=role,
                content=_text(raw.get("content"), where),
                tool_calls=calls,
                tool_call_id=_optional_text(raw.get("tool_call_id"), f"{where}.tool_call_id"),
                name=_optional_text(raw.get("name"), f"{where}.name"),
            )
        )
    return out


def tools_from_openai(tools: list[dict[str, Any]] | None) -> list[ToolSchema]:
    """OpenAI ``tools`` entries as :class:`ToolSchema`."""
    out = []
    for i, raw in enumerate(tools or ()):
        function = raw.get("function")
        if (
            raw.get("type", "function") != "function"
            or not isinstance(function, dict)
            or "name" not in function
        ):
            raise ApiError(
                f"tools[{i}] must be {{'type': 'function', 'function': {{'name': ...}}}}", param=f"tools[{i}]"
            )
        parameters = function.get("parameters")
        if parameters is not None and not isinstance(parameters, dict):
            where = f"tools[{i}].function.parameters"
            raise ApiError(
                f"{where} must be a JSON schema object, got {type(parameters).__name__}", param=where
            )
        out.append(ToolSchema.from_openai_format(raw))
    return out
