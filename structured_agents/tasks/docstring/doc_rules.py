"""Ruff's docstring rules (pydoclint's ``DOC`` family, in ruff's preview) on a written docstring:
the section claims the code contradicts, checked by the field's own implementation.

Run on the new module text, ignoring the codebase's ruff configuration (the rules are chosen
here), with one-line docstrings exempt (pydoclint's ``skip-checking-short-docstrings``: a
summary alone claims no sections). The findings at the target's docstring are returned:

``DOC201``/``DOC402``  a docstring with sections that leaves out what the function returns/yields
``DOC202``/``DOC403``  a ``Returns``/``Yields`` section on a function that returns/yields nothing
``DOC502``             an exception documented that the function never raises
"""

from __future__ import annotations

from pathlib import Path

from structured_agents.tasks.docstring.verify import Finding
from structured_agents.tasks.ruff import ruff_diagnostics

__all__ = ["RULES", "doc_rule_findings"]

RULES = ("DOC201", "DOC202", "DOC402", "DOC403", "DOC502")
_OPTIONS = (
    "--isolated",
    "--preview",
    "--select",
    ",".join(RULES),
    "--config",
    "lint.pydoclint.ignore-one-line-docstrings = true",
)


def doc_rule_findings(root: Path, path: str, text: str, lines: range) -> list[Finding]:
    """Ruff's :data:`RULES` findings on ``text`` (read as ``root/path``) on ``lines`` (1-based:
    the target's docstring)."""
    found = []
    for item in ruff_diagnostics(root, path, text, *_OPTIONS):
        row = int((item.get("location") or {}).get("row") or 0)
        if row in lines:
            found.append(Finding(str(item.get("code")), str(item.get("message") or "").rstrip(".")))
    return found
