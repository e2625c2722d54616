"""Why a job failed, in a few words that group alike failures together.

A run's error names its target ("'x.py' changed since..."), counts and quoted text; masking
quoted parts and numbers and keeping the head of the message (up to the first ``(``, ``;`` or
``:``) leaves the reason: ``the agent did not submit a result``, ``EngineError``. A job whose
last submission was refused as a copy of the bundle's worked examples or tool descriptions is
counted apart, as ``copy refused``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

__all__ = ["COPY_REFUSED", "count_reasons", "failure_reason", "is_copy_refusal"]

COPY_REFUSED = "copy refused"
"""The reason of a job whose last submission was refused as a copy."""

_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_NUMBER = re.compile(r"\d+(\.\d+)?")
_HEAD = re.compile(r"[(;:]")
_LENGTH = 70


def is_copy_refusal(output: str) -> bool:
    """Whether a refused call's output says it copied the bundle's fixed text."""
    return "copied" in output.lower()


def failure_reason(error: str) -> str:
    """The reason of a failure with the message ``error``."""
    masked = _NUMBER.sub("N", _QUOTED.sub("…", error))
    head = _HEAD.split(masked, maxsplit=1)[0].strip() or masked.strip()
    return head if len(head) <= _LENGTH else head[: _LENGTH - 1] + "…"


def count_reasons(reasons: Iterable[str | None]) -> dict[str, int]:
    """How often each reason occurs (None: not a failure), most common first."""
    return dict(Counter(reason for reason in reasons if reason is not None).most_common())
