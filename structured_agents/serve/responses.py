"""The JSON ``sa serve`` answers with: OpenAI's (and vLLM's) response and stream chunk shapes.

Completions: ``choices[i].text`` with ``logprobs`` as ``{"tokens", "token_logprobs",
"top_logprobs", "text_offset"}``; chat: ``choices[i].message`` (or ``delta`` in a stream) with
``logprobs`` as ``{"content": [{"token", "logprob", "bytes", "top_logprobs"}]}``. Choices are
numbered prompt by prompt, ``n`` per prompt (``index = prompt * n + sample``), as vLLM numbers
them. A stream is Server-Sent Events: one ``data: {chunk}`` per event, ``data: [DONE]`` last.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence

from structured_agents.kernel.engine import Completion, TokenLogprob
from structured_agents.types import JsonDict

__all__ = [
    "DONE",
    "chat_logprobs",
    "completion_logprobs",
    "envelope",
    "finish_reason",
    "sse",
    "usage",
]

DONE = "data: [DONE]\n\n"


def sse(data: JsonDict) -> str:
    """One Server-Sent Event carrying ``data``."""
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


def envelope(kind: str, model: str) -> JsonDict:
    """The fields every response or chunk of one request shares (``kind``: ``text_completion``,
    ``chat.completion`` or ``chat.completion.chunk``)."""
    prefix = "cmpl" if kind == "text_completion" else "chatcmpl"
    return {"id": f"{prefix}-{uuid.uuid4().hex}", "object": kind, "created": int(time.time()), "model": model}


def usage(completions: Sequence[Completion]) -> JsonDict:
    """Token counts over ``completions`` (a prompt counted once per choice, as vLLM counts it)."""
    prompt = sum(c.usage.prompt_tokens for c in completions)
    generated = sum(c.usage.completion_tokens for c in completions)
    return {"prompt_tokens": prompt, "completion_tokens": generated, "total_tokens": prompt + generated}


def finish_reason(completion: Completion) -> str:
    """OpenAI's finish reason for an engine's (a grammar that completed is a ``stop``)."""
    return "length" if completion.finish_reason == "length" else "stop"


def completion_logprobs(scored: Sequence[TokenLogprob], offset: int = 0) -> JsonDict:
    """``/v1/completions`` logprobs of ``scored`` tokens whose text starts at ``offset``."""
    offsets = []
    for token in scored:
        offsets.append(offset)
        offset += len(token.token)
    return {
        "tokens": [t.token for t in scored],
        "token_logprobs": [t.logprob for t in scored],
        "top_logprobs": [{t.token: t.logprob, **dict(t.top)} for t in scored],
        "text_offset": offsets,
    }


def _entry(token: str, logprob: float) -> JsonDict:
    return {"token": token, "logprob": logprob, "bytes": list(token.encode("utf-8"))}


def chat_logprobs(scored: Sequence[TokenLogprob]) -> JsonDict:
    """``/v1/chat/completions`` logprobs of ``scored`` tokens."""
    return {
        "content": [
            {**_entry(t.token, t.logprob), "top_logprobs": [_entry(text, lp) for text, lp in t.top]}
            for t in scored
        ]
    }
