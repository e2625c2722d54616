"""What a scripted model says as a docstring summary, held to the job's own ``submit_result``:
the summary of a function that returns or yields a value must open on ``Return`` or ``Yield``
(the task's grammar, which grammar-checked scripted engines hold their outputs to)."""

from __future__ import annotations

import re
from typing import Any

from structured_agents.engines import GenerationRequest

_OPENING = re.compile(r"\^([A-Za-z][A-Za-z ]*)\[")


def submit_tool(request: GenerationRequest) -> dict[str, Any]:
    """The request's ``submit_result``, as the job shaped it (OpenAI function format)."""
    [submit] = [tool["function"] for tool in request.tools if tool["function"]["name"] == "submit_result"]
    return dict(submit)


def opening_of(request: GenerationRequest) -> str:
    """The words the summary of the request's ``submit_result`` must open with (``""``: any)."""
    pattern = str(submit_tool(request)["parameters"]["properties"]["description"].get("pattern", ""))
    match = _OPENING.match(pattern)
    return match.group(1) if match else ""


def summary(request: GenerationRequest, rest: str, otherwise: str) -> str:
    """A summary for the request's target: the opening its job asks for, or ``otherwise``
    where any opening goes, then ``rest``."""
    return (opening_of(request) or otherwise) + rest
